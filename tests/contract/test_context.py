"""CallContext (what the code knows about a call, never the model) and the call ids the runner gives out."""

from __future__ import annotations

import dataclasses
import re
import threading
from typing import Any

import pytest

import toolproof
from toolproof import CallContext
from toolproof.contract._context import CallIds, fresh_context, new_call_id

HEX = re.compile(r"[0-9a-f]+")


def test_a_bare_context_knows_nothing_and_shares_no_mutable_state() -> None:
    a, b = CallContext(), CallContext()
    assert (a.conversation_id, a.principal, a.call_id, a.run_id, a.idempotency_key) == (None,) * 5
    assert (a.occurrence, a.attempt) == (0, 0)
    assert dict(a.metadata) == {}
    with pytest.raises(TypeError):
        a.metadata["leak"] = 1  # type: ignore[index]
    assert dict(b.metadata) == {}
    assert a == b


def test_the_fast_fresh_context_is_the_ordinary_one() -> None:
    fast, plain = fresh_context("c-1"), CallContext(call_id="c-1", attempt=1)
    assert type(fast) is CallContext
    assert fast == plain and repr(fast) == repr(plain)
    assert not hasattr(fast, "__dict__") and not hasattr(plain, "__dict__")  # slots only, like the ordinary one
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.call_id = "other"  # type: ignore[misc]


def test_a_context_is_frozen() -> None:
    ctx = CallContext("chat-1", "B-17")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.principal = "admin"  # type: ignore[misc]
    assert ctx.principal == "B-17"


def test_with_updates_returns_a_new_context_and_refuses_unknown_fields() -> None:
    ctx = CallContext("chat-1", "B-17", metadata={"tenant": "t-1"})
    later = ctx.with_updates(occurrence=2, run_id="run-9")
    assert (later.conversation_id, later.principal, later.occurrence, later.run_id) == ("chat-1", "B-17", 2, "run-9")
    assert later.metadata == {"tenant": "t-1"}
    assert (ctx.occurrence, ctx.run_id) == (0, None)
    with pytest.raises(TypeError):
        ctx.with_updates(is_admin=True)


def test_new_call_ids_are_96_random_bits_in_hex() -> None:
    ids = {new_call_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(len(i) == 24 and HEX.fullmatch(i) for i in ids)


def test_call_ids_from_one_source_are_unique_and_sources_do_not_collide() -> None:
    first, second = CallIds(), CallIds()
    a = [first() for _ in range(1000)]
    b = [second() for _ in range(1000)]
    assert len(set(a) | set(b)) == 2000
    assert all(len(i) == 24 and HEX.fullmatch(i) for i in a + b)
    assert a[0][:16] != b[0][:16]  # a random prefix per source


def test_call_ids_stay_unique_across_threads() -> None:
    ids = CallIds()
    seen: list[list[str]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def take(n: int) -> None:
        barrier.wait()
        seen[n].extend(ids() for _ in range(5000))

    threads = [threading.Thread(target=take, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flat = [i for part in seen for i in part]
    assert len(flat) == len(set(flat)) == 40_000


@toolproof.tool(effect="read")
def whoami(note: str, context: CallContext) -> dict[str, Any]:
    """Say which call this is and for whom.

    Args:
        note: Any text, echoed back.
    """
    return {"note": note, "call_id": context.call_id, "principal": context.principal, "attempt": context.attempt,
            "conversation_id": context.conversation_id, "run_id": context.run_id}


def test_the_runner_fills_in_a_call_id_and_never_changes_the_callers_context() -> None:
    with toolproof.Runner(toolproof.Toolset([whoami]), store="memory://") as runner:
        given = CallContext("chat-1", "B-17", run_id="run-1")
        one = runner.call_sync("whoami", {"note": "a"}, context=given)
        two = runner.call_sync("whoami", {"note": "b"}, context=given)
        bare = runner.call_sync("whoami", {"note": "c"})
    assert one.ok and two.ok and bare.ok
    assert one.result["call_id"] == one.meta.call_id and HEX.fullmatch(one.meta.call_id)
    assert len({one.meta.call_id, two.meta.call_id, bare.meta.call_id}) == 3
    assert {k: one.result[k] for k in ("principal", "conversation_id", "run_id", "attempt")} == {
        "principal": "B-17", "conversation_id": "chat-1", "run_id": "run-1", "attempt": 1}
    assert given == CallContext("chat-1", "B-17", run_id="run-1")
    assert bare.result["principal"] is None


def test_a_call_id_chosen_by_the_code_is_kept() -> None:
    with toolproof.Runner(toolproof.Toolset([whoami]), store="memory://") as runner:
        env = runner.call_sync("whoami", {"note": "x"}, context=CallContext(call_id="trace-42"))
    assert env.meta.call_id == env.result["call_id"] == "trace-42"


@pytest.mark.parametrize(
    "smuggled",
    [{"note": "x", "context": {"principal": "admin"}}, {"note": "x", "principal": "admin"},
     {"note": "x", "call_id": "forged"}],
)
def test_the_model_cannot_set_the_context_through_arguments(smuggled: dict[str, Any]) -> None:
    assert "context" not in whoami.input_schema["properties"]
    with toolproof.Runner(toolproof.Toolset([whoami]), store="memory://") as runner:
        env = runner.call_sync("whoami", smuggled, context=CallContext(principal="B-17"))
    assert not env.ok and env.error is not None and env.error.error_class == "invalid_argument"


def test_a_context_of_another_type_is_refused() -> None:
    with toolproof.Runner(toolproof.Toolset([whoami]), store="memory://") as runner, pytest.raises(TypeError):
        runner.call_sync("whoami", {"note": "x"}, context={"principal": "admin"})  # type: ignore[arg-type]


def test_a_context_filled_for_a_call_is_the_ordinary_one() -> None:
    from toolproof.contract._context import with_call

    # Every field set to a value of its own: a field `with_call` dropped or moved would show.
    given = CallContext("chat-1", "B-17", None, "run-1", 2, "key-1", 0, {"tenant": "t"}, "s-1", 7)
    assert all(getattr(given, f.name) not in (None, 0) for f in dataclasses.fields(given)
               if f.name not in ("call_id", "attempt"))
    filled = with_call(given, "c-9")
    assert type(filled) is CallContext
    assert filled == dataclasses.replace(given, call_id="c-9", attempt=1)
    mine = dataclasses.replace(given, call_id="mine", attempt=3)
    assert with_call(mine, "c-9") is mine  # already a call's: nothing to fill, nothing new
    assert with_call(dataclasses.replace(given, call_id="mine"), "c-9") == dataclasses.replace(
        given, call_id="mine", attempt=1)
    assert with_call(dataclasses.replace(given, attempt=3), "c-9") == dataclasses.replace(
        given, call_id="c-9", attempt=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        filled.principal = "admin"  # type: ignore[misc]
