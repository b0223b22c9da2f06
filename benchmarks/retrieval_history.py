"""Usage history as a prior, measured on queries it never saw: the weight chosen on one set, reported on the others.

For each set of `benchmarks.retrieval_sets`, the gold queries are split in two halves at random (seeds 0 to 4):
one half becomes the usage history (each query with the tools its gold steps name, what an audit trail of past
turns would hold), the other is searched with the default `ToolIndex` and judged. Weight 0 is the index without
history, the baseline of the same run. The weight is chosen on the tuning set only (best mean recall@5 over the
seeds; a tie goes to the smaller weight) and then reported on every set, with how many seeds it wins.

    PYTHONPATH=src:. python benchmarks/retrieval_history.py [--tune SET] [--seeds N] [--json F]
"""

from __future__ import annotations

import datetime as dt
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.retrieval_sets import load_set, set_names
from toolproof.retrieval._corpora import GoldQuery
from toolproof.retrieval._evaluate import gold_history, judge, summarize
from toolproof.retrieval._index import ToolIndex

#: The history weights tried (0: no history). The index's own default is chosen from this grid.
GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


def split(gold: list[GoldQuery], seed: int) -> tuple[list[GoldQuery], list[GoldQuery]]:
    """(history half, judged half): disjoint, the same for every weight of one seed."""
    order = sorted(gold, key=lambda q: q.qid)
    random.Random(seed).shuffle(order)
    half = len(order) // 2
    return order[:half], order[half:]


def _recall5(index: ToolIndex, judged: list[GoldQuery]) -> float:
    return summarize([judge(q, index.search_ids(q.text, 10), 0.0) for q in judged]).recall[5]


def measure(name: str, seeds: int) -> dict[float, list[float]]:
    """Weight -> recall@5 on the judged half, one value per seed."""
    entries, gold = load_set(name)
    index = ToolIndex(entries)
    out: dict[float, list[float]] = {w: [] for w in GRID}
    for seed in range(seeds):
        past, judged = split(gold, seed)
        index.history = gold_history(past)
        for weight in GRID:
            index.history_weight = weight
            out[weight].append(_recall5(index, judged))
    return out


def main() -> None:
    tune = sys.argv[sys.argv.index("--tune") + 1] if "--tune" in sys.argv else "StableToolBench"
    seeds = int(sys.argv[sys.argv.index("--seeds") + 1]) if "--seeds" in sys.argv else 5
    start = time.perf_counter()
    results = {name: measure(name, seeds) for name in set_names()}
    chosen = max(GRID, key=lambda w: (round(statistics.mean(results[tune][w]), 6), -w))
    names = set_names()
    print(f"date {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}; half of each set's queries as history, "
          f"the other half judged, seeds 0-{seeds - 1}; weight chosen on {tune} only: {chosen}")
    print("| history weight | " + " | ".join(f"{n}{' (tuned)' if n == tune else ''}" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for weight in GRID:
        cells = []
        for n in names:
            mean = statistics.mean(results[n][weight])
            pairs = list(zip(results[n][weight], results[n][0.0], strict=True))
            up, down = sum(a > b for a, b in pairs), sum(a < b for a, b in pairs)
            ratio = mean / statistics.mean(results[n][0.0])
            cells.append(f"{mean:.3f}" if weight == 0 else f"{mean:.3f} ({ratio:.3f}x; seeds {up} up, {down} down)")
        mark = " (chosen)" if weight == chosen else " (none)" if weight == 0 else ""
        print(f"| {weight}{mark} | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - start:.0f} s)")
    if "--json" in sys.argv:
        out: dict[str, Any] = {"tune": tune, "chosen": chosen, "seeds": seeds,
                               "sets": {n: {str(w): v for w, v in r.items()} for n, r in results.items()}}
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
