#!/usr/bin/env python3
"""Probe filter details and aggregate overflow that the documentation leaves open.

Usage (with the emulator on localhost:8086 and probe.py's virtualenv):
    BIGTABLE_EMULATOR_HOST=localhost:8086 ./venv/bin/python probe_filters_more.py
Reuses probe.py's and probe_aggregates.py's helpers; results are in FINDINGS.md.
"""
import sys
sys.argv = ["probe.py"]
exec(open("probe.py").read().split("# --------------------------------------------------------------------------- experiments")[0])
src = open("probe_aggregates.py").read()
exec(src[src.index("from google.cloud.bigtable_admin_v2.types import types"):src.index("for agg in")])

t = make_table("more")
must(t, b"r", [sc("cf1", b"a", 1000, b"x"), sc("cf1", b"b", 2000, b"y"), sc("cf1", b"b", 1000, b"z")])
show("interleave(label L1 via chain(qre a|b, label L1), chain(qre a, label L2))",
     read(t, keys=[b"r"], filt=interleave(chain(qre(b"a|b"), {"apply_label_transformer": "L1"}),
                                         chain(qre(b"a"), {"apply_label_transformer": "L2"}))))
show("interleave(chain(qre a, label L2), chain(qre a|b, label L1))",
     read(t, keys=[b"r"], filt=interleave(chain(qre(b"a"), {"apply_label_transformer": "L2"}),
                                         chain(qre(b"a|b"), {"apply_label_transformer": "L1"}))))
show("condition(predicate=chain(qre a, sink), true=pass_all)",
     read(t, keys=[b"r"], filt={"condition": {"predicate_filter": chain(qre(b"a"), {"sink": True}),
                                               "true_filter": {"pass_all_filter": True},
                                               "false_filter": {"block_all_filter": True}}}))
show("condition(predicate=sink, true=qre b)",
     read(t, keys=[b"r"], filt={"condition": {"predicate_filter": {"sink": True}, "true_filter": qre(b"b")}}))
show("cells_per_row_limit 0", read(t, keys=[b"r"], filt={"cells_per_row_limit_filter": 0}))
show("cells_per_row_offset 0", read(t, keys=[b"r"], filt={"cells_per_row_offset_filter": 0}))
show("cells_per_column_limit 0", read(t, keys=[b"r"], filt={"cells_per_column_limit_filter": 0}))

a = make_agg("agg_over", "sum")
big = 2**63 - 1
print("sum: add max then 1:", mutate(a, b"r", [add("agg", b"q", 1000, big), add("agg", b"q", 1000, 1)]))
show("sum after overflow", read(a, keys=[b"r"]))
print("sum: add at server time -1:", mutate(a, b"s", [{"add_to_cell": {"family_name": "agg", "column_qualifier": {"raw_value": b"q"}, "timestamp": {"raw_timestamp_micros": -1}, "input": {"int_value": 4}}}]))
show("sum server time", read(a, keys=[b"s"]))
mn = make_agg("agg_min_over", "min")
print("min: add -5, 7, -9 in separate mutations:", [mutate(mn, b"r", [add("agg", b"q", 1000, v)]) for v in (-5, 7, -9)])
show("min after three", read(mn, keys=[b"r"]))
