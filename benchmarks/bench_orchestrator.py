"""Success-path cost of the orchestrator, against tenacity + pybreaker around the same handler, same run.

Cases (µs per call, best of several interleaved rounds):
- `handler`: the bare function; the zero for every "overhead".
- `tenacity+pybreaker`: the handler in a pybreaker breaker inside a tenacity retry (3 attempts, exponential
  jitter), the usual composition.
- `validate+handler`: jsonschema-rs validation of the arguments, then the handler (the foundation's floor).
- `runner, features off`: `Runner(toolset)` with retry, breaker, guard, bucket, budget and audit off.
- `runner, orchestrated`: the defaults: retry policy, breaker, token bucket, loop guard, in-memory audit
  (the background writer's work is included: the timing ends after `flush()`).
- `runner, orchestrated, run context`: the same, calls carrying a run and conversation id (run budget and
  loop guard engaged).
- `runner, sqlite audit`: the audit trail in a SQLite file (n/a until the SQLite store exists).

Ratios: tenacity+pybreaker's overhead over the handler divided by the orchestration's overhead (runner
orchestrated minus runner features off): the target is >= 5. And what the whole guarded call adds over
validating with jsonschema-rs.
Run: `python benchmarks/bench_orchestrator.py` (`--quick` for a short run).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import jsonschema_rs
import pybreaker
import tenacity

from toolproof import CallContext, Runner, Toolset, tool

ARGS = {"crop": "onion", "quantity_kg": 40}


@tool(effect="read")
def get_price(crop: Literal["onion", "jeera"], quantity_kg: int) -> float:
    """Get the price of a quantity of one crop, in rupees.

    Use it for a quote. Do not use it to order. Returns the price.

    Args:
        crop: The crop.
        quantity_kg: How many kg.
    """
    return 41.5 * quantity_kg


def _time(fn: Callable[[], Any], n: int, after: Callable[[], Any] | None = None) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    if after is not None:
        after()
    return (time.perf_counter() - start) / n * 1e6


def _no_features(ts: Toolset) -> Runner:
    return Runner(ts, retry=None, breakers=None, loop_guard=None, retry_bucket=None, budget=None, audit=False)


def measure(quick: bool) -> dict[str, float | None]:
    n = 3_000 if quick else 20_000
    rounds = 3 if quick else 7
    ts = Toolset([get_price])
    handler = get_price.handler
    validator = jsonschema_rs.validator_for(get_price.input_schema)

    breaker = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30)

    @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_exponential_jitter(1, 20),
                    retry=tenacity.retry_if_exception_type((ConnectionError, TimeoutError)), reraise=True)
    def composed(**kwargs: Any) -> Any:
        return breaker.call(handler, **kwargs)

    def validated() -> Any:
        validator.validate(ARGS)
        return handler(**ARGS)

    off = _no_features(ts)
    on = Runner(ts)
    ctx = CallContext(run_id="bench-run", conversation_id="bench-chat")
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]] = {
        "handler": (lambda: handler(**ARGS), None),
        "tenacity+pybreaker": (lambda: composed(**ARGS), None),
        "validate+handler": (validated, None),
        "runner, features off": (lambda: off.call_sync("get_price", ARGS), None),
        "runner, orchestrated": (lambda: on.call_sync("get_price", ARGS), on.flush),
        "runner, orchestrated, run context": (lambda: on.call_sync("get_price", ARGS, context=ctx), on.flush),
    }
    sqlite_runner: Runner | None = None
    tmp = tempfile.TemporaryDirectory()
    try:
        sqlite_runner = Runner(ts, store=f"sqlite:///{Path(tmp.name) / 'audit.sqlite3'}")
    except ValueError:  # the SQLite store is not there yet
        sqlite_runner = None
    if sqlite_runner is not None:
        sr = sqlite_runner
        cases["runner, sqlite audit"] = (lambda: sr.call_sync("get_price", ARGS), sr.flush)

    samples: dict[str, list[float]] = {name: [] for name in cases}
    for fn, _ in cases.values():  # warm up
        for _ in range(500):
            fn()
    for _ in range(rounds):
        for name, (fn, after) in cases.items():
            samples[name].append(_time(fn, n, after))
    on.close()
    off.close()
    if sqlite_runner is not None:
        sqlite_runner.close()
    tmp.cleanup()
    out: dict[str, float | None] = {name: min(values) for name, values in samples.items()}
    out["_median_orchestrated"] = statistics.median(samples["runner, orchestrated"])
    out.setdefault("runner, sqlite audit", None)
    return out


def run(quick: bool = False) -> list[dict[str, Any]]:
    m = measure(quick)
    bare = m["handler"] or 0.0
    rows: list[dict[str, Any]] = []

    def row(case: str, value: float | None, baseline: float | None = None, ratio: float | None = None,
            unit: str = "µs/call") -> None:
        rows.append({"benchmark": "orchestrator", "case": case, "value": value, "unit": unit,
                     "baseline": baseline, "ratio": ratio})

    for name in ("handler", "tenacity+pybreaker", "validate+handler", "runner, features off",
                 "runner, orchestrated", "runner, orchestrated, run context", "runner, sqlite audit"):
        row(name, m[name], bare if name != "handler" else None)
    composed = (m["tenacity+pybreaker"] or 0.0) - bare
    orchestration = max((m["runner, orchestrated"] or 0.0) - (m["runner, features off"] or 0.0), 0.01)
    row("overhead: tenacity+pybreaker over handler", composed)
    row("overhead: orchestration (orchestrated - features off)", orchestration, composed, composed / orchestration)
    guarded = (m["runner, orchestrated"] or 0.0) - (m["validate+handler"] or 0.0)
    row("overhead: orchestrated runner over validate+handler", guarded)
    plain = (m["runner, features off"] or 0.0) - (m["validate+handler"] or 0.0)
    row("overhead: runner features off over validate+handler", plain)
    sqlite = m["runner, sqlite audit"]
    row("overhead: sqlite audit over in-memory audit",
        None if sqlite is None else sqlite - (m["runner, orchestrated"] or 0.0))
    return rows


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    rows = run(quick="--quick" in sys.argv)
    table = Table("case", "value", "unit", "baseline", "ratio", title="orchestrator: success path")
    for r in rows:
        def fmt(v: Any) -> str:
            return "n/a" if v is None else f"{v:.2f}"

        table.add_row(r["case"], fmt(r["value"]), r["unit"], fmt(r["baseline"]), fmt(r["ratio"]))
    Console().print(table)


Mode = Literal["quick", "full"]

if __name__ == "__main__":
    main()
