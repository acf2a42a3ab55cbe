#!/usr/bin/env python3
"""Probe the emulator's ReadModifyWriteRow: timestamps, missing cells, overflow, rule order.

Usage (with the emulator on localhost:8086 and probe.py's virtualenv):
    BIGTABLE_EMULATOR_HOST=localhost:8086 ./venv/bin/python probe_rmw.py
Reuses probe.py's helpers; results are in FINDINGS.md.
"""
import sys, time
sys.argv = ["probe.py"]
exec(open("probe.py").read().split("# --------------------------------------------------------------------------- questions")[0])
t = make_table("rmw")
def rmw(key, rules):
    try:
        r = DATA.read_modify_write_row(request={"table_name": t, "row_key": key, "rules": rules}, **NO_RETRY)
        return [(f.name, c.qualifier, c.timestamp_micros, c.value) for f in r.row.families for c in f.columns for c in c.cells] if False else [(f.name, col.qualifier, cell.timestamp_micros, cell.value) for f in r.row.families for col in f.columns for cell in col.cells]
    except Exception as e:
        return err(e)
now = int(time.time() * 1e6)
print("now", now)
print("append missing:", rmw(b"a", [{"family_name": "cf1", "column_qualifier": b"q", "append_value": b"xy"}]))
print("incr missing:", rmw(b"b", [{"family_name": "cf1", "column_qualifier": b"n", "increment_amount": 5}]))
must(t, b"c", [sc("cf1", b"n", 4_000_000_000_000_000, (7).to_bytes(8, "big", signed=True))])
print("incr future cell:", rmw(b"c", [{"family_name": "cf1", "column_qualifier": b"n", "increment_amount": 1}]))
must(t, b"d", [sc("cf1", b"n", 1000, (7).to_bytes(8, "big", signed=True))])
print("incr old cell:", rmw(b"d", [{"family_name": "cf1", "column_qualifier": b"n", "increment_amount": -10}]))
must(t, b"e", [sc("cf1", b"n", 1000, b"abc")])
print("incr wrong length:", rmw(b"e", [{"family_name": "cf1", "column_qualifier": b"n", "increment_amount": 1}]))
must(t, b"f", [sc("cf1", b"n", 1000, (2**63-1).to_bytes(8, "big", signed=True))])
print("incr overflow:", rmw(b"f", [{"family_name": "cf1", "column_qualifier": b"n", "increment_amount": 1}]))
print("two rules same column:", rmw(b"g", [{"family_name": "cf1", "column_qualifier": b"n", "increment_amount": 1}, {"family_name": "cf1", "column_qualifier": b"n", "increment_amount": 2}]))
print("append then incr same column:", rmw(b"h", [{"family_name": "cf1", "column_qualifier": b"q", "append_value": b"a"}, {"family_name": "cf1", "column_qualifier": b"q", "append_value": b"b"}]))
print("unknown family:", rmw(b"i", [{"family_name": "nope", "column_qualifier": b"q", "append_value": b"a"}]))
print("no rules:", rmw(b"j", []))
print("empty append:", rmw(b"k", [{"family_name": "cf1", "column_qualifier": b"q", "append_value": b""}]))
print("read after:", read(t, keys=[b"c", b"d", b"g"]))
