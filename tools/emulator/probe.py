#!/usr/bin/env python3
"""Probe Google's Cloud Bigtable emulator (cbtemulator) for exact data-model behaviour.

Usage:
    /usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator -port 8086 &
    BIGTABLE_EMULATOR_HOST=localhost:8086 ./venv/bin/python probe.py [question numbers...]

Uses the raw GAPIC v2 clients (google.cloud.bigtable_v2 / bigtable_admin_v2) over an insecure
gRPC channel so that exact protos are sent (no client-side validation or retries).
"""
import base64
import os
import sys
import time

import grpc
from google.api_core import exceptions as gexc
from google.cloud import bigtable_admin_v2, bigtable_v2
from google.cloud.bigtable_admin_v2.services.bigtable_table_admin.transports import (
    BigtableTableAdminGrpcTransport,
)
from google.cloud.bigtable_admin_v2.types import table as admin_table
from google.cloud.bigtable_v2.services.bigtable.transports import BigtableGrpcTransport
from google.cloud.bigtable_v2.types import bigtable as bt

HOST = os.environ.get("BIGTABLE_EMULATOR_HOST", "localhost:8086")
PROJECT, INSTANCE = "probe-project", "probe-instance"
PARENT = f"projects/{PROJECT}/instances/{INSTANCE}"

_chan = grpc.insecure_channel(
    HOST,
    options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)],
)
DATA = bigtable_v2.BigtableClient(transport=BigtableGrpcTransport(channel=_chan))
ADMIN = bigtable_admin_v2.BaseBigtableTableAdminClient(
    transport=BigtableTableAdminGrpcTransport(channel=_chan)
)

NO_RETRY = dict(retry=None, timeout=120)


# --------------------------------------------------------------------------- helpers
def err(e):
    if isinstance(e, gexc.GoogleAPICallError):
        code = e.grpc_status_code.name if e.grpc_status_code is not None else str(e.code)
        return f"ERROR {code}: {e.message}"
    if isinstance(e, grpc.RpcError):
        return f"ERROR {e.code().name}: {e.details()}"
    return f"ERROR {type(e).__name__}: {e}"


def tname(tid):
    return f"{PARENT}/tables/{tid}"


def make_table(tid, families=("cf1", "cf2", "m"), gc=None, granularity=None):
    try:
        ADMIN.delete_table(name=tname(tid), **NO_RETRY)
    except Exception:
        pass
    cfs = {}
    for f in families:
        cf = admin_table.ColumnFamily()
        if gc and f in gc:
            cf.gc_rule = gc[f]
        cfs[f] = cf
    tbl = admin_table.Table(column_families=cfs)
    if granularity is not None:
        tbl.granularity = granularity
    ADMIN.create_table(parent=PARENT, table_id=tid, table=tbl, **NO_RETRY)
    return tname(tid)


def sc(fam, q, ts, v):
    return {"set_cell": {"family_name": fam, "column_qualifier": q, "timestamp_micros": ts, "value": v}}


def dcol(fam, q, start=None, end=None):
    d = {"family_name": fam, "column_qualifier": q}
    if start is not None or end is not None:
        tr = {}
        if start is not None:
            tr["start_timestamp_micros"] = start
        if end is not None:
            tr["end_timestamp_micros"] = end
        d["time_range"] = tr
    return {"delete_from_column": d}


def dfam(fam):
    return {"delete_from_family": {"family_name": fam}}


DROW = {"delete_from_row": {}}


def mutate(table, key, muts):
    try:
        DATA.mutate_row(request={"table_name": table, "row_key": key, "mutations": muts}, **NO_RETRY)
        return "OK"
    except Exception as e:  # noqa
        return err(e)


def must(table, key, muts):
    r = mutate(table, key, muts)
    if r != "OK":
        raise RuntimeError(f"setup mutate failed: {r}")


def read(table, keys=None, ranges=None, filt=None, limit=None, reversed_=None, metadata=()):
    """Return (rows, error). rows = [(key, [(fam, qual, ts, value, labels), ...]), ...] in stream order."""
    req = {"table_name": table}
    if keys is not None or ranges is not None:
        rs = {}
        if keys is not None:
            rs["row_keys"] = keys
        if ranges is not None:
            rs["row_ranges"] = ranges
        req["rows"] = rs
    if filt is not None:
        req["filter"] = filt
    if limit is not None:
        req["rows_limit"] = limit
    if reversed_ is not None:
        req["reversed"] = reversed_
    rows = []
    cur_key, cur_cells = None, []
    fam = qual = None
    cell = None
    try:
        for resp in DATA.read_rows(request=req, metadata=list(metadata), **NO_RETRY):
            pb = bt.ReadRowsResponse.pb(resp)
            for ch in pb.chunks:
                if ch.reset_row:
                    cur_key, cur_cells, cell = None, [], None
                    continue
                if ch.row_key:
                    cur_key = ch.row_key
                if ch.HasField("family_name"):
                    fam = ch.family_name.value
                if ch.HasField("qualifier"):
                    qual = ch.qualifier.value
                if cell is None:
                    cell = [fam, qual, ch.timestamp_micros, b"", list(ch.labels)]
                cell[3] += ch.value
                if ch.value_size == 0:
                    cur_cells.append(tuple(cell))
                    cell = None
                if ch.commit_row:
                    rows.append((cur_key, cur_cells))
                    cur_key, cur_cells = None, []
        return rows, None
    except Exception as e:  # noqa
        return rows, err(e)


def fmt_rows(res, maxval=40):
    rows, e = res
    out = []
    if not rows:
        out.append("    (no rows)")
    for k, cells in rows:
        out.append(f"    row {k!r}:")
        if not cells:
            out.append("      (no cells)")
        for f, q, ts, v, labels in cells:
            vs = repr(v) if len(v) <= maxval else f"<{len(v)} bytes>"
            lab = f" labels={labels}" if labels else ""
            out.append(f"      {f}:{q!r} @{ts} = {vs}{lab}")
    if e:
        out.append(f"    {e}")
    return "\n".join(out)


def show(title, res):
    print(f"  {title}:")
    print(fmt_rows(res))


def say(title, val):
    print(f"  {title}: {val}")


def cells_of(res):
    rows, e = res
    if e:
        return e
    return [(f, q, ts, v) for _, cells in rows for (f, q, ts, v, _l) in cells]


# filter builders
def chain(*fs):
    return {"chain": {"filters": list(fs)}}


def interleave(*fs):
    return {"interleave": {"filters": list(fs)}}


def famre(r):
    return {"family_name_regex_filter": r}


def qre(r):
    return {"column_qualifier_regex_filter": r}


def ts_range(start=None, end=None):
    d = {}
    if start is not None:
        d["start_timestamp_micros"] = start
    if end is not None:
        d["end_timestamp_micros"] = end
    return {"timestamp_range_filter": d}


def col_limit(n):
    return {"cells_per_column_limit_filter": n}


BLOCK = {"block_all_filter": True}
PASS = {"pass_all_filter": True}


# --------------------------------------------------------------------------- experiments
def q1():
    t = make_table("q1")
    for i in range(5):
        before = time.time_ns() // 1000
        r = mutate(t, b"r%d" % i, [sc("cf1", b"q", -1, b"v")])
        after = time.time_ns() // 1000
        rows, e = read(t, keys=[b"r%d" % i])
        ts = rows[0][1][0][2] if rows and rows[0][1] else None
        say(f"ts=-1 write #{i}", f"{r}; stored ts={ts} (ts%1000={ts % 1000 if ts is not None else None}); "
            f"client wall clock before={before} after={after}")
        time.sleep(0.0013)
    for ts in (-2, -1000, -1500, -(2**63)):
        say(f"ts={ts}", mutate(t, b"neg", [sc("cf1", b"q", ts, b"v")]))
    show("row 'neg' afterwards", read(t, keys=[b"neg"]))
    # -1 mixed inside a batch with explicit ts
    say("batch [ts=-1, ts=-1] same column", mutate(t, b"dup", [sc("cf1", b"q", -1, b"a"), sc("cf1", b"q", -1, b"b")]))
    show("row 'dup'", read(t, keys=[b"dup"]))


def q2():
    t = make_table("q2")
    for ts in (1500, 1, 999, 1001, 0, 1000, 2**63 - 1, 9223372036854775000, 9223372036854776000 - 2000):
        say(f"default table, ts={ts}", mutate(t, b"r", [sc("cf1", b"q%d" % ts, ts, b"v")]))
    show("row 'r'", read(t, keys=[b"r"]))
    try:
        tb = ADMIN.get_table(name=t, **NO_RETRY)
        say("get_table granularity", admin_table.Table.TimestampGranularity(tb.granularity).name)
    except Exception as e:
        say("get_table", err(e))
    # explicit MILLIS
    try:
        t2 = make_table("q2m", granularity=admin_table.Table.TimestampGranularity.MILLIS)
        say("MILLIS table ts=1500", mutate(t2, b"r", [sc("cf1", b"q", 1500, b"v")]))
    except Exception as e:
        say("create MILLIS table", err(e))
    # a batch where one mutation is invalid: is the whole row mutation rejected?
    say("batch [ts=1000 valid, ts=1500 invalid]", mutate(t, b"atomic", [sc("cf1", b"q", 1000, b"v"), sc("cf1", b"q", 1500, b"v")]))
    show("row 'atomic' afterwards (atomicity)", read(t, keys=[b"atomic"]))


def _q3_seed(t, key):
    must(t, key, [sc("cf1", b"q", ts, b"v%d" % ts) for ts in (1000, 2000, 3000, 4000)])


def q3():
    t = make_table("q3")
    cases = [
        ("[2000,3000)", 2000, 3000),
        ("[2000, end=0/unset)", 2000, 0),
        ("[2000, end omitted)", 2000, None),
        ("[start=0, 3000)", 0, 3000),
        ("[start omitted, 3000)", None, 3000),
        ("[0,0] (time_range present, both 0)", 0, 0),
        ("start>end [3000,2000)", 3000, 2000),
        ("start==end [2000,2000)", 2000, 2000),
        ("non-ms start [1500,3000)", 1500, 3000),
        ("non-ms end [1000,2500)", 1000, 2500),
        ("negative start [-1000,3000)", -1000, 3000),
        ("negative end [1000,-1)", 1000, -1),
    ]
    for i, (name, s, e) in enumerate(cases):
        key = b"r%d" % i
        _q3_seed(t, key)
        if s is None and e is None:
            m = dcol("cf1", b"q")
        else:
            m = {"delete_from_column": {"family_name": "cf1", "column_qualifier": b"q", "time_range": {}}}
            if s is not None:
                m["delete_from_column"]["time_range"]["start_timestamp_micros"] = s
            if e is not None:
                m["delete_from_column"]["time_range"]["end_timestamp_micros"] = e
        r = mutate(t, key, [m])
        left = [c[2] for c in cells_of(read(t, keys=[key]))] if True else None
        say(f"DeleteFromColumn {name}", f"{r}; remaining ts={left}")
    # validation only happens if the row currently has the family
    say("DeleteFromColumn start>end [3000,2000) on row without the family",
        mutate(t, b"empty-row", [dcol("cf1", b"q", 3000, 2000)]))
    say("DeleteFromColumn non-ms [1500,2500) on row without the family",
        mutate(t, b"empty-row", [dcol("cf1", b"q", 1500, 2500)]))
    must(t, b"other-col", [sc("cf1", b"x", 1000, b"v")])
    say("DeleteFromColumn start>end [3000,2000) on row with cf1 but not column q",
        mutate(t, b"other-col", [dcol("cf1", b"q", 3000, 2000)]))
    # no time_range at all
    _q3_seed(t, b"all")
    r = mutate(t, b"all", [dcol("cf1", b"q")])
    say("DeleteFromColumn without time_range", f"{r}; remaining={cells_of(read(t, keys=[b'all']))}")


def q4():
    t = make_table("q4")
    must(t, b"r", [sc("cf1", b"q", 1000, b"first")])
    must(t, b"r", [sc("cf1", b"q", 1000, b"second")])
    show("same (row,fam,qual,ts) written twice in separate calls", read(t, keys=[b"r"]))


def q5():
    t = make_table("q5")
    must(t, b"a", [sc("cf1", b"q", 5000, b"old"), sc("cf2", b"x", 5000, b"old")])
    say("[DeleteFromRow, SetCell(q,1000,'v')]", mutate(t, b"a", [DROW, sc("cf1", b"q", 1000, b"v")]))
    show("row a", read(t, keys=[b"a"]))
    say("[SetCell(q,1000,'v'), DeleteFromColumn(q, all)]", mutate(t, b"b", [sc("cf1", b"q", 1000, b"v"), dcol("cf1", b"q")]))
    show("row b", read(t, keys=[b"b"]))
    say("[SetCell(q,1000,'v'), DeleteFromFamily(cf1)]", mutate(t, b"b2", [sc("cf1", b"q", 1000, b"v"), dfam("cf1")]))
    show("row b2", read(t, keys=[b"b2"]))
    say("[SetCell(q,1000,'v'), DeleteFromRow]", mutate(t, b"b3", [sc("cf1", b"q", 1000, b"v"), DROW]))
    show("row b3", read(t, keys=[b"b3"]))
    say("[SetCell(q,2000,'a'), SetCell(q,2000,'b')]", mutate(t, b"c", [sc("cf1", b"q", 2000, b"a"), sc("cf1", b"q", 2000, b"b")]))
    show("row c", read(t, keys=[b"c"]))
    say("[DeleteFromColumn(q,[1000,3000)), SetCell(q,2000,'new')] on existing q@2000",
        (must(t, b"d", [sc("cf1", b"q", 2000, b"old")]),
         mutate(t, b"d", [dcol("cf1", b"q", 1000, 3000), sc("cf1", b"q", 2000, b"new")]))[1])
    show("row d", read(t, keys=[b"d"]))


def q6():
    t = make_table("q6")
    must(t, b"r", [sc("cf1", b"q", 5000, b"deleted-new"), sc("cf1", b"q", 3000, b"deleted-old")])
    must(t, b"r", [DROW])
    must(t, b"r", [sc("cf1", b"q", 1000, b"older-written-later")])
    show("DeleteFromRow, then separate SetCell ts=1000 (< deleted 5000)", read(t, keys=[b"r"]))
    must(t, b"s", [sc("cf1", b"q", 5000, b"x")])
    must(t, b"s", [dcol("cf1", b"q")])
    must(t, b"s", [sc("cf1", b"q", 1000, b"older")])
    show("DeleteFromColumn(all), then SetCell ts=1000", read(t, keys=[b"s"]))
    must(t, b"u", [sc("cf1", b"q", 5000, b"x")])
    must(t, b"u", [dfam("cf1")])
    must(t, b"u", [sc("cf1", b"q", 1000, b"older")])
    show("DeleteFromFamily, then SetCell ts=1000", read(t, keys=[b"u"]))


def q7():
    t = make_table("q7")
    must(t, b"a", [sc("cf1", b"q", 1000, b"v")])
    must(t, b"b", [sc("cf1", b"q", 1000, b"v")])
    must(t, b"c", [sc("cf1", b"q", 1000, b"v")])
    must(t, b"b", [DROW])
    must(t, b"c", [dcol("cf1", b"q")])
    show("full scan after b=DeleteFromRow, c=DeleteFromColumn(all cells)", read(t))
    show("point read of deleted row 'b'", read(t, keys=[b"b"]))
    say("DeleteFromRow on never-existing row 'zz'", mutate(t, b"zz", [DROW]))
    say("DeleteFromColumn on never-existing row 'zy'", mutate(t, b"zy", [dcol("cf1", b"nope")]))
    show("full scan", read(t))
    must(t, b"d", [sc("cf2", b"q", 1000, b"v")])
    show("filter famre('cf1') (row d has only cf2)", read(t, filt=famre("cf1")))
    show("filter block_all", read(t, filt=BLOCK))
    show("filter strip_value (rows with cells)", read(t, filt={"strip_value_transformer": True}))
    show("filter cells_per_row_offset(5)", read(t, filt={"cells_per_row_offset_filter": 5}))
    # SetCell with empty value: is the row present?
    must(t, b"e", [sc("cf1", b"q", 1000, b"")])
    show("row with a single empty-valued cell", read(t, keys=[b"e"]))


def q8():
    t = make_table("q8", families=("cf1", "cf2", "m", "xcf1"))
    must(t, b"r", [sc(f, b"q", 1000, f.encode()) for f in ("cf1", "cf2", "m", "xcf1")])
    for rx in ("c", "cf", "cf1", ".", "..", "cf.", "f1", ".*f1", "cf1|m", "^cf1$", "CF1", "(?i)CF1",
               "(", "[", "a{2,1}", "*", "\\", "\\C", "(?P<x>a"):
        res = read(t, keys=[b"r"], filt=famre(rx))
        c = cells_of(res)
        say(f"family_name_regex_filter {rx!r}", c if isinstance(c, str) else sorted({x[0] for x in c}))
    # invalid regex in other regex filters
    for name, f in (("column_qualifier_regex_filter '('", qre(b"(")),
                    ("row_key_regex_filter '('", {"row_key_regex_filter": b"("}),
                    ("value_regex_filter '('", {"value_regex_filter": b"("})):
        c = cells_of(read(t, keys=[b"r"], filt=f))
        say(name, c)
    say("invalid regex on table with zero rows matching range", cells_of(read(t, keys=[b"nonexistent"], filt=famre("("))))


def q9():
    t = make_table("q9")
    quals = [b"a\nb", b"axb", b"ab", b"", b"\xff", b"\xff\xfe", b"abc", b"\xc3\xa9"]
    must(t, b"r", [sc("cf1", q, 1000, b"v") for q in quals])
    tests = [b"a.b", b"(?s)a.b", b"a\\nb", b"a", b"ab", b"", b"^$", b".*", b".+", b"\\xff", b".", b"\xff",
             b"\\C", b"[\\x80-\\xff]", b"\\xff\\xfe", b"..", b"(?s).*", b"\\x{ff}", b"\xc3\xa9", b"\\x{e9}", b"\\xc3\\xa9", b"\\xe9"]
    for rx in tests:
        c = cells_of(read(t, keys=[b"r"], filt=qre(rx)))
        say(f"column_qualifier_regex_filter {rx!r}", c if isinstance(c, str) else [x[1] for x in c])
    # row key regex on bytes
    must(t, b"k\nk", [sc("cf1", b"q", 1000, b"v")])
    must(t, b"\xff", [sc("cf1", b"q", 1000, b"v")])
    for rx in (b"k.k", b"(?s)k.k", b"k", b"\\xff", b".", b"\xff", b""):
        res = read(t, filt={"row_key_regex_filter": rx})
        say(f"row_key_regex_filter {rx!r}", res[1] or [k for k, _ in res[0]])
    # value regex
    must(t, b"v", [sc("cf2", b"1", 1000, b"a\nb"), sc("cf2", b"2", 1000, b"\xff"), sc("cf2", b"3", 1000, b""), sc("cf2", b"4", 1000, b"abc")])
    for rx in (b"a.b", b"(?s)a.b", b"", b"\\xff", b".", b"ab", b"abc"):
        c = cells_of(read(t, keys=[b"v"], filt={"value_regex_filter": rx}))
        say(f"value_regex_filter {rx!r}", c if isinstance(c, str) else [x[3] for x in c])


def q10():
    t = make_table("q10")
    quals = [b"", b"a", b"a0", b"b", b"b0", b"c"]
    must(t, b"r", [sc("cf1", q, 1000, b"v") for q in quals] + [sc("cf2", b"a", 1000, b"v")])

    def cr(fam, sc_=None, so=None, ec=None, eo=None):
        d = {"family_name": fam}
        if sc_ is not None:
            d["start_qualifier_closed"] = sc_
        if so is not None:
            d["start_qualifier_open"] = so
        if ec is not None:
            d["end_qualifier_closed"] = ec
        if eo is not None:
            d["end_qualifier_open"] = eo
        return {"column_range_filter": d}

    cases = [
        ("cf1 start_closed='' no end", cr("cf1", sc_=b"")),
        ("cf1 no start no end", cr("cf1")),
        ("cf1 start_open='' no end", cr("cf1", so=b"")),
        ("cf1 start_open='a'", cr("cf1", so=b"a")),
        ("cf1 start_closed='a'", cr("cf1", sc_=b"a")),
        ("cf1 end_open='b'", cr("cf1", eo=b"b")),
        ("cf1 end_closed='b'", cr("cf1", ec=b"b")),
        ("cf1 end_open=''", cr("cf1", eo=b"")),
        ("cf1 end_closed=''", cr("cf1", ec=b"")),
        ("cf1 [a, b)", cr("cf1", sc_=b"a", eo=b"b")),
        ("cf1 start_closed='c', end_open='a' (start>end)", cr("cf1", sc_=b"c", eo=b"a")),
        ("cf1 start_closed='b', end_open='b' (empty)", cr("cf1", sc_=b"b", eo=b"b")),
        ("family 'zz' (not in table)", cr("zz")),
        ("family '' (empty)", cr("")),
        ("family regex-ish 'cf.'", cr("cf.")),
    ]
    for name, f in cases:
        c = cells_of(read(t, keys=[b"r"], filt=f))
        say(f"column_range_filter {name}", c if isinstance(c, str) else [(x[0], x[1]) for x in c])


def q11():
    t = make_table("q11")
    must(t, b"r", [sc("cf1", b"q", ts, b"v%d" % ts) for ts in (0, 1000, 2000, 3000, 4000)])
    cases = [((2000, 3000), "[2000,3000)"), ((2000, 0), "start=2000,end=0"), ((2000, None), "start=2000,end unset"),
             ((None, 3000), "start unset,end=3000"), ((0, 0), "both 0"), ((None, None), "both unset"),
             ((3000, 2000), "start>end"), ((2000, 2000), "start==end"), ((1500, 3000), "non-ms start 1500"),
             ((1000, 2500), "non-ms end 2500"), ((-1000, 3000), "negative start"), ((1000, -1), "end=-1"),
             ((1001, 2001), "[1001,2001)")]
    for (s, e), name in cases:
        c = cells_of(read(t, keys=[b"r"], filt=ts_range(s, e)))
        say(f"timestamp_range_filter {name}", c if isinstance(c, str) else [x[2] for x in c])


def q12():
    t = make_table("q12")
    must(t, b"r", [sc("cf1", b"q", ts, b"v%d" % ts) for ts in (1000, 2000, 3000)] + [sc("cf1", b"p", 1000, b"p1")])
    show("no filter", read(t, keys=[b"r"]))
    show("cells_per_column_limit(1)", read(t, keys=[b"r"], filt=col_limit(1)))
    show("cells_per_column_limit(0)", read(t, keys=[b"r"], filt=col_limit(0)))
    show("cells_per_column_limit(-1)", read(t, keys=[b"r"], filt=col_limit(-1)))
    show("chain(ts_range[1000,3000), col_limit(1))", read(t, keys=[b"r"], filt=chain(ts_range(1000, 3000), col_limit(1))))
    show("chain(col_limit(1), ts_range[1000,3000))", read(t, keys=[b"r"], filt=chain(col_limit(1), ts_range(1000, 3000))))
    show("cells_per_row_limit(2)", read(t, keys=[b"r"], filt={"cells_per_row_limit_filter": 2}))
    show("cells_per_row_offset(2)", read(t, keys=[b"r"], filt={"cells_per_row_offset_filter": 2}))


def q13():
    t = make_table("q13")
    for k in (b"a", b"b", b"c", b"d", b"e"):
        must(t, k, [sc("cf1", b"q", 1000, k)])
    for lim, rev in ((2, None), (2, True), (None, True), (0, None), (-1, None), (10, True)):
        res = read(t, limit=lim, reversed_=rev)
        say(f"rows_limit={lim} reversed={rev}", (res[1] + " ; partial=" if res[1] else "") + repr([k for k, _ in res[0]]))
    res = read(t, ranges=[{"start_key_closed": b"b", "end_key_open": b"e"}], reversed_=True, limit=2)
    say("range [b,e) reversed limit=2", res[1] or [k for k, _ in res[0]])
    res = read(t, keys=[b"a", b"d", b"c"], reversed_=True)
    say("keys [a,d,c] reversed", res[1] or [k for k, _ in res[0]])
    # The emulator only honours `reversed` when the client advertises FeatureFlags.reverse_scans
    # via the `bigtable-features` metadata header (urlsafe base64 of the serialized FeatureFlags).
    from google.cloud.bigtable_v2.types import FeatureFlags
    hdr = base64.urlsafe_b64encode(FeatureFlags.serialize(FeatureFlags(reverse_scans=True))).decode()
    md = [("bigtable-features", hdr)]
    say("bigtable-features header value", hdr)
    for lim, rev in ((2, True), (None, True), (10, True), (-1, True)):
        res = read(t, limit=lim, reversed_=rev, metadata=md)
        say(f"[with header] rows_limit={lim} reversed={rev}", res[1] or [k for k, _ in res[0]])
    res = read(t, ranges=[{"start_key_closed": b"b", "end_key_open": b"e"}], reversed_=True, limit=2, metadata=md)
    say("[with header] range [b,e) reversed limit=2", res[1] or [k for k, _ in res[0]])
    res = read(t, ranges=[{"start_key_open": b"b", "end_key_closed": b"e"}], reversed_=True, metadata=md)
    say("[with header] range (b,e] reversed", res[1] or [k for k, _ in res[0]])
    res = read(t, keys=[b"a", b"d", b"c"], reversed_=True, metadata=md)
    say("[with header] keys [a,d,c] reversed", res[1] or [k for k, _ in res[0]])
    must(t, b"c", [sc("cf2", b"z", 1000, b"z"), sc("cf1", b"a", 1000, b"a")])
    show("[with header] reversed, row 'c' cell order within a reversed row", read(t, keys=[b"c"], reversed_=True, metadata=md))


def q14():
    t = make_table("q14")
    keys = [b"\xff\xff", b"b", b"a\xff", b"\xff", b"a\x00", b"a", b"A", b"\x00", b"a\x00\x00", b"ab"]
    for k in keys:
        must(t, k, [sc("cf1", b"q", 1000, b"v")])
    res = read(t)
    say("full scan order", res[1] or [k for k, _ in res[0]])
    res = read(t, ranges=[{"start_key_closed": b"a", "end_key_open": b"b"}])
    say("prefix range [a, b)", res[1] or [k for k, _ in res[0]])
    res = read(t, ranges=[{"start_key_closed": b"\xff"}])
    say("range [\\xff, inf)", res[1] or [k for k, _ in res[0]])
    res = read(t, ranges=[{"start_key_open": b"a", "end_key_closed": b"a\xff"}])
    say("range (a, a\\xff]", res[1] or [k for k, _ in res[0]])
    res = read(t, ranges=[{"start_key_closed": b"b", "end_key_open": b"a"}])
    say("range [b, a) (start>end)", res[1] or [k for k, _ in res[0]])
    res = read(t, ranges=[{"start_key_closed": b"", "end_key_open": b""}])
    say("range ['' , '') (both empty)", res[1] or [k for k, _ in res[0]])
    res = read(t, keys=[b"b", b"a", b"a", b"nope"])
    say("row_keys [b, a, a, nope]", res[1] or [k for k, _ in res[0]])
    res = read(t, keys=[b"a"], ranges=[{"start_key_closed": b"a", "end_key_open": b"a\x01"}])
    say("row_keys [a] + range [a, a\\x01) (overlap)", res[1] or [k for k, _ in res[0]])
    res = read(t, keys=[b""])
    say("row_keys ['']", res[1] or [k for k, _ in res[0]])


def q15():
    t = make_table("q15")
    say("empty row key MutateRow", mutate(t, b"", [sc("cf1", b"q", 1000, b"v")]))
    for n in (4096, 4097, 10000, 65536):
        say(f"row key len {n}", mutate(t, b"k" * n, [sc("cf1", b"q", 1000, b"v")]))
    for n in (16 * 1024, 16 * 1024 + 1, 100000):
        say(f"qualifier len {n}", mutate(t, b"qlen", [sc("cf1", b"q" * n, 1000, b"v")]))
    for n in (4 * 1024 * 1024 + 1, 32 * 1024 * 1024):
        say(f"value len {n}", mutate(t, b"vlen%d" % n, [sc("cf1", b"q", 1000, b"x" * n)]))
    if os.environ.get("PROBE_BIG", "1") == "1":
        n = 100 * 1024 * 1024 + 1
        t0 = time.time()
        say(f"value len {n} (100 MiB + 1)", mutate(t, b"vbig", [sc("cf1", b"q", 1000, b"x" * n)]) + f" ({time.time() - t0:.1f}s)")
    say("MutateRow with zero mutations", mutate(t, b"z", []))
    say("family_name '' in SetCell", mutate(t, b"z", [sc("", b"q", 1000, b"v")]))
    # check-and-mutate / read-modify-write empty key
    try:
        DATA.check_and_mutate_row(request={"table_name": t, "row_key": b"", "true_mutations": [sc("cf1", b"q", 1000, b"v")]}, **NO_RETRY)
        say("CheckAndMutateRow empty key", "OK")
    except Exception as e:
        say("CheckAndMutateRow empty key", err(e))
    # MutateRows with empty key entry
    try:
        out = []
        for resp in DATA.mutate_rows(request={"table_name": t, "entries": [
                {"row_key": b"", "mutations": [sc("cf1", b"q", 1000, b"v")]},
                {"row_key": b"ok", "mutations": [sc("cf1", b"q", 1000, b"v")]}]}, **NO_RETRY):
            out += [(en.index, en.status.code, en.status.message) for en in resp.entries]
        say("MutateRows [empty key, 'ok']", out)
    except Exception as e:
        say("MutateRows [empty key, 'ok']", err(e))
    res = read(t, filt={"strip_value_transformer": True})
    say("rows present afterwards (key lengths)", res[1] or [len(k) for k, _ in res[0]])


def q16():
    t = make_table("q16")
    say("SetCell to family 'nope'", mutate(t, b"r", [sc("nope", b"q", 1000, b"v")]))
    say("DeleteFromFamily 'nope'", mutate(t, b"r", [dfam("nope")]))
    say("DeleteFromColumn 'nope':q", mutate(t, b"r", [dcol("nope", b"q")]))
    say("batch [SetCell cf1 valid, SetCell 'nope']", mutate(t, b"r2", [sc("cf1", b"q", 1000, b"v"), sc("nope", b"q", 1000, b"v")]))
    show("row r2 afterwards", read(t, keys=[b"r2"]))
    say("MutateRow on non-existent table", mutate(tname("no_such_table"), b"r", [sc("cf1", b"q", 1000, b"v")]))
    say("ReadRows on non-existent table", read(tname("no_such_table"))[1])


def q17():
    fams = ("m", "cf2", "zz", "cf1", "a", "B", "cf10")
    t = make_table("q17", families=fams)
    must(t, b"r", [sc(f, q, 1000, b"v") for f in reversed(fams) for q in (b"z", b"a", b"")])
    orders = set()
    for _ in range(20):
        rows, e = read(t, keys=[b"r"])
        if e:
            say("read", e)
            return
        seen = []
        for f, q, ts, v, l in rows[0][1]:
            if not seen or seen[-1] != f:
                seen.append(f)
        orders.add(tuple(seen))
    say("distinct family orders over 20 reads", orders)
    # Is the order fixed per table creation? Re-create the same table several times.
    per_table = []
    for i in range(6):
        tt = make_table(f"q17_{i}", families=fams)
        must(tt, b"r", [sc(f, b"q", 1000, b"v") for f in fams])
        rows, e = read(tt, keys=[b"r"])
        per_table.append(tuple(c[0] for c in rows[0][1]))
    say("family order for 6 freshly created tables (same CreateTable request)", per_table)
    # Families added one by one via ModifyColumnFamilies
    tt = make_table("q17_inc", families=())
    for f in ("m", "cf2", "zz", "cf1", "a"):
        ADMIN.modify_column_families(name=tt, modifications=[{"id": f, "create": {}}], **NO_RETRY)
    must(tt, b"r", [sc(f, b"q", 1000, b"v") for f in sorted(fams[:5])])
    rows, e = read(tt, keys=[b"r"])
    say("families created one by one in order m,cf2,zz,cf1,a -> read order", [c[0] for c in rows[0][1]])
    show("one read (qualifier order within family)", read(t, keys=[b"r"]))
    # interleave output order
    show("interleave(famre('m'), famre('a'), famre('m')) ", read(t, keys=[b"r"], filt=chain(
        {"cells_per_column_limit_filter": 1}, interleave(chain(famre("m"), {"apply_label_transformer": "L1"}),
                                                         chain(famre("a"), {"apply_label_transformer": "L2"}),
                                                         chain(famre("m"), {"apply_label_transformer": "L3"})))))


def q18():
    t = make_table("q18", families=("cf1",))
    names = ["1abc", "-abc", "_abc", "a.b", "a b", "a-b", "a_b", "a:b", "a/b", "A", "é", "", "a" * 64, "a" * 65,
             "a" * 200, "a\x00b", "a\nb", "*", ".", "cf1"]
    for n in names:
        try:
            ADMIN.modify_column_families(name=t, modifications=[{"id": n, "create": {}}], **NO_RETRY)
            r = "OK"
        except Exception as e:
            r = err(e)
        say(f"CreateColumnFamily {n!r}" if len(n) < 30 else f"CreateColumnFamily len={len(n)}", r)
    # via CreateTable
    for n in ("1abc", "a b", ""):
        try:
            ADMIN.delete_table(name=tname("q18b"), **NO_RETRY)
        except Exception:
            pass
        try:
            ADMIN.create_table(parent=PARENT, table_id="q18b", table={"column_families": {n: {}}}, **NO_RETRY)
            r = "OK"
        except Exception as e:
            r = err(e)
        say(f"CreateTable with family {n!r}", r)
    tb = ADMIN.get_table(name=t, **NO_RETRY)
    say("families now in table", sorted(tb.column_families.keys(), key=lambda s: (len(s), s))[:40])
    # Writing/reading a family with a weird name
    say("SetCell family 'a b'", mutate(t, b"r", [sc("a b", b"q", 1000, b"v")]))
    for tid in ("1tbl", "-tbl", "a.b", "a b", "t" * 51, "t" * 60):
        try:
            ADMIN.create_table(parent=PARENT, table_id=tid, table={}, **NO_RETRY)
            r = "OK"
        except Exception as e:
            r = err(e)
        say(f"CreateTable id {tid!r}" if len(tid) < 30 else f"CreateTable id len={len(tid)}", r)


def q19():
    t = make_table("q19")
    must(t, b"r", [sc("cf1", q, ts, b"%s@%d" % (q, ts)) for q in (b"a1", b"a2", b"b1") for ts in (1000, 2000, 3000)])
    show("chain(qre('a.*'), col_limit(2))", read(t, keys=[b"r"], filt=chain(qre(b"a.*"), col_limit(2))))
    show("chain(col_limit(2), qre('a.*'))", read(t, keys=[b"r"], filt=chain(col_limit(2), qre(b"a.*"))))
    show("chain(pass_all, block_all)", read(t, keys=[b"r"], filt=chain(PASS, BLOCK)))
    show("chain(block_all, pass_all)", read(t, keys=[b"r"], filt=chain(BLOCK, PASS)))
    show("interleave(block_all, qre('b1'))", read(t, keys=[b"r"], filt=interleave(BLOCK, qre(b"b1"))))
    show("chain() empty", read(t, keys=[b"r"], filt=chain()))
    show("interleave() empty", read(t, keys=[b"r"], filt=interleave()))
    show("interleave(pass_all, pass_all) (duplicates?)", read(t, keys=[b"r"], filt=chain(qre(b"b1"), interleave(PASS, PASS))))
    show("block_all_filter=false", read(t, keys=[b"r"], filt={"block_all_filter": False}))
    show("pass_all_filter=false", read(t, keys=[b"r"], filt={"pass_all_filter": False}))
    show("empty RowFilter {}", read(t, keys=[b"r"], filt={}))
    show("sink alone", read(t, keys=[b"r"], filt={"sink": True}))
    show("condition(predicate=qre('b1'), true=col_limit(1), false=block)", read(t, keys=[b"r"], filt={
        "condition": {"predicate_filter": qre(b"b1"), "true_filter": col_limit(1), "false_filter": BLOCK}}))
    show("condition(predicate=qre('zz'), true=pass) no false_filter", read(t, keys=[b"r"], filt={
        "condition": {"predicate_filter": qre(b"zz"), "true_filter": PASS}}))
    show("chain(col_limit(1), apply_label('x'), interleave(pass, apply_label('y')))", read(t, keys=[b"r"], filt=chain(
        qre(b"b1"), col_limit(1), {"apply_label_transformer": "x"}, interleave(PASS, {"apply_label_transformer": "y"}))))


def q20():
    from google.cloud.bigtable_admin_v2.types import table as tt
    t = make_table("q20", gc={"cf1": tt.GcRule(max_num_versions=1),
                              "cf2": tt.GcRule(max_age={"seconds": 1})})
    must(t, b"r", [sc("cf1", b"q", ts, b"v%d" % ts) for ts in (1000, 2000, 3000)]
         + [sc("cf2", b"q", ts, b"v%d" % ts) for ts in (1000, 2000, 3000)])
    show("immediately after write (cf1 max_versions=1, cf2 max_age=1s)", read(t, keys=[b"r"]))
    time.sleep(2)
    show("after 2 seconds", read(t, keys=[b"r"]))
    # modify GC rule on existing family: does anything change?
    ADMIN.modify_column_families(name=t, modifications=[{"id": "m", "update": {"gc_rule": {"max_num_versions": 1}}}], **NO_RETRY)
    must(t, b"r2", [sc("m", b"q", ts, b"v%d" % ts) for ts in (1000, 2000)])
    show("family m after update gc max_versions=1 then write 2 versions", read(t, keys=[b"r2"]))


ALL = {i: globals()[f"q{i}"] for i in range(1, 21)}

if __name__ == "__main__":
    sel = [int(a) for a in sys.argv[1:]] or sorted(ALL)
    for i in sel:
        print(f"=== Q{i}: {ALL[i].__doc__ or ''}".rstrip())
        try:
            ALL[i]()
        except Exception as e:  # noqa
            print(f"  EXPERIMENT CRASHED: {err(e)}")
        print()
