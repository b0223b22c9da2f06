"""The guarded call of `bench_runner.py`, with a conversation id (what every framework adapter sends), in two
source trees, interleaved: `python -m benchmarks.compare_trees OLD_SRC NEW_SRC [--rounds N]`.

Each round runs one process per tree, in turn, each timing the best CPU µs of a default `call_sync` and of
jsonschema-rs validation alone (best of 15 x 2,000 calls); the rounds alternate so that the host's speed, which
moves by up to 30% in a session, hits both trees alike. It prints each round and the median difference over
validation. For a count that the host's load cannot move, run the same call under valgrind's callgrind (see
bench_runner.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

PROBE = r'''
import time
from typing import Literal
import jsonschema_rs
import toolproof

def get_price(crop: Literal["onion", "groundnut", "jeera", "cotton_seed"], grade: Literal["A", "B"] = "A") -> float:
    """Get today's price for one crop, in rupees per kg."""
    return 285.0

tool = toolproof.tool(effect="read")(get_price)
runner = toolproof.Runner(toolproof.Toolset([tool]))
args = {"crop": "jeera", "grade": "A"}
ctx = toolproof.CallContext(conversation_id="chat-1", principal="u1")
validator = jsonschema_rs.validator_for(tool.input_schema, validate_formats=True)
assert runner.call_sync("get_price", args, context=ctx).ok

def best(fn):
    for _ in range(1000):
        fn()
    out = float("inf")
    for _ in range(15):
        runner.flush()
        start = time.process_time()
        for _ in range(2000):
            fn()
        runner.flush()
        out = min(out, (time.process_time() - start) / 2000 * 1e6)
    return out

print(best(lambda: runner.call_sync("get_price", args, context=ctx)), best(lambda: validator.is_valid(args)))
'''


def one(src: str) -> tuple[float, float]:
    """(guarded µs, validation µs) of one process importing toolproof from `src`."""
    env = {**os.environ, "PYTHONPATH": src, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    guarded, validation = out.stdout.split()
    return float(guarded), float(validation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=6)
    ns = parser.parse_args()
    over: dict[str, list[float]] = {"old": [], "new": []}
    for n in range(ns.rounds):
        for name in ("old", "new") if n % 2 == 0 else ("new", "old"):
            guarded, validation = one(getattr(ns, name))
            over[name].append(guarded - validation)
            print(f"round {n + 1} {name}: {guarded:.2f} µs, +{guarded - validation:.2f} over validation")
    old, new = statistics.median(over["old"]), statistics.median(over["new"])
    print(f"median over validation: old +{old:.2f} µs, new +{new:.2f} µs, new/old {new / old:.2f}x")


if __name__ == "__main__":
    main()
