"""toolproof, through its public API: `toolproof.tool`, `toolproof.Toolset`, `toolproof.Runner`.

The scripted model is `simple_loop`; it reads the envelope's `next_action` (retry means try again; escalate
and ask_person mean do not call again). Writes go through a Runner on a SQLite store when this checkout's
`open_store` accepts `sqlite:///...`, else in memory (noted in the table).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.peers._common import TIMEOUT_S, Observation, OrderBook, Reply, Scenario, make_place_order, simple_loop

NAME = "toolproof"
DIST = "toolproof"


def available() -> bool:
    return True


def _reply(envelope: Any) -> Reply:
    text = envelope.to_json()
    if envelope.ok:
        return Reply("envelope ok", text, False, True, False, False, "ok")
    err = envelope.error
    action = str(getattr(err.next_action, "value", err.next_action))
    klass = json.loads(text)["error"]["class"]
    key = f", idempotency_key={err.idempotency_key}" if err.idempotency_key else ""
    return Reply("envelope ok=false", text, True, True, action == "retry", action in ("escalate", "ask_person"),
                 f"{klass}, next_action={action}{key}")


def _runner(scenario: Scenario, book: OrderBook, tmp: Path, obs: Observation) -> Any:
    import toolproof

    tool = toolproof.tool(effect="write", idempotent=False, timeout_s=TIMEOUT_S if scenario.timeout else None)(
        make_place_order(book)
    )
    obs.schema_closed = tool.input_schema.get("additionalProperties") is False
    toolset = toolproof.Toolset([tool])
    url = f"sqlite:///{tmp / f'toolproof-{scenario.key}.sqlite3'}"
    try:
        runner = toolproof.Runner(toolset, store=url)
        obs.extra["store"] = url
    except ValueError as exc:  # this checkout has no SQLite store yet
        runner = toolproof.Runner(toolset)
        obs.extra["store"] = "memory://"
        obs.notes.append(f"store: memory ({exc})")
    return runner


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from toolproof import CallContext

    obs = Observation(NAME, scenario.key)
    runner = _runner(scenario, book, tmp, obs)
    context = CallContext(conversation_id=f"conv-{scenario.key}")

    async def send(args: dict[str, Any]) -> Reply:
        return _reply(await runner.call("place_order", args, context=context))

    try:
        await simple_loop(scenario, send, obs)
    finally:
        runner.close()
    if scenario.timeout:  # the sync entry point, same tool, same fault, on its own orders table
        sync_book = OrderBook(tmp / f"orders-toolproof-sync-{scenario.key}.sqlite3", scenario.body)
        sync_runner = _runner(scenario, sync_book, tmp, Observation(NAME, scenario.key))
        try:
            sync = _reply(sync_runner.call_sync("place_order", dict(scenario.args), context=context))
            sync_book.wait_idle()
            obs.extra["call_sync"] = {"reply": sync.summary, "rows": sync_book.rows()}
        finally:
            sync_runner.close()
            sync_book.close()
    return obs


def overhead_invokers(fn: Any, args: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    import toolproof

    runner = toolproof.Runner(toolproof.Toolset([toolproof.tool(effect="write")(fn)]))
    name = fn.__name__

    async def call() -> Any:
        return await runner.call(name, args)

    return {
        "toolproof Runner.call_sync": ("sync", lambda: runner.call_sync(name, args)),
        "toolproof await Runner.call": ("async", call),
    }
