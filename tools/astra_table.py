"""Prints docs/chakra-export.md's table: the twin's step against an independent interpreter of
ASTRA-sim's rules (tests/python/astra_semantics.py) on the layouts of
tests/python/test_astra_export.py, split into the one-communication rule and the missing compute
slowdown. Run: /usr/bin/python3 tools/astra_table.py"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "python")]

import astra_semantics as A  # noqa: E402
import clustertwin as ct  # noqa: E402
import test_astra_export as T  # noqa: E402

print("| layout | twin step (ms) | ASTRA-sim rules (ms) | difference | one communication per GPU "
      "| no compute slowdown during communication |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for label, (sc, _) in T.LAYOUTS.items():
    with tempfile.TemporaryDirectory() as d:
        ct.export_chakra(ct.Scenario(sc), d)
        res = ct.run(ct.Scenario(sc))
        ranks, groups, _ = A.read_export(d)
    comp, send, coll = T.twin_durations(ranks, res.timeline)
    twin = res.report["step_time_s"] - res.report["breakdown"]["straggler_s"]
    rules = T.step_end(A.interpret(ranks, groups, send, coll)[0], ranks)
    one_comm = T.step_end(A.interpret(ranks, groups, send, coll, comp_seconds=comp)[0], ranks)
    no_slowdown = T.step_end(A.interpret(ranks, groups, send, coll, one_comm=False)[0], ranks)
    print(f"| {label} | {twin * 1e3:.3f} | {rules * 1e3:.3f} | {rules / twin - 1:+.2%} | {one_comm / twin - 1:+.2%} "
          f"| {no_slowdown / twin - 1:+.2%} |")
