"""A tool body cannot confuse the drivers: parameters named like a helper's own, StopIteration from a sync
handler, a KeyboardInterrupt from an async one on a reused event loop. Each on both drivers, with and without a
time limit, counting the effects in a real SQLite table; the first two over `toolproof serve` too, with the
official MCP client."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

import toolproof
from tests.mcp_servers.harness import PY, REPO_ROOT, child_env
from toolproof import CallContext, Runner

LABEL = {"name": "parcel-7", "fn": "ship", "label": "L", "args": "a", "kwargs": "k"}


def _count(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM labels").fetchone()[0])


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("COLLIDING_DESK_PATH", str(tmp_path / "labels.sqlite3"))
    from tests.pipeline import colliding_desk

    return colliding_desk


@pytest.mark.parametrize("tool_name", ["print_label", "print_label_bounded"])
@pytest.mark.parametrize("awaited", [False, True], ids=["call_sync", "await-call"])
def test_parameters_named_like_a_helper_s_reach_the_handler(desk: Any, tmp_path: Path, tool_name: str,
                                                            awaited: bool) -> None:
    arguments = LABEL if tool_name == "print_label" else {"name": "parcel-7", "fn": "ship"}
    ctx = CallContext(conversation_id="c1", principal="clerk")
    with Runner(desk.toolset, store=f"sqlite:///{tmp_path / 'j.sqlite3'}") as runner:
        call = runner.call(tool_name, arguments, context=ctx)
        envelope = asyncio.run(call) if awaited else (call.close(), runner.call_sync(tool_name, arguments,
                                                                                     context=ctx))[1]
        assert envelope.ok and envelope.result == {"printed": "parcel-7"}, envelope
        assert [i.status for i in runner.store.journal_list()] == ["done"]
    assert _count(tmp_path / "labels.sqlite3") == 1


@pytest.mark.parametrize("timeout_s", [None, 5.0], ids=["no-limit", "limit"])
@pytest.mark.parametrize("awaited", [False, True], ids=["call_sync", "await-call"])
def test_stop_iteration_from_a_sync_handler_is_a_plain_failure(timeout_s: float | None, awaited: bool) -> None:
    @toolproof.tool(effect="read", timeout_s=timeout_s)
    def next_label(queue: str) -> str:
        """Read the next label of a queue."""
        raise StopIteration(queue)

    runner = Runner(toolproof.Toolset([next_label]))
    started = time.monotonic()

    async def awaited_call() -> toolproof.Envelope:
        return await asyncio.wait_for(runner.call("next_label", {"queue": "q"}), 10)

    envelope = asyncio.run(awaited_call()) if awaited else runner.call_sync("next_label", {"queue": "q"})
    assert time.monotonic() - started < 3  # answered at once: no hang, no time limit waited out
    assert envelope.error is not None
    assert (envelope.error.error_class, envelope.error.code) == ("internal_error", "UNEXPECTED_EXCEPTION")


@pytest.mark.parametrize("timeout_s", [None, 5.0], ids=["no-limit", "limit"])
def test_an_async_handler_s_interrupt_does_not_hit_the_next_call_on_the_loop(timeout_s: float | None) -> None:
    @toolproof.tool(effect="read", timeout_s=timeout_s)
    async def boom(x: int) -> int:
        """Raise KeyboardInterrupt."""
        raise KeyboardInterrupt

    @toolproof.tool(effect="read")
    async def echo(x: int) -> int:
        """Echo a number."""
        return x

    runner = Runner(toolproof.Toolset([boom, echo]))
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(runner.call("boom", {"x": 1}))
        for n in range(3):  # the same loop, reused by unrelated calls
            envelope = loop.run_until_complete(runner.call("echo", {"x": n}))
            assert envelope.ok and envelope.result == n
    finally:
        loop.close()


@pytest.mark.e2e
@pytest.mark.timeout(120)
async def test_over_toolproof_serve(tmp_path: Path) -> None:
    env = child_env(COLLIDING_DESK_PATH=str(tmp_path / "labels.sqlite3"),
                    TOOLPROOF_STORE=f"sqlite:///{tmp_path / 'journal.sqlite3'}")
    target = "tests.pipeline.colliding_desk:toolset"
    params = StdioServerParameters(command=PY, args=["-m", "toolproof", "serve", target], env=env, cwd=str(REPO_ROOT))
    meta = {"dev.toolproof/conversation_id": "chat-1"}
    async with Client(params, read_timeout_seconds=30) as client:
        printed = await client.call_tool("print_label", LABEL, meta=meta)  # type: ignore[arg-type]
        bounded = await client.call_tool("print_label_bounded", {"name": "p8", "fn": "ship"},
                                         meta=meta)  # type: ignore[arg-type]
        started = time.monotonic()
        stopped = await client.call_tool("next_label", {"queue": "empty"})
        took = time.monotonic() - started
    answers = [json.loads(r.content[0].text) for r in (printed, bounded, stopped)]  # type: ignore[union-attr]
    assert answers[0]["ok"] is True and answers[1]["ok"] is True, answers
    assert _count(tmp_path / "labels.sqlite3") == 2
    assert answers[2]["error"]["code"] == "UNEXPECTED_EXCEPTION" and took < 3, (answers[2], took)
