//! Templates of row keys, qualifiers and values: literal text with fields in
//! braces, e.g. `{location}#{id}#{time:%Y-%m-%d-%H}`.
//!
//! The fields are an entity's fields (by the names the spec gives them),
//! `{entity}` (the entity's number, from 0), `{series}` (a series' name),
//! `{value}` (a value, as text) and `{time:FORMAT}` (an instant, in a
//! [`TimeFormat`]; `{time}` alone is `%Y%m%d%H%M%S`). `{{` and `}}` are
//! literal braces.

use super::time::TimeFormat;

/// A field of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// The entity's field numbered so in the spec's list of fields.
    Entity(usize),
    /// The entity's number, from 0.
    EntityNumber,
    /// The series' name.
    Series,
    /// The value, as text.
    Value,
    /// An instant.
    Time(TimeFormat),
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text written as it is.
    Literal(String),
    /// A field, written from the event.
    Field(Field),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The pieces, in order.
    pub parts: Vec<Part>,
    /// The template as written.
    pub text: String,
}

impl Template {
    /// Parses `text`, whose entity fields are `entity_fields` (in order).
    ///
    /// # Errors
    /// A message naming the field that does not exist or the brace left open.
    pub fn parse(text: &str, entity_fields: &[String]) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(i) = rest.find(['{', '}']) {
            literal.push_str(&rest[..i]);
            let (brace, after) = rest[i..].split_at(1);
            if after.starts_with(brace) {
                literal.push_str(brace);
                rest = &after[1..];
                continue;
            }
            if brace == "}" {
                return Err(format!("template {text:?} has a `}}` with no `{{` (write `}}}}` for a brace)"));
            }
            let end = after.find('}').ok_or_else(|| format!("template {text:?} has a `{{` that is never closed"))?;
            let name = &after[..end];
            let field = parse_field(name, entity_fields).map_err(|e| format!("template {text:?}: {e}"))?;
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(Part::Field(field));
            rest = &after[end + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Template { parts, text: text.to_owned() })
    }

    /// Whether the template has a field for which `f` holds.
    pub fn has(&self, f: impl Fn(&Field) -> bool) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Field(field) if f(field)))
    }

    /// The time format of the template's `{time}` field, if it has one.
    pub fn time_format(&self) -> Option<&TimeFormat> {
        self.parts.iter().find_map(|p| match p {
            Part::Field(Field::Time(f)) => Some(f),
            _ => None,
        })
    }

    /// The parts before the first field for which `stop` holds: the
    /// template's prefix that depends on nothing but what `stop` lets by.
    pub fn parts_before(&self, stop: impl Fn(&Field) -> bool) -> &[Part] {
        let end = self.parts.iter().position(|p| matches!(p, Part::Field(f) if stop(f))).unwrap_or(self.parts.len());
        &self.parts[..end]
    }
}

fn parse_field(name: &str, entity_fields: &[String]) -> Result<Field, String> {
    let (head, format) = match name.split_once(':') {
        Some((h, f)) => (h, Some(f)),
        None => (name, None),
    };
    match (head, format) {
        ("time", None) => Ok(Field::Time(TimeFormat::parse("%Y%m%d%H%M%S")?)),
        ("time", Some(f)) => Ok(Field::Time(TimeFormat::parse(f)?)),
        ("entity", None) => Ok(Field::EntityNumber),
        ("series", None) => Ok(Field::Series),
        ("value", None) => Ok(Field::Value),
        (_, Some(_)) => Err(format!("only {{time:FORMAT}} takes a format, not {{{name}}}")),
        _ => entity_fields.iter().position(|f| f == head).map(Field::Entity).ok_or_else(|| {
            let mut known: Vec<String> = entity_fields.iter().map(|f| format!("{{{f}}}")).collect();
            known.extend(["{entity}", "{series}", "{value}", "{time:FORMAT}"].map(String::from));
            format!("the field {{{name}}} does not exist; the fields are {}", known.join(", "))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_into_literals_and_fields() {
        let fields = ["location".to_owned(), "id".to_owned()];
        let t = Template::parse("{location}#{id}#{series}#{time:week%V}", &fields).unwrap();
        assert_eq!(t.parts.len(), 7);
        assert_eq!(t.parts[0], Part::Field(Field::Entity(0)));
        assert_eq!(t.parts[1], Part::Literal("#".into()));
        assert_eq!(t.time_format().map(TimeFormat::as_str), Some("week%V"));
        assert_eq!(t.parts_before(|f| matches!(f, Field::Series)).len(), 4);
        let braces = Template::parse("{{x}}{entity}", &fields).unwrap();
        assert_eq!(braces.parts, [Part::Literal("{x}".into()), Part::Field(Field::EntityNumber)]);
        let unknown = Template::parse("{host}#{time}", &fields).unwrap_err();
        assert!(unknown.contains("{host} does not exist") && unknown.contains("{location}"), "{unknown}");
        assert!(Template::parse("{location", &fields).unwrap_err().contains("never closed"));
        assert!(Template::parse("a}b", &fields).is_err());
        assert!(Template::parse("{id:%Y}", &fields).is_err());
        assert!(Template::parse("{time:%q}", &fields).is_err());
    }
}
