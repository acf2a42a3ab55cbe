//! Tables and column families: the admin surface, named as `cbt` names it.
//!
//! Every change writes the manifest before it is published, under the
//! commit lock, so it is ordered with writes: a row mutation committed
//! before `delete_family` is deleted with the family; one committed after
//! fails with `NotFound`. A deleted family's id is never reused, so
//! re-creating it starts empty.

use super::{Core, Db, Table};
use crate::manifest::{ManifestState, SstMeta};
use crate::model::row_set::KeySpan;
use crate::model::schema::{validate_family_name, validate_table_name};
use crate::model::{Aggregate, FamilyMeta, FamilySchema, GcRule, RangeDrop, TableMeta, TableSchema};
use crate::{Error, Result};

impl Db {
    /// Creates table `name` with `families` and returns a handle to it.
    ///
    /// `name` is a table id (`[_a-zA-Z0-9][-_.a-zA-Z0-9]*`, at most 50
    /// bytes): a table of the database's own instance. Or it is Bigtable's
    /// full name of a table of another instance,
    /// `projects/{project}/instances/{instance}/tables/{table}`: one
    /// database holds the tables of any number of instances, each apart
    /// from the others' (this is how `cellar serve` keeps them). Every call
    /// that takes a table names it the same way.
    ///
    /// # Errors
    /// `Error::AlreadyExists` if the table exists; `Error::InvalidArgument`
    /// for a bad table or family name, a repeated family or a bad GC rule.
    pub fn create_table<F: Into<String>>(
        &self,
        name: &str,
        families: impl IntoIterator<Item = (F, GcRule)>,
    ) -> Result<Table> {
        let families =
            families.into_iter().map(|(f, gc_rule)| FamilySchema { name: f.into(), gc_rule, aggregate: None });
        self.create_table_with_families(name, families)
    }

    /// Creates table `name` with `families`, plain and aggregate ones alike,
    /// in one step: the table exists with all of them or not at all.
    ///
    /// # Errors
    /// As [`Db::create_table`]'s.
    pub fn create_table_with_families(
        &self,
        name: &str,
        families: impl IntoIterator<Item = FamilySchema>,
    ) -> Result<Table> {
        validate_table_name(name)?;
        let families: Vec<FamilySchema> = families.into_iter().collect();
        for (i, f) in families.iter().enumerate() {
            validate_family_name(&f.name)?;
            f.gc_rule.validate()?;
            if families[..i].iter().any(|g| g.name == f.name) {
                return Err(Error::InvalidArgument(format!("column family {:?} is listed twice", f.name)));
            }
        }
        self.core().update_schema(|m| {
            if m.tables.iter().any(|t| t.name == name) {
                return Err(Error::AlreadyExists { kind: "table", name: name.to_owned() });
            }
            let id = m.next_table;
            m.next_table += 1;
            m.tables.push(TableMeta { id, name: name.to_owned(), families: Vec::new() });
            for f in &families {
                add_family(m, id, &f.name, f.gc_rule.clone(), f.aggregate)?;
            }
            Ok(())
        })?;
        self.table(name)
    }

    /// Adds family `family` to `table`.
    ///
    /// # Errors
    /// `Error::NotFound` for an unknown table, `Error::AlreadyExists` if the
    /// family exists, `Error::InvalidArgument` for a bad name or rule.
    pub fn create_family(&self, table: &str, family: &str, gc_rule: GcRule) -> Result<()> {
        self.create_family_of(table, family, gc_rule, None)
    }

    /// Adds aggregate family `family` to `table`: its cells merge what is
    /// written to them with `aggregate` (see [`Mutation::add_to_cell`]).
    /// A family's aggregate is fixed for its life, as in Bigtable.
    ///
    /// [`Mutation::add_to_cell`]: crate::Mutation::add_to_cell
    ///
    /// # Errors
    /// As [`Db::create_family`].
    pub fn create_aggregate_family(
        &self,
        table: &str,
        family: &str,
        aggregate: Aggregate,
        gc_rule: GcRule,
    ) -> Result<()> {
        self.create_family_of(table, family, gc_rule, Some(aggregate))
    }

    fn create_family_of(&self, table: &str, family: &str, gc_rule: GcRule, aggregate: Option<Aggregate>) -> Result<()> {
        validate_family_name(family)?;
        gc_rule.validate()?;
        self.core().update_schema(|m| {
            let id = table_mut(m, table)?.id;
            add_family(m, id, family, gc_rule, aggregate)
        })
    }

    /// Replaces the GC rule of `table:family`; reads apply it at once.
    ///
    /// # Errors
    /// `Error::NotFound` for an unknown table or family, `Error::InvalidArgument`
    /// for a bad rule.
    pub fn set_gc_rule(&self, table: &str, family: &str, gc_rule: GcRule) -> Result<()> {
        gc_rule.validate()?;
        self.core().update_schema(|m| {
            let t = table_mut(m, table)?;
            let f = t.families.iter_mut().find(|f| f.name == family);
            f.ok_or_else(|| Error::family_not_found(table, family))?.gc_rule = gc_rule;
            Ok(())
        })
    }

    /// Deletes `table:family` and all its cells.
    ///
    /// # Errors
    /// `Error::NotFound` for an unknown table or family.
    pub fn delete_family(&self, table: &str, family: &str) -> Result<()> {
        self.core().update_schema(|m| {
            let t = table_mut(m, table)?;
            let i = t.families.iter().position(|f| f.name == family);
            let store = t.families.remove(i.ok_or_else(|| Error::family_not_found(table, family))?).store;
            m.ssts.retain(|s| s.store != store);
            Ok(())
        })
    }

    /// Deletes `table` and all its cells.
    ///
    /// # Errors
    /// `Error::NotFound` for an unknown table.
    pub fn delete_table(&self, table: &str) -> Result<()> {
        self.core().update_schema(|m| {
            let i = m.tables.iter().position(|t| t.name == table).ok_or_else(|| Error::table_not_found(table))?;
            let t = m.tables.remove(i);
            m.ssts.retain(|s| !t.families.iter().any(|f| f.store == s.store));
            Ok(())
        })
    }

    /// Names of the tables of every instance, as they were created, sorted:
    /// the database's own by id, others' by their full names.
    ///
    /// # Errors
    /// `Error::Closed` after [`Db::close`].
    pub fn list_tables(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self.core().view()?.schema.tables.iter().map(|t| t.name.clone()).collect();
        names.sort();
        Ok(names)
    }

    /// The schema of `table`.
    ///
    /// # Errors
    /// `Error::NotFound` for an unknown table.
    pub fn table_schema(&self, table: &str) -> Result<TableSchema> {
        let sv = self.core().view()?;
        let t = sv.schema.table(table).ok_or_else(|| Error::table_not_found(table))?;
        Ok(t.schema())
    }

    /// A handle to `table`.
    ///
    /// # Errors
    /// `Error::NotFound` for an unknown table.
    pub fn table(&self, name: &str) -> Result<Table> {
        let sv = self.core().view()?;
        let t = sv.schema.table(name).ok_or_else(|| Error::table_not_found(name))?;
        Ok(Table::new(self.clone(), t.id, name))
    }
}

fn table_mut<'a>(m: &'a mut ManifestState, name: &str) -> Result<&'a mut TableMeta> {
    m.tables.iter_mut().find(|t| t.name == name).ok_or_else(|| Error::table_not_found(name))
}

/// Adds a family with a fresh store id, keeping families in name order.
fn add_family(
    m: &mut ManifestState,
    table: u32,
    family: &str,
    gc_rule: GcRule,
    aggregate: Option<Aggregate>,
) -> Result<()> {
    let store = m.next_store;
    let t = m.tables.iter_mut().find(|t| t.id == table).ok_or_else(|| Error::table_not_found(family))?;
    if t.families.iter().any(|f| f.name == family) {
        return Err(Error::AlreadyExists { kind: "column family", name: format!("{}:{family}", t.name) });
    }
    t.families.push(FamilyMeta { name: family.to_owned(), store, gc_rule, aggregate });
    t.families.sort_by(|a, b| a.name.cmp(&b.name));
    m.next_store += 1;
    Ok(())
}

impl Core {
    /// Applies `change` to a copy of the durable state, writes it as the
    /// manifest, then publishes it. Files no longer listed become obsolete
    /// (deleted once no read holds them).
    fn update_schema<T>(&self, change: impl FnOnce(&mut ManifestState) -> Result<T>) -> Result<T> {
        self.check_writable()?;
        let mut cs = self.commit.lock();
        let mut st = self.state.lock();
        let mut next = st.manifest.clone();
        let out = change(&mut next)?;
        self.sync_log_before_manifest(&mut cs, &st)?;
        self.write_manifest(&mut st, &next)?;
        st.manifest = next;
        let live: std::collections::HashSet<u64> = st.manifest.ssts.iter().map(|s| s.file).collect();
        st.handles.retain(|file, h| {
            let keep = live.contains(file);
            if !keep {
                h.mark_obsolete();
            }
            keep
        });
        self.install(&st, cs.mem.clone());
        self.request_compaction(&mut st);
        Ok(out)
    }

    /// Records a dropped range of rows for every family of the table, with
    /// the next sequence number: every entry written before it is deleted.
    pub(super) fn drop_rows(&self, table: u32, table_name: &str, span: &KeySpan) -> Result<()> {
        self.check_writable()?;
        if span.is_empty() {
            return Ok(());
        }
        let mut cs = self.commit.lock();
        let mut st = self.state.lock();
        let t = st.manifest.tables.iter().find(|t| t.id == table).ok_or_else(|| Error::table_not_found(table_name))?;
        let stores: Vec<u32> = t.families.iter().map(|f| f.store).collect();
        let seq = cs.next_seq;
        let log_number = cs.mem.wal_number();
        let mut next = st.manifest.clone();
        next.last_seq = next.last_seq.max(seq);
        let drops: Vec<RangeDrop> = stores
            .iter()
            .map(|&store| RangeDrop { store, start: span.lo.clone(), end: span.hi.clone(), seq, log_number })
            .collect();
        let inside = |s: &SstMeta| drops.iter().any(|d| d.store == s.store && d.contains(&s.first_row, &s.last_row));
        let gone: Vec<u64> = next.ssts.iter().filter(|s| inside(s)).map(|s| s.file).collect();
        next.ssts.retain(|s| !gone.contains(&s.file));
        next.drops.extend(drops);
        self.sync_log_before_manifest(&mut cs, &st)?;
        self.write_manifest(&mut st, &next)?;
        cs.next_seq += 1;
        st.manifest = next;
        for f in gone {
            if let Some(h) = st.handles.remove(&f) {
                h.mark_obsolete();
            }
        }
        // Published before the view, so any read of the new view sees it.
        self.visible_seq.store(seq, std::sync::atomic::Ordering::Release);
        self.install(&st, cs.mem.clone());
        self.request_compaction(&mut st);
        Ok(())
    }
}
