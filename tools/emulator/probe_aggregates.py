#!/usr/bin/env python3
"""Probe the emulator's aggregate column families (sum, min, max over int64).

Usage (with the emulator on localhost:8086 and probe.py's virtualenv):
    BIGTABLE_EMULATOR_HOST=localhost:8086 ./venv/bin/python probe_aggregates.py
Reuses probe.py's helpers; results are in FINDINGS.md.
"""
import sys, time
sys.argv = ["probe.py"]
exec(open("probe.py").read().split("# --------------------------------------------------------------------------- questions")[0])
from google.cloud.bigtable_admin_v2.types import types as admin_types
def make_agg(tid, agg):
    try: ADMIN.delete_table(name=tname(tid), **NO_RETRY)
    except Exception: pass
    cf = admin_table.ColumnFamily()
    t = admin_types.Type()
    t.aggregate_type.input_type.int64_type.encoding.big_endian_bytes = admin_types.Type.Int64.Encoding.BigEndianBytes()
    getattr(t.aggregate_type, agg)._pb.SetInParent() if False else None
    if agg == "sum": t.aggregate_type.sum = admin_types.Type.Aggregate.Sum()
    if agg == "min": t.aggregate_type.min = admin_types.Type.Aggregate.Min()
    if agg == "max": t.aggregate_type.max = admin_types.Type.Aggregate.Max()
    cf.value_type = t
    plain = admin_table.ColumnFamily()
    ADMIN.create_table(parent=PARENT, table_id=tid, table=admin_table.Table(column_families={"agg": cf, "cf1": plain}), **NO_RETRY)
    return tname(tid)
def add(fam, q, ts, n):
    return {"add_to_cell": {"family_name": fam, "column_qualifier": {"raw_value": q}, "timestamp": {"raw_timestamp_micros": ts}, "input": {"int_value": n}}}
for agg in ["sum", "min", "max"]:
    try:
        t = make_agg("agg_" + agg, agg)
    except Exception as e:
        print(agg, "create:", err(e)); continue
    print(agg, "add 5,3 @1000; 7 @2000:", mutate(t, b"r", [add("agg", b"q", 1000, 5), add("agg", b"q", 1000, 3), add("agg", b"q", 2000, 7)]))
    print(agg, "read:", read(t, keys=[b"r"]))
    print(agg, "set 8 bytes on agg:", mutate(t, b"r", [sc("agg", b"q", 1000, (100).to_bytes(8, "big", signed=True))]))
    print(agg, "read:", read(t, keys=[b"r"]))
    print(agg, "add after set:", mutate(t, b"r", [add("agg", b"q", 1000, 1)]))
    print(agg, "read:", read(t, keys=[b"r"]))
    print(agg, "add to plain family:", mutate(t, b"r", [add("cf1", b"q", 1000, 1)]))
    print(agg, "set 3 bytes on agg:", mutate(t, b"r", [sc("agg", b"z", 1000, b"abc")]))
    print(agg, "add at ts 1500 (non-ms):", mutate(t, b"r", [add("agg", b"q", 1500, 1)]))
    print(agg, "delete col then add:", mutate(t, b"r", [dcol("agg", b"q"), add("agg", b"q", 1000, 2)]))
    print(agg, "read:", read(t, keys=[b"r"]))
