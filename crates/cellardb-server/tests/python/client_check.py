"""Google's Python client for Bigtable (google-cloud-bigtable, classic API)
against `cellar serve`, every answer checked.

Usage: BIGTABLE_EMULATOR_HOST=HOST:PORT python client_check.py write [--record FILE] [--keep-going]
       BIGTABLE_EMULATOR_HOST=HOST:PORT python client_check.py reread
       python client_check.py compare CELLAR_FILE EMULATOR_FILE

`write` creates tables with families and GC rules, writes with direct rows,
mutate_rows and conditional rows, reads with row sets and filters (reversed
too, through the generated client, as the classic one has no such option),
increments and appends, samples keys, drops a prefix and deletes a table.
`reread`, run against a restarted server over the same directory, reads
back what `write` left. Both exit non-zero at the first answer that differs
from Bigtable's, unless `--keep-going` is given.

`--record FILE` writes every answer, one line per check, so that two
servers' answers can be compared. `compare` does that for a cellardb run and
an emulator run of `write`: the checks in KNOWN_DIFFERENCES must differ,
those in TIMING_DIFFERENCES may (the emulator departs from production
Bigtable there; docs/server.md says how); any other difference, or a
known one that is gone, fails.
"""

import datetime
import sys

from google.api_core import exceptions
from google.cloud import bigtable
from google.cloud.bigtable import column_family, row_filters
from google.cloud.bigtable.row_set import RowRange, RowSet
from google.cloud.bigtable.table import DEFAULT_RETRY

PROJECT, INSTANCE, TABLE = "p", "i", "weather"
T0 = datetime.datetime(2021, 3, 1, tzinfo=datetime.timezone.utc)


def ts(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


# Checks whose answers differ on Google's emulator, and why production
# Bigtable answers as cellardb does.
KNOWN_DIFFERENCES = {
    "mutate_rows statuses (5: NOT_FOUND)": "the emulator answers INTERNAL, which clients retry until their deadline",
}
# Checks whose answers may differ on the emulator, depending on timing: its
# garbage collection runs on a timer, so a read soon after a write usually,
# not always, returns versions the GC rule has already collected.
TIMING_DIFFERENCES = {
    "max_versions(2) keeps the newest two": "the emulator collects garbage lazily and returns a third version",
}

RECORD = None  # the file every answer is written to, under --record
KEEP_GOING = False


def check(got, want, what):
    if RECORD is not None:
        answer = repr(got).replace("\n", " ")  # a message's text spans lines
        RECORD.write(f"{what}\t{answer}\n")
    if got == want:
        print(f"ok: {what}")
    elif KEEP_GOING:
        print(f"DIFFERS: {what}: got {got!r}, want {want!r}")
    else:
        sys.exit(f"{what}: got {got!r}, want {want!r}")


def cells_of(row, family, qualifier):
    return [(c.value, c.timestamp, c.labels) for c in row.cells.get(family, {}).get(qualifier, [])]


def error_of(call):
    """The name of the error `call` raised, or what it returned."""
    try:
        return call()
    except exceptions.GoogleAPICallError as e:
        return type(e).__name__


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
    # As messages, whose text two runs can compare.
    check(families["m"].gc_rule.to_pb(), column_family.MaxVersionsGCRule(2).to_pb(), "max_versions GC rule")
    check(families["raw"].gc_rule.to_pb(), union.to_pb(), "union GC rule")
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
    # No retries: a status is an answer, not a reason to try again.
    statuses = table.mutate_rows(rows + [bad], retry=DEFAULT_RETRY.with_deadline(0.0))
    check([s.code for s in statuses], [0] * 10 + [5], "mutate_rows statuses (5: NOT_FOUND)")

    # Row sets: keys and ranges, each row once, in order.
    row_set = RowSet()
    row_set.add_row_key(b"k03")
    row_set.add_row_range(RowRange(start_key=b"k02", end_key=b"k05"))
    check(keys_of(table.read_rows(row_set=row_set)), [b"k02", b"k03", b"k04"], "read_rows with a key and a range")
    check(keys_of(table.read_rows(start_key=b"k08")), [b"k08", b"k09", b"r1"], "read_rows from a start key")
    check(len(keys_of(table.read_rows(limit=3))), 3, "read_rows with a limit")

    # Reversed: the classic client has no option for it; the generated
    # client it wraps sends the request as written. Bigtable serves reversed
    # reads only to clients that say they can merge them, in the
    # `bigtable-features` header (a base64 FeatureFlags with reverse_scans).
    request = {"table_name": table.name, "rows_limit": 3, "reversed": True}

    def reversed_keys(metadata):
        # The keys of committed rows: a row's chunks may each repeat its key.
        keys, key = [], None
        for response in instance._client.table_data_client.read_rows(request=request, metadata=metadata):
            for chunk in response.chunks:
                key = chunk.row_key or key
                if chunk.commit_row:
                    keys.append(key)
        return keys

    check(error_of(lambda: reversed_keys(())), "MethodNotImplemented", "reversed read_rows, reverse scans not advertised")
    advertised = (("bigtable-features", "CAE="),)
    check(error_of(lambda: reversed_keys(advertised)), [b"r1", b"k09", b"k08"], "reversed read_rows with a limit")

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
    check(error_of(lambda: instance.table("missing").read_row(b"r1")), "NotFound", "a missing table")
    bad_regex = row_filters.ValueRegexFilter(b"(unclosed")
    check(error_of(lambda: table.read_row(b"r1", filter_=bad_regex)), "InvalidArgument", "a bad regex")

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


def read_record(path):
    with open(path) as f:
        return dict(line.rstrip("\n").split("\t", 1) for line in f)


def compare(cellar_path, emulator_path):
    cellar, emulator = read_record(cellar_path), read_record(emulator_path)
    if cellar.keys() != emulator.keys():
        sys.exit(f"the two runs made different checks: {sorted(cellar.keys() ^ emulator.keys())}")
    differ = {what for what in cellar if cellar[what] != emulator[what]}
    known = KNOWN_DIFFERENCES | TIMING_DIFFERENCES
    for what in sorted(differ):
        reason = known.get(what, "NOT A KNOWN DIFFERENCE")
        print(f"differs: {what}: cellardb {cellar[what]}, emulator {emulator[what]} ({reason})")
    unexpected = sorted(differ - known.keys())
    gone = sorted(KNOWN_DIFFERENCES.keys() - differ)
    if unexpected or gone:
        sys.exit(f"the answers differ where they should not: {unexpected}; known differences gone: {gone}")
    print(f"compare: {len(cellar)} answers, the same but for the {len(differ)} known differences")


def main():
    global RECORD, KEEP_GOING
    args = sys.argv[1:]
    if args[0] == "compare":
        return compare(args[1], args[2])
    KEEP_GOING = "--keep-going" in args
    if "--record" in args:
        RECORD = open(args[args.index("--record") + 1], "w")
    client = bigtable.Client(project=PROJECT, admin=True)
    instance = client.instance(INSTANCE)
    {"write": write, "reread": reread}[args[0]](instance)
    print(f"client_check {args[0]}: every answer checked")


if __name__ == "__main__":
    main()
