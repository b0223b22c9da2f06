"""toolproof, through its public API: `toolproof.tool`, `toolproof.Toolset`, `toolproof.Runner`.

The scripted model is `simple_loop`; it reads the envelope's `next_action` (retry means try again; escalate
and ask_person mean do not call again). Writes go through a Runner on a SQLite store when this checkout's
`open_store` accepts `sqlite:///...`, else in memory (noted in the table).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.peers._common import (
    TIMEOUT_S,
    Observation,
    OrderBook,
    RateLimitedError,
    Reply,
    Scenario,
    make_place_order,
    simple_loop,
)

NAME = "toolproof"
DIST = "toolproof"


def available() -> bool:
    return True


def _reply(envelope: Any) -> Reply:
    return envelope_reply("envelope ok" if envelope.ok else "envelope ok=false", envelope.to_json())


def envelope_reply(channel: str, text: str) -> Reply:
    """A reply whose text is a toolproof envelope (or pydantic-ai's `{"error": <envelope>}` wrapper of one):
    the model reads `next_action` (retry means try again; escalate and ask_person mean do not call again)."""
    data = json.loads(text)
    if "ok" not in data and isinstance(data.get("error"), str):
        data = json.loads(data["error"])
    if data["ok"]:
        replayed = isinstance(data.get("meta"), dict) and data["meta"].get("replayed") is True
        return Reply(channel, text, False, True, False, False, "ok (replayed)" if replayed else "ok")
    err = data["error"]
    action = err.get("next_action")
    key = f", idempotency_key={err['idempotency_key']}" if err.get("idempotency_key") else ""
    return Reply(channel, text, True, True, action == "retry", action in ("escalate", "ask_person"),
                 f"{err['class']}, next_action={action}{key}")


def classified(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function as a toolproof tool is written: its client's 429 raised as `toolproof.RateLimited` (with the
    Retry-After), every other exception as it is."""
    import toolproof

    @functools.wraps(fn)
    def place_order(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RateLimitedError as exc:
            raise toolproof.RateLimited(str(exc), retry_after_s=exc.retry_after) from exc

    return place_order


def runner_for(scenario: Scenario, book: OrderBook, tmp: Path, obs: Observation, name: str = NAME) -> Any:
    """The Runner every toolproof column uses: `place_order` as a plain write, a SQLite journal of its own."""
    import toolproof

    tool = toolproof.tool(effect="write", idempotent=False, timeout_s=TIMEOUT_S if scenario.timeout else None)(
        classified(make_place_order(book))
    )
    obs.schema_closed = tool.input_schema.get("additionalProperties") is False
    toolset = toolproof.Toolset([tool])
    url = f"sqlite:///{tmp / f'journal-{name}-{scenario.key}.sqlite3'}"
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
    runner = runner_for(scenario, book, tmp, obs)
    context = CallContext(conversation_id=f"conv-{scenario.key}")

    async def send(args: dict[str, Any]) -> Reply:
        return _reply(await runner.call("place_order", args, context=context))

    try:
        await simple_loop(scenario, send, obs)
    finally:
        runner.close()
    if scenario.timeout:  # the sync entry point, same tool, same fault, on its own orders table
        sync_book = OrderBook(tmp / f"orders-toolproof-sync-{scenario.key}.sqlite3", scenario.body)
        sync_runner = runner_for(scenario, sync_book, tmp, Observation(NAME, scenario.key), name="toolproof-sync")
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
