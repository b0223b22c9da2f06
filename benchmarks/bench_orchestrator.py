"""Success-path cost of the orchestrator, against tenacity + pybreaker around the same handler, same run.

Cases (µs per call, best of several interleaved rounds):
- `handler`: the bare function; the zero for every "overhead".
- `tenacity+pybreaker`: the handler in a pybreaker breaker inside a tenacity retry (3 attempts, exponential
  jitter), the usual composition.
- `validate+handler`: jsonschema-rs validation of the arguments, then the handler (the foundation's floor).
- `runner, features off`: `Runner(toolset)` with retry, breaker, guard, bucket, budget and audit off.
- `runner, orchestrated`: the defaults: retry policy, breaker, token bucket, loop guard, in-memory audit
  (the background writer's work is included: the timing ends after `flush()`).
- `runner, orchestrated, no audit`: the same with `audit=False` (what the audit trail costs, by difference).
- `runner, orchestrated, run context`: the defaults, calls carrying a run and conversation id (run budget and
  loop guard engaged).
- `runner, sqlite audit`: the audit trail in a SQLite file (n/a until the SQLite store exists).

Values are the best round; overheads are medians of differences measured in the same round (robust to
drift on a shared machine). Ratio: tenacity+pybreaker's overhead over the handler divided by the
orchestration's overhead (runner orchestrated minus runner features off): the target is >= 5. And what
the whole guarded call adds over validating with jsonschema-rs.
Run: `python benchmarks/bench_orchestrator.py` (`--quick` for a short run).
"""

from __future__ import annotations

import gc
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


def measure(quick: bool) -> dict[str, list[float]]:
    # Many short interleaved rounds, best of each: robust to a machine shared with other work.
    n = 1_000 if quick else 4_000
    rounds = 5 if quick else 21
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
    unaudited = Runner(ts, audit=False)
    ctx = CallContext(run_id="bench-run", conversation_id="bench-chat")
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]] = {
        "handler": (lambda: handler(**ARGS), None),
        "tenacity+pybreaker": (lambda: composed(**ARGS), None),
        "validate+handler": (validated, None),
        "runner, features off": (lambda: off.call_sync("get_price", ARGS), None),
        "runner, orchestrated": (lambda: on.call_sync("get_price", ARGS), on.flush),
        "runner, orchestrated, no audit": (lambda: unaudited.call_sync("get_price", ARGS), None),
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
    names = list(cases)
    for i in range(rounds):
        # Alternate the order each round, so that drift on a shared machine falls on every case alike.
        for name in names if i % 2 == 0 else reversed(names):
            fn, after = cases[name]
            gc.collect()
            samples[name].append(_time(fn, n, after))
    on.close()
    off.close()
    unaudited.close()
    if sqlite_runner is not None:
        sqlite_runner.close()
    tmp.cleanup()
    return samples


def _paired(samples: dict[str, list[float]], a: str, b: str) -> float | None:
    """Median over rounds of (a - b) measured in the same round: robust to drift between rounds."""
    if a not in samples or b not in samples:
        return None
    return statistics.median(x - y for x, y in zip(samples[a], samples[b], strict=True))


def run(quick: bool = False) -> list[dict[str, Any]]:
    samples = measure(quick)
    best = {name: min(values) for name, values in samples.items()}
    rows: list[dict[str, Any]] = []

    def row(case: str, value: float | None, baseline: float | None = None, ratio: float | None = None,
            unit: str = "µs/call") -> None:
        rows.append({"benchmark": "orchestrator", "case": case, "value": value, "unit": unit,
                     "baseline": baseline, "ratio": ratio})

    for name in ("handler", "tenacity+pybreaker", "validate+handler", "runner, features off",
                 "runner, orchestrated", "runner, orchestrated, no audit", "runner, orchestrated, run context",
                 "runner, sqlite audit"):
        row(name, best.get(name), None if name == "handler" else best["handler"])

    def ratio(base: float | None, value: float | None) -> float | None:
        return None if base is None or value is None or value < 0.05 else base / value

    composed = _paired(samples, "tenacity+pybreaker", "handler")
    orchestration = _paired(samples, "runner, orchestrated", "runner, features off")
    no_audit = _paired(samples, "runner, orchestrated, no audit", "runner, features off")
    row("overhead: tenacity+pybreaker over handler", composed)
    row("overhead: orchestration (orchestrated - features off)", orchestration, composed,
        ratio(composed, orchestration))
    row("overhead: orchestration without the audit trail", no_audit, composed, ratio(composed, no_audit))
    row("overhead: orchestrated runner over validate+handler", _paired(samples, "runner, orchestrated",
                                                                        "validate+handler"))
    row("overhead: runner features off over validate+handler", _paired(samples, "runner, features off",
                                                                        "validate+handler"))
    row("overhead: sqlite audit over in-memory audit", _paired(samples, "runner, sqlite audit",
                                                                "runner, orchestrated"))
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


if __name__ == "__main__":
    main()
