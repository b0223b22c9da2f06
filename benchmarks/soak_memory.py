"""A soak: 200,000 calls on one Runner with the in-memory store and every default on (audit trail, loop guard,
journal, retry, breakers), printing the process's RSS at 0, 50k, 100k, 150k and 200k calls and the bound.

    python benchmarks/soak_memory.py                  # 200,000 calls
    python benchmarks/soak_memory.py --calls 40000    # shorter
    python benchmarks/soak_memory.py --calls 6000 --note-chars 90000   # big arguments: the byte bounds hold

The mix, per 20 calls: 11 reads, 6 writes (each with new arguments, so each is journaled and settled: the
store's finished intents fill to their bound), 1 write repeat (replayed from the journal), 1 call with an
invalid argument (the loop guard's failure memory and an audit row with its failing field) and 1 tool error
that gives up (a stop record). Calls spread over 5,000 conversations (each a loop-guard scope and a run),
20 calls in a row each, with a 200-character note in every argument set so rows have a realistic size. Not
a speed claim: the rate is printed for scale only.

Exit status 1 when the RSS at the end passes the bound, so a script can use it as a check.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
import time
from typing import Any

import toolproof
from toolproof.contract._errors import NotFound

#: The documented bound on the RSS of the whole process after 200,000 calls (docs/security.md, "Memory").
RSS_BOUND_MB = 256
CONVERSATIONS = 5_000
NOTE = "x" * 200


def rss_mb() -> float:
    """The resident set size of this process, from /proc (Linux), in MiB."""
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def toolset() -> toolproof.Toolset:
    @toolproof.tool(effect="read")
    def get_stock(crop: str, note: str) -> dict[str, Any]:
        """Stock of one crop.

        Args:
            crop: The crop.
            note: Free text.
        """
        return {"crop": crop, "kg": len(crop) * 100, "note": note}

    @toolproof.tool(effect="write", idempotent=False)
    def place_order(crop: str, quantity_kg: int, note: str) -> dict[str, Any]:
        """Place one order.

        Args:
            crop: The crop.
            quantity_kg: Quantity in kg.
            note: Free text.
        """
        if crop == "missing":
            raise NotFound("No such crop.", code="CROP_NOT_FOUND", field="crop")
        return {"order": f"{crop}-{quantity_kg}", "note": note}

    @toolproof.tool(effect="read")
    def flaky_report(day: int) -> dict[str, int]:
        """A report whose upstream is broken.

        Args:
            day: The day.
        """
        raise RuntimeError(f"report backend crashed on day {day}")

    return toolproof.Toolset([get_stock, place_order, flaky_report])


def call(runner: toolproof.Runner, i: int, note: str = NOTE) -> toolproof.Envelope:
    conversation = f"c{i // 20 % CONVERSATIONS}"  # 20 calls in a row per conversation, then the next one
    ctx = toolproof.CallContext(conversation_id=conversation, run_id=conversation, principal="soak")
    slot = i % 20
    # A fresh string per call (as a server decoding each request has): a shared one would cost its bytes once.
    note = f"{i}{note}"
    if slot < 11:
        return runner.call_sync("get_stock", {"crop": f"crop{i % 97}", "note": note}, context=ctx)
    if slot < 17:
        return runner.call_sync("place_order", {"crop": f"crop{i % 97}", "quantity_kg": i, "note": note}, context=ctx)
    if slot == 17:  # the write of slot 16 (same conversation), sent again: replayed
        return runner.call_sync("place_order", {"crop": f"crop{(i - 1) % 97}", "quantity_kg": i - 1,
                                                "note": f"{i - 1}{note[len(str(i)):]}"}, context=ctx)
    if slot == 18:
        return runner.call_sync("place_order", {"crop": "onion", "quantity_kg": "lots", "note": note}, context=ctx)
    return runner.call_sync("flaky_report", {"day": i}, context=ctx)


def soak(calls: int, every: int, note: str = NOTE) -> dict[str, Any]:
    # Every failing call logs a warning (and its traceback): kept, but not printed 20,000 times.
    logging.getLogger("toolproof").addHandler(logging.NullHandler())
    logging.getLogger("toolproof").propagate = False
    runner = toolproof.Runner(toolset())
    gc.collect()
    points = [{"calls": 0, "rss_mb": round(rss_mb(), 1), "s": 0.0}]
    outcomes: dict[str, int] = {}
    started = time.perf_counter()
    for i in range(1, calls + 1):
        envelope = call(runner, i, note)
        kind = "replayed" if envelope.meta.replayed else "ok" if envelope.ok else str(envelope.error.error_class)  # type: ignore[union-attr]
        outcomes[kind] = outcomes.get(kind, 0) + 1
        if i % every == 0 or i == calls:
            if runner.writer is not None:
                runner.writer.flush()
            gc.collect()
            points.append({"calls": i, "rss_mb": round(rss_mb(), 1), "s": round(time.perf_counter() - started, 1)})
            print(f"{i:>8,} calls  RSS {points[-1]['rss_mb']:>7.1f} MiB  {points[-1]['s']:>7.1f} s", flush=True)
    store: Any = runner.store
    held = {"audit": len(store.list_audit(limit=10**9)), "intents": len(store.journal_list(limit=10**9)),
            "stops": len(store.list_stops(limit=10**9))}
    runner.close()
    return {"calls": calls, "points": points, "outcomes": outcomes, "held": held, "bound_mb": RSS_BOUND_MB,
            "calls_per_s": round(calls / (time.perf_counter() - started))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--note-chars", type=int, default=len(NOTE),
                        help="characters of the free-text argument of every call (default 200)")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON line at the end")
    args = parser.parse_args()
    summary = soak(args.calls, max(args.calls // 4, 1), "x" * args.note_chars)
    final = summary["points"][-1]["rss_mb"]
    print(f"bound {RSS_BOUND_MB} MiB; end {final} MiB; held {summary['held']}; outcomes {summary['outcomes']}; "
          f"{summary['calls_per_s']:,} calls/s")
    if args.json:
        print(json.dumps(summary))
    return 0 if final <= RSS_BOUND_MB else 1


if __name__ == "__main__":
    sys.exit(main())
