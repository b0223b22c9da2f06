"""Every answer is an envelope that validates against the published schema and is strict JSON: whatever a Python
caller or a model sends, whatever a tool returns or raises (its own secrets redacted), and whatever the journal
stored; a handler gets the types it declares; a BaseException settles its write intent before it goes on."""

from __future__ import annotations

import asyncio
import enum
import json
import math
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import jsonschema_rs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolproof
from toolproof.contract._envelope import Envelope, envelope_schema
from toolproof.contract._errors import ERROR_TYPES, PartialExecution, ToolError
from toolproof.stores import SqliteStore

VALIDATOR = jsonschema_rs.validator_for(envelope_schema())


def assert_valid(envelope: Envelope) -> dict[str, Any]:
    """The envelope validates against the published schema and survives strict JSON and UTF-8."""
    data = envelope.to_dict()
    text = json.dumps(data, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")  # no lone surrogate
    errors = [e.message for e in VALIDATOR.iter_errors(json.loads(text))]
    assert not errors, (errors, data)
    return data


# --- a write that raises PartialExecution(state=[...]) and a poisoned journal entry -------------------------


@toolproof.tool(effect="write")
def ship(order: str) -> str:
    """Ship an order in two parcels; the second one fails."""
    raise PartialExecution("The first parcel left; the second did not.", state=["parcel-1"], field=3,  # type: ignore[arg-type]
                           allowed_values=("a", "b"), hint=object())  # type: ignore[arg-type]


def test_a_partial_execution_with_a_list_state_is_valid_then_and_on_every_repeat(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite3'}"
    ctx = toolproof.CallContext(conversation_id="c1")
    with toolproof.Runner(toolproof.Toolset([ship]), store=url, loop_guard=None) as runner:
        first = assert_valid(runner.call_sync("ship", {"order": "A-1"}, context=ctx))
        assert first["error"]["state"] == {"value": ["parcel-1"]} and first["error"]["field"] == "3"
        again = assert_valid(runner.call_sync("ship", {"order": "A-1"}, context=ctx))
        assert again["meta"]["replayed"] is True and again["error"]["class"] == "partial_execution"
    with toolproof.Runner(toolproof.Toolset([ship]), store=url, loop_guard=None) as fresh:
        assert assert_valid(fresh.call_sync("ship", {"order": "A-1"}, context=ctx))["meta"]["replayed"] is True


def test_a_stored_envelope_that_fails_the_schema_is_repaired_on_replay(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite3'}"
    ctx = toolproof.CallContext(conversation_id="c1")
    with toolproof.Runner(toolproof.Toolset([ship]), store=url, loop_guard=None) as runner:
        runner.call_sync("ship", {"order": "A-2"}, context=ctx)
        key = runner.journal.list()[0].key
    store = SqliteStore(tmp_path / "s.sqlite3")  # as a version before the fix stored it
    bad = {"ok": False, "attempts": 1, "error": {"class": "partial_execution", "retryable": False,
                                                 "next_action": "reread", "code": "partial", "message": 5,
                                                 "state": ["parcel-1"], "extra": 1}}
    store._run("UPDATE toolproof_intents SET outcome = ? WHERE key = ?", (json.dumps(bad), key))
    store.close()
    with toolproof.Runner(toolproof.Toolset([ship]), store=url, loop_guard=None) as runner:
        replay = assert_valid(runner.call_sync("ship", {"order": "A-2"}, context=ctx))
    assert replay["meta"]["replayed"] is True
    assert (replay["error"]["class"], replay["error"]["state"]) == ("partial_execution", {"value": ["parcel-1"]})
    assert replay["error"]["idempotency_key"] == key


# --- what a Python caller or a model sends -----------------------------------------------------------------


SEEN: list[Any] = []


@toolproof.tool(effect="read")
def count(n: int, limit: int | None = None) -> int:
    """Count up by one."""
    SEEN.append((n, [] if limit is None else [limit]))
    return n + 1


@toolproof.tool(effect="read")
def total(n: int, items: list[int]) -> int:
    """Add the items up."""
    SEEN.append((n, items))
    return sum(items)


@toolproof.tool(effect="read")
def echo(text: str) -> str:
    """Echo the text."""
    return text


class Name(str):
    pass


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize("arguments", [{"n": 1.0}, '{"n": 1e2}', {"n": 1e300}, {"n": np.float64(4.0)},
                                       {"n": np.int64(5)}, {"n": Level.HIGH}, {"n": 2, "limit": 3.0},
                                       {"n": 2, "items": [1.0, 2e1]}])
def test_int_parameters_get_ints(arguments: Any) -> None:
    SEEN.clear()
    name = "total" if "items" in arguments else "count"
    with toolproof.Runner(toolproof.Toolset([count, total])) as runner:
        assert assert_valid(runner.call_sync(name, arguments))["ok"] is True
    n, items = SEEN[0]
    assert type(n) is int and all(type(i) is int for i in items or [])


@pytest.mark.parametrize("arguments", [{"text": Name("x")}, {"text": np.str_("y")}, '{"text": "\\ud800"}',
                                       '{"\\ud800": 1}', {"text": "a\udcff"}, {"text": np.float64("nan")}])
def test_odd_python_and_model_arguments_are_answered(arguments: Any) -> None:
    with toolproof.Runner(toolproof.Toolset([echo])) as runner:
        data = assert_valid(runner.call_sync("echo", arguments))
    if data["ok"]:
        assert type(data["result"]) is str
    else:
        assert data["error"]["class"] == "invalid_argument"


# --- BaseExceptions ------------------------------------------------------------------------------------------


@toolproof.tool(effect="write")
def halt(order: str) -> str:
    """Stop the process mid-write."""
    raise KeyboardInterrupt


def test_a_base_exception_from_a_write_settles_its_intent_and_goes_on() -> None:
    with toolproof.Runner(toolproof.Toolset([halt])) as runner:
        with pytest.raises(KeyboardInterrupt):
            runner.call_sync("halt", {"order": "A"})
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(runner.call("halt", {"order": "B"}))
        assert [i.status for i in runner.journal.list()] == ["unknown", "unknown"]
        assert [s.code for s in runner.store.list_stops()] == ["INTERRUPTED", "INTERRUPTED"]
        repeat = assert_valid(runner.call_sync("halt", {"order": "A"}))
    assert repeat["error"]["class"] == "outcome_unknown"  # never sent again


# --- secrets: a tool's own, and a guard-blocked repeat sent as JSON text ------------------------------------


PASSWORD = "hunter2-very-secret"
TOKEN = "tok-0123456789abcdef"


@toolproof.tool(effect="write")
def login(user: str, api_token: Annotated[str, toolproof.Secret], db_password: str) -> str:
    """Log in (always refused)."""
    raise toolproof.AuthFailed(f"token {api_token} refused for {user}", hint=f"password={db_password} is stale",
                               state={"password": db_password, "sent": api_token})


def test_a_tools_own_secrets_never_reach_the_model_the_audit_or_the_stops() -> None:
    args = {"user": "ana", "api_token": TOKEN, "db_password": PASSWORD}
    ctx = toolproof.CallContext(conversation_id="c1")
    with toolproof.Runner(toolproof.Toolset([login])) as runner:
        first = runner.call_sync("login", args, context=ctx)
        blocked = runner.call_sync("login", json.dumps(args), context=ctx)  # the guard stops the repeat
        runner.flush()
        stored = [r.arguments for r in runner.store.list_audit()] + [s.message for s in runner.store.list_stops()]
        stored += [s.arguments for s in runner.store.list_stops()]
    assert blocked.meta.extra.get("stop_reason") is not None
    for shown in (assert_valid(first), assert_valid(blocked), stored):
        text = json.dumps(shown)
        assert TOKEN not in text and PASSWORD not in text, text


# --- the property: every value a tool returns, every exception it raises -------------------------------------


class Weird:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**4000, max_value=10**4000 + 1),
    st.floats(allow_nan=True, allow_infinity=True), st.text(), st.sampled_from(["\ud800", "a\x00b", "\udcff.txt"]),
    st.builds(Name, st.text()), st.sampled_from([np.float64("nan"), np.int64(3), np.bool_(True), Level.HIGH]),
    st.sampled_from([Weird(), object(), b"bytes", {1, 2}, time.gmtime(0)]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.one_of(st.text(max_size=5), st.integers(), st.none()), inner,
                                            max_size=4)),
    max_leaves=12,
) | st.builds(_cycle)


@st.composite
def raised(draw: st.DrawFn) -> BaseException:
    kinds: list[type[BaseException]] = [*ERROR_TYPES.values(), ToolError, ValueError, TimeoutError, ConnectionError]
    kind = draw(st.sampled_from(kinds))
    if not issubclass(kind, ToolError):
        return kind(draw(st.text()))
    exc = kind(draw(st.text()))
    for name in ("message", "code", "field", "received", "allowed_values", "hint", "retry_after_s", "state",
                 "idempotency_key", "effect_done"):
        if draw(st.booleans()):
            setattr(exc, name, draw(values | st.floats() | st.sampled_from(["BAD code", "OK_CODE", -1.0])))
    return exc


BOX: dict[str, Any] = {}


@toolproof.tool(effect="read")
def anything() -> Any:
    """Return or raise whatever the test put in the box."""
    if "raise" in BOX:
        raise BOX["raise"]
    return BOX["value"]


@toolproof.tool(effect="write")
def write_anything(n: int) -> Any:
    """The same, as a write (its envelope is stored and replayed)."""
    return anything.handler()


@pytest.fixture(scope="module")
def runner() -> Iterator[toolproof.Runner]:
    with toolproof.Runner(toolproof.Toolset([anything, write_anything]), retry=None, loop_guard=None,
                          breakers=None) as r:
        yield r


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outcome=st.one_of(values.map(lambda v: ("value", v)), raised().map(lambda e: ("raise", e))),
       n=st.integers(min_value=0, max_value=10**6))
def test_every_value_and_exception_a_tool_produces_ends_as_a_valid_envelope(
    runner: toolproof.Runner, outcome: tuple[str, Any], n: int
) -> None:
    BOX.clear()
    BOX[outcome[0]] = outcome[1]
    assert_valid(runner.call_sync("anything"))
    ctx = toolproof.CallContext(conversation_id=f"p{n}-{id(outcome[1])}")
    assert_valid(runner.call_sync("write_anything", {"n": n}, context=ctx))
    assert_valid(runner.call_sync("write_anything", {"n": n}, context=ctx))  # replayed, or refused: valid


arguments = st.one_of(values, st.text(), st.binary(), st.dictionaries(st.text(max_size=4), values, max_size=4),
                      st.builds(lambda v: {"n": v}, values))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=arguments)
def test_every_argument_a_caller_or_a_model_sends_is_answered_with_a_valid_envelope(
    runner: toolproof.Runner, sent: Any
) -> None:
    BOX.clear()
    BOX["value"] = 1
    ctx = toolproof.CallContext(conversation_id=uuid.uuid4().hex)  # a new write each time, never a replay
    data = assert_valid(runner.call_sync("write_anything", sent, context=ctx))
    assert data["ok"] or data["error"]["class"] == "invalid_argument", data
    if isinstance(sent, dict) and data["ok"]:
        assert not math.isnan(float(data["result"]))
