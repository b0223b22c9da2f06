"""Where lint's CPU time goes on the benchmark's 10,000 definitions: as run, with the cyclic collector off, and
the floor (JSON read and `ToolDef`s built, no rule). Medians of three; run from the repository root:

    .venv/bin/python scripts/measure_lint_gc.py
"""
import gc
import json
import sys
import time

sys.path[:0] = ["src", "."]
from benchmarks.bench_lint import make_definitions  # noqa: E402
from toolproof.lint import LintConfig, from_definitions, lint_tooldefs  # noqa: E402

defs = make_definitions(10_000)
text = json.dumps({"tools": defs})

def once(gc_on: bool, rules: bool) -> float:
    gc.collect()
    if not gc_on:
        gc.disable()
    t = time.process_time()
    tools = from_definitions(json.loads(text))
    if rules:
        lint_tooldefs(tools, LintConfig())
    out = time.process_time() - t
    gc.enable()
    return out

for label, gc_on, rules in [("as is", True, True), ("gc off", False, True), ("floor (no rules)", True, False)]:
    runs = sorted(once(gc_on, rules) for _ in range(3))
    print(f"{label:18} median CPU {runs[1]:.2f} s  (min {runs[0]:.2f})")
