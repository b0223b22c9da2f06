"""`import_tools` against a real upstream that misbehaves on purpose (a real subprocess over stdio).

The upstream logs every dispatch to a file, so "never reached the upstream" and "dispatched once" are
counted where it matters, not inferred from our side.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_servers.harness import dispatches, misbehaving
from toolproof import CallContext, ErrorClass, Runner
from toolproof.contract._envelope import ErrorInfo
from toolproof.mcp import ToolOverride, import_tools

pytestmark = [pytest.mark.timeout(60), pytest.mark.e2e]  # real upstream servers, in subprocesses


async def test_tools_are_imported_untrusted_validated_and_named_safely(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with await import_tools(misbehaving("odd", log)) as tools:
        assert "dotted_name" in tools and "dotted.name" not in tools
        echo = tools.get("echo")
        # readOnlyHint from an untrusted server is not a fact: a non-idempotent write.
        assert (echo.effect, echo.idempotent, echo.upstream) == ("write", False, "odd")
        # The open schema was closed: an unknown argument is refused here.
        assert echo.input_schema["additionalProperties"] is False
        runner = Runner(tools)
        ok = await runner.call("echo", {"text": "héllo ✓"})
        assert ok.ok and ok.result == "odd: héllo ✓"
        for bad in ({"text": "x", "injected": True}, {"text": 5}, {}, {"text": "x" * 10, "nested": {"a": [1] * 50}},
                    None, [1, 2]):
            envelope = await runner.call("echo", bad)
            assert envelope.error_class is ErrorClass.INVALID_ARGUMENT, bad
        dotted = await runner.call("dotted_name", {})
        assert dotted.ok
    rows = dispatches(log)
    assert [r["tool"] for r in rows] == ["echo", "dotted.name"]
    assert rows[0]["arguments"] == {"text": "héllo ✓"}


@pytest.mark.parametrize("trusted", [False, True])
async def test_prose_errors_are_classified_and_keep_the_upstream_words(trusted: bool, tmp_path: Path) -> None:
    def words(error: ErrorInfo | None) -> str:
        # A trusted upstream's words are the message; an untrusted one's are quoted data beside toolproof's own.
        assert error is not None
        if trusted:
            return error.message
        assert error.state is not None and error.state["upstream"].startswith("odd/")
        return str(error.state["untrusted_upstream_text"])

    async with await import_tools(misbehaving("odd", tmp_path / "log"), trusted=trusted) as tools:
        runner = Runner(tools)
        limited = await runner.call("limited", {})
        assert limited.error is not None
        assert (limited.error.error_class, limited.error.retry_after_s) == (ErrorClass.RATE_LIMITED, 7.0)
        assert "Rate limit exceeded" in words(limited.error)
        missing = await runner.call("lookup", {"id": "A-9"})
        assert missing.error_class is ErrorClass.NOT_FOUND and "No such item: A-9" in words(missing.error)
        prose = await runner.call("prose_error", {})
        tool = tools.get("prose_error")  # a write that may not be repeated: its effect is unknown after a failure
        unknown = tool.effect == "write" and not tool.idempotent
        assert prose.error_class is (ErrorClass.OUTCOME_UNKNOWN if unknown else ErrorClass.INTERNAL_ERROR)
        assert "frobnicator" in words(prose.error)
        assert ("frobnicator" in prose.error.message) is trusted  # type: ignore[union-attr]
        structured = await runner.call("get_current_time", {"timezone": "UTC"})
        assert structured.ok and structured.result == {"time": "never", "server": "odd"}


async def test_an_untrusted_idempotent_hint_on_a_failing_write_is_dispatched_once(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with await import_tools(misbehaving("odd", log)) as tools:
        flaky = tools.get("flaky_write")
        assert flaky.idempotent is False  # the upstream said idempotentHint: true; nobody trusted it
        envelope = await Runner(tools).call("flaky_write", {"item": "crate"}, context=CallContext("c1", "B-1"))
        # A transient failure of a write after dispatch: never retried, reported as outcome_unknown.
        assert envelope.error_class is ErrorClass.OUTCOME_UNKNOWN
        assert envelope.meta.attempts == 1
    assert len(dispatches(log, "flaky_write")) == 1


async def test_trust_and_overrides_change_the_policy(tmp_path: Path) -> None:
    async with await import_tools(
        misbehaving("odd", tmp_path / "log"),
        trusted=True,
        tools={"echo": ToolOverride(effect="write", idempotent=False), "lookup": ToolOverride(timeout_s=3)},
    ) as tools:
        assert (tools.get("flaky_write").effect, tools.get("flaky_write").idempotent) == ("write", True)
        assert (tools.get("limited").effect, tools.get("limited").idempotent) == ("read", True)
        assert (tools.get("echo").effect, tools.get("echo").idempotent) == ("write", False)
        assert tools.get("lookup").timeout_s == 3


async def test_a_crash_mid_call_is_outcome_unknown_for_a_write_and_the_upstream_restarts(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with await import_tools(misbehaving("odd", log)) as tools:
        runner = Runner(tools)
        crashed = await runner.call("crash", {})
        assert crashed.error_class is ErrorClass.OUTCOME_UNKNOWN
        assert crashed.error is not None and crashed.error.next_action.value == "escalate"
        after = await runner.call("echo", {"text": "still here"})
        assert after.ok and after.result == "odd: still here"
        assert tools.connections[0].starts == 2
    assert [r["tool"] for r in dispatches(log)] == ["crash", "echo"]


async def test_a_slow_read_times_out_as_transient_and_a_hung_upstream_is_restarted(tmp_path: Path) -> None:
    async with await import_tools(
        misbehaving("odd", tmp_path / "log"),
        tools={"slow": ToolOverride(effect="read", timeout_s=0.5), "freeze": ToolOverride(timeout_s=0.5)},
    ) as tools:
        runner = Runner(tools)
        slow = await runner.call("slow", {"seconds": 2})
        assert slow.error_class is ErrorClass.TRANSIENT_UPSTREAM  # a read: safe to retry
        quick = await runner.call("slow", {"seconds": 0})
        assert quick.ok  # the upstream was only slow: same process
        assert tools.connections[0].starts == 1
        frozen = await runner.call("freeze", {})
        assert frozen.error_class is ErrorClass.OUTCOME_UNKNOWN  # untrusted: a write; may have run
        after = await runner.call("echo", {"text": "back"})  # the probe failed; a new process answers
        assert after.ok, after.to_json()
        assert tools.connections[0].starts == 2


async def test_concurrent_calls_share_one_session(tmp_path: Path) -> None:
    import asyncio

    log = tmp_path / "calls.jsonl"
    async with await import_tools(misbehaving("odd", log)) as tools:
        runner = Runner(tools)
        results = await asyncio.gather(*(runner.call("echo", {"text": str(i)}) for i in range(25)))
        assert sorted(r.result for r in results) == sorted(f"odd: {i}" for i in range(25))
        assert tools.connections[0].starts == 1
    assert len(dispatches(log, "echo")) == 25


async def test_an_upstream_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    from toolproof.contract._errors import TransientUpstream

    with pytest.raises(TransientUpstream, match="could not be started"):
        await import_tools([str(tmp_path / "no-such-binary")], name="ghost")
