"""Google's Python client for Bigtable (google-cloud-bigtable, classic API)
against `cellar serve`, every answer checked.

Usage: BIGTABLE_EMULATOR_HOST=HOST:PORT python client_check.py write
       BIGTABLE_EMULATOR_HOST=HOST:PORT python client_check.py reread

`write` creates tables with families and GC rules, writes with direct rows,
mutate_rows and conditional rows, reads with row sets and filters,
increments and appends, samples keys, drops a prefix and deletes a table.
`reread`, run against a restarted server over the same directory, reads
back what `write` left. Exits non-zero at the first answer that differs.
"""

import datetime
import sys

from google.api_core import exceptions
from google.cloud import bigtable
from google.cloud.bigtable import column_family, row_filters
from google.cloud.bigtable.row_set import RowRange, RowSet

PROJECT, INSTANCE, TABLE = "p", "i", "weather"
T0 = datetime.datetime(2021, 3, 1, tzinfo=datetime.timezone.utc)


def ts(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def check(got, want, what):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")
    print(f"ok: {what}")


def cells_of(row, family, qualifier):
    return [(c.value, c.timestamp, c.labels) for c in row.cells.get(family, {}).get(qualifier, [])]


def keys_of(rows):
    return [r.row_key for r in rows]


def write(instance):
    table = instance.table(TABLE)
    union = column_family.GCRuleUnion(
        [column_family.MaxVersionsGCRule(5), column_family.MaxAgeGCRule(datetime.timedelta(days=7))]
    )
    table.create(column_families={"m": column_family.MaxVersionsGCRule(2), "raw": union})
    families = table.list_column_families()
    check(sorted(families), ["m", "raw"], "create_table's families")
    check(families["m"].gc_rule, column_family.MaxVersionsGCRule(2), "max_versions GC rule")
    check(families["raw"].gc_rule, union, "union GC rule")
    check(TABLE in [t.table_id for t in instance.list_tables()], True, "list_tables names the table")

    # Direct rows: three versions of a cell, max_versions(2) keeps two.
    row = table.direct_row(b"r1")
    for minute, value in [(1, b"v1"), (2, b"v2"), (3, b"v3")]:
        row.set_cell("m", b"a", value, timestamp=ts(minute))
    row.set_cell("m", b"b", b"other", timestamp=ts(1))
    row.commit()
    got = table.read_row(b"r1")
    check([v for v, _, _ in cells_of(got, "m", b"a")], [b"v3", b"v2"], "max_versions(2) keeps the newest two")
    check(cells_of(got, "m", b"a")[0][1], ts(3), "a cell's timestamp")

    # mutate_rows: one status per row, a row naming an unknown family
    # failing alone.
    rows = []
    for i in range(10):
        r = table.direct_row(f"k{i:02}".encode())
        r.set_cell("m", b"q", f"value-{i}".encode(), timestamp=ts(i))
        rows.append(r)
    bad = table.direct_row(b"k-bad")
    bad.set_cell("nope", b"q", b"x", timestamp=ts(0))
    statuses = table.mutate_rows(rows + [bad])
    check([s.code for s in statuses], [0] * 10 + [5], "mutate_rows statuses (5: NOT_FOUND)")

    # Row sets: keys and ranges, each row once, in order.
    row_set = RowSet()
    row_set.add_row_key(b"k03")
    row_set.add_row_range(RowRange(start_key=b"k02", end_key=b"k05"))
    check(keys_of(table.read_rows(row_set=row_set)), [b"k02", b"k03", b"k04"], "read_rows with a key and a range")
    check(keys_of(table.read_rows(start_key=b"k08")), [b"k08", b"k09", b"r1"], "read_rows from a start key")
    check(len(keys_of(table.read_rows(limit=3))), 3, "read_rows with a limit")

    # Filters: a chain, an interleave, column and timestamp ranges, a
    # cells-per-column limit, labels, a value range.
    chain = row_filters.RowFilterChain(
        filters=[
            row_filters.RowKeyRegexFilter(b"r.*"),
            row_filters.ColumnQualifierRegexFilter(b"a"),
            row_filters.CellsColumnLimitFilter(1),
        ]
    )
    got = table.read_row(b"r1", filter_=chain)
    check([v for v, _, _ in cells_of(got, "m", b"a")], [b"v3"], "chain of row regex, qualifier regex, limit")
    check(cells_of(got, "m", b"b"), [], "the chain drops the other column")
    labelled = row_filters.RowFilterChain(
        filters=[row_filters.ColumnRangeFilter("m", start_column=b"b", end_column=b"b"), row_filters.ApplyLabelFilter("seen")]
    )
    got = table.read_row(b"r1", filter_=labelled)
    check(cells_of(got, "m", b"b"), [(b"other", ts(1), ["seen"])], "column range with a label")
    timed = row_filters.TimestampRangeFilter(row_filters.TimestampRange(start=ts(2), end=ts(3)))
    check([v for v, _, _ in cells_of(table.read_row(b"r1", filter_=timed), "m", b"a")], [b"v2"], "timestamp range")
    interleave = row_filters.RowFilterUnion(
        filters=[row_filters.ValueRangeFilter(start_value=b"v3", end_value=b"v3"), row_filters.ValueRegexFilter(b"oth.*")]
    )
    got = table.read_row(b"r1", filter_=interleave)
    check(
        (cells_of(got, "m", b"a")[0][0], cells_of(got, "m", b"b")[0][0]), (b"v3", b"other"), "interleave of value filters"
    )
    check(table.read_row(b"r1", filter_=row_filters.BlockAllFilter(True)), None, "block_all reads no row")

    # Conditional rows: the predicate decides which mutations apply.
    cond = table.conditional_row(b"r1", filter_=row_filters.ColumnQualifierRegexFilter(b"a"))
    cond.set_cell("m", b"hit", b"yes", timestamp=ts(9), state=True)
    cond.set_cell("m", b"miss", b"yes", timestamp=ts(9), state=False)
    check(cond.commit(), True, "check_and_mutate_row matched")
    got = table.read_row(b"r1")
    check((bool(cells_of(got, "m", b"hit")), bool(cells_of(got, "m", b"miss"))), (True, False), "the true branch applied")

    # Increments and appends.
    for _ in range(2):
        counter = table.append_row(b"counter")
        counter.increment_cell_value("m", b"n", 5)
        counter.append_cell_value("raw", b"log", b"x")
        result = counter.commit()
    check(result["m"][b"n"][0][0], (10).to_bytes(8, "big"), "increment twice by 5")
    check(result["raw"][b"log"][0][0], b"xx", "append twice")

    # Errors are Bigtable's.
    try:
        instance.table("missing").read_row(b"r1")
        sys.exit("reading a missing table succeeded")
    except exceptions.NotFound:
        print("ok: a missing table is NOT_FOUND")
    try:
        table.read_row(b"r1", filter_=row_filters.ValueRegexFilter(b"(unclosed"))
        sys.exit("a bad regex was accepted")
    except exceptions.InvalidArgument:
        print("ok: a bad regex is INVALID_ARGUMENT")

    check(len(list(table.sample_row_keys())) >= 1, True, "sample_row_keys answers")

    # Drop a prefix; create and delete a second table.
    table.drop_by_prefix(b"k0")
    check(keys_of(table.read_rows()), [b"counter", b"r1"], "drop_by_prefix")
    other = instance.table("scratch")
    other.create(column_families={"f": column_family.MaxVersionsGCRule(1)})
    check(other.exists(), True, "a created table exists")
    other.delete()
    check(other.exists(), False, "a deleted table does not")


def reread(instance):
    table = instance.table(TABLE)
    check(keys_of(table.read_rows()), [b"counter", b"r1"], "rows after a restart")
    got = table.read_row(b"r1")
    check([v for v, _, _ in cells_of(got, "m", b"a")], [b"v3", b"v2"], "cells after a restart")
    check(cells_of(table.read_row(b"counter"), "m", b"n")[0][0], (10).to_bytes(8, "big"), "counter after a restart")
    check(sorted(table.list_column_families()), ["m", "raw"], "families after a restart")


def main():
    client = bigtable.Client(project=PROJECT, admin=True)
    instance = client.instance(INSTANCE)
    {"write": write, "reread": reread}[sys.argv[1]](instance)
    print(f"client_check {sys.argv[1]}: every answer as expected")


if __name__ == "__main__":
    main()
