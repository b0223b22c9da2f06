"""The Runner's one pipeline, from the outside: envelopes for every outcome, on both entry points."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import toolproof
from toolproof.examples.wholesaler import Shop

ORDER = {"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2026-10-23"}


def test_read_tool_success_envelope(runner: toolproof.Runner) -> None:
    env = runner.call_sync("get_today_price", {"crop": "jeera"})
    assert env.ok
    assert env.result["crop"] == "jeera"
    assert env.result["grade"] == "A"  # the default is applied by the handler
    assert env.meta.tool == "get_today_price"
    assert env.meta.attempts == 1
    assert env.meta.schema_version == runner.toolset.get("get_today_price").schema_version


def test_arguments_as_json_text(runner: toolproof.Runner) -> None:
    env = runner.call_sync("get_today_price", '{"crop": "onion", "grade": "B"}')
    assert env.ok and env.result["grade"] == "B"


def test_quintal_trap_is_refused_before_any_effect(runner: toolproof.Runner, shop: Shop, buyer: Any) -> None:
    env = runner.call_sync("place_order", {**ORDER, "quantity_kg": 4}, context=buyer)
    assert not env.ok and env.error is not None
    assert env.error.error_class == "invalid_argument"
    assert env.error.next_action == "repair"
    assert env.error.field == "quantity_kg"
    assert env.error.received == 4
    assert "1 quintal is 100 kg" in (env.error.hint or "")
    assert env.meta.attempts == 0
    assert shop.count_orders() == 0


def test_enum_violation_names_allowed_values(runner: toolproof.Runner) -> None:
    env = runner.call_sync("get_today_price", {"crop": "cumin"})
    assert env.error is not None
    assert env.error.code == "NOT_IN_ENUM"
    assert env.error.allowed_values == ["onion", "groundnut", "jeera", "cotton_seed"]


def test_unknown_field_is_refused_not_dropped(runner: toolproof.Runner, shop: Shop, buyer: Any) -> None:
    env = runner.call_sync("place_order", {**ORDER, "qty": 5}, context=buyer)
    assert env.error is not None
    assert env.error.code == "UNEXPECTED_FIELD"
    assert env.error.field == "qty"
    assert shop.count_orders() == 0


@pytest.mark.parametrize(
    ("value", "code"),
    [("100", "WRONG_TYPE"), ("2026-10-23T10:00:00", "BAD_FORMAT")],
)
def test_no_coercion(runner: toolproof.Runner, buyer: Any, value: str, code: str) -> None:
    args = {**ORDER, "quantity_kg": value} if code == "WRONG_TYPE" else {**ORDER, "delivery_date": value}
    env = runner.call_sync("place_order", args, context=buyer)
    assert env.error is not None and env.error.code == code


def test_tool_error_raised_by_handler(runner: toolproof.Runner, buyer: Any) -> None:
    env = runner.call_sync("place_order", {**ORDER, "delivery_date": "2026-10-01"}, context=buyer)
    assert env.error is not None
    assert env.error.code == "DATE_NOT_IN_FUTURE"
    assert env.meta.attempts == 1


def test_unknown_tool_is_a_protocol_error(runner: toolproof.Runner) -> None:
    with pytest.raises(toolproof.UnknownTool):
        runner.call_sync("order_v2", {})


def test_async_and_sync_paths_agree(runner: toolproof.Runner, buyer: Any) -> None:
    a = runner.call_sync("place_order", ORDER, context=buyer)
    b = asyncio.run(runner.call("place_order", ORDER, context=buyer))
    assert a.ok and b.ok
    assert a.result["order_id"] == b.result["order_id"]
    # A repeat of the same write on the async path: the journal replays the first result, no second dispatch.
    assert b.meta.replayed and b.result == a.result


def test_unexpected_exception_leaks_nothing() -> None:
    @toolproof.tool(effect="read")
    def explode(path: str) -> str:
        """Fail with an internal error."""
        raise KeyError(f"/srv/secret/{path} <object at 0x7f>")

    env = toolproof.Runner(toolproof.Toolset([explode])).call_sync("explode", {"path": "x"})
    assert env.error is not None and env.error.error_class == "internal_error"
    text = env.to_json()
    assert "/srv" not in text and "0x7f" not in text and "Traceback" not in text


def test_timeout_is_transient_for_reads_and_unknown_for_writes() -> None:
    @toolproof.tool(effect="read")
    def read_slow(n: int) -> int:
        """Time out."""
        raise TimeoutError

    @toolproof.tool(effect="write")
    def write_slow(n: int) -> int:
        """Time out after the effect."""
        raise TimeoutError

    r = toolproof.Runner(toolproof.Toolset([read_slow, write_slow]), retry=None)  # no real-time backoff
    assert r.call_sync("read_slow", {"n": 1}).error_class == "transient_upstream"
    assert r.call_sync("write_slow", {"n": 1}).error_class == "outcome_unknown"


def test_output_schema_violation_is_internal_error() -> None:
    @toolproof.tool(effect="read")
    def liar(n: int) -> int:
        """Return the wrong type."""
        return "not a number"  # type: ignore[return-value]

    env = toolproof.Runner(toolproof.Toolset([liar])).call_sync("liar", {"n": 1})
    assert env.error is not None and env.error.code == "OUTPUT_SCHEMA_VIOLATION"


def test_async_handler_on_both_paths() -> None:
    @toolproof.tool(effect="read")
    async def double(n: int) -> int:
        """Double a number."""
        await asyncio.sleep(0)
        return n * 2

    r = toolproof.Runner(toolproof.Toolset([double]))
    assert r.call_sync("double", {"n": 2}).result == 4
    assert asyncio.run(r.call("double", {"n": 3})).result == 6


def test_async_timeout_enforced() -> None:
    @toolproof.tool(effect="read", timeout_s=0.05)
    async def hang(n: int) -> int:
        """Hang."""
        await asyncio.sleep(10)
        return n

    env = asyncio.run(toolproof.Runner(toolproof.Toolset([hang]), retry=None).call("hang", {"n": 1}))
    assert env.error is not None and env.error.code == "TIMEOUT"


def test_envelope_json_round_trip(runner: toolproof.Runner) -> None:
    env = runner.call_sync("get_today_price", {"crop": "cumin"})
    again = toolproof.Envelope.from_json(env.to_json())
    assert again == env
    assert json.loads(again.to_json()) == env.to_dict()


@pytest.mark.parametrize("context", ["chat-1", {"conversation_id": "c"}, 42])
def test_a_context_of_the_wrong_type_is_a_clear_type_error(runner: toolproof.Runner, context: Any) -> None:
    with pytest.raises(TypeError, match="CallContext"):
        runner.call_sync("get_today_price", {"crop": "onion"}, context=context)


@pytest.mark.parametrize("name", [None, 123, b"x", "x" * 10_000, "get_today_price\u0000"])
def test_unknown_tool_names_of_any_type(runner: toolproof.Runner, name: Any) -> None:
    with pytest.raises(toolproof.UnknownTool) as info:
        runner.call_sync(name, {})
    assert len(str(info.value)) < 200
