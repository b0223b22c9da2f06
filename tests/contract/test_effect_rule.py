"""What a failed write did, decided once: the journal, the stop record and the classifier agree for every class.

Every error class is raised by a real write tool (and a real read tool) through a `Runner` on a real SQLite
store; what the journal kept, what the stop record says of the effect and what the model was told are read
back from the outside and checked against one table written here, independently of the code's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolproof
from toolproof import BreakerConfig, CallContext, ErrorClass, RetryPolicy, Runner, Toolset
from toolproof.contract._errors import CLASS_SPECS, ERROR_TYPES, EffectFact

#: What each class says of a dispatched write's effect, as docs/contract.md states it.
FACTS: dict[ErrorClass, str] = {
    ErrorClass.INVALID_ARGUMENT: "none",
    ErrorClass.NOT_FOUND: "none",
    ErrorClass.CONFLICT: "none",
    ErrorClass.RATE_LIMITED: "none",
    ErrorClass.TRANSIENT_UPSTREAM: "maybe",
    ErrorClass.AUTH_FAILED: "none",
    ErrorClass.PERMISSION_DENIED: "none",
    ErrorClass.PARTIAL_EXECUTION: "some",
    ErrorClass.NEEDS_CLARIFICATION: "none",
    ErrorClass.OUTCOME_UNKNOWN: "maybe",
    ErrorClass.INTERNAL_ERROR: "maybe",
}
#: The three views of one fact: the journal's status ("released": no row kept), the stop record's effect, and
#: whether the model is told outcome_unknown (a write that may not be repeated).
JOURNAL = {"none": "released", "maybe": "unknown", "some": "failed"}
STOP_EFFECT = {"none": "not_done", "maybe": "unknown", "some": "done"}


class Raising:
    """A write and a read tool that raise whatever the test sets, counting their runs."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.runs = 0

    def toolset(self) -> Toolset:
        @toolproof.tool(effect="write", idempotent=False)
        def book(item: str) -> dict[str, str]:
            """Book one item for the buyer."""
            self.runs += 1
            if self.error is not None:
                raise self.error
            return {"booked": item}

        @toolproof.tool(effect="read")
        def look(item: str) -> dict[str, str]:
            """Look one item up."""
            self.runs += 1
            if self.error is not None:
                raise self.error
            return {"item": item}

        return Toolset([book, look])


def _error(cls: ErrorClass, effect_done: bool | None) -> BaseException:
    return ERROR_TYPES[cls](f"the tool raised {cls}", effect_done=effect_done)


def _runner(tmp_path: Path, tools: Raising, **options: Any) -> Runner:
    # No loop guard: the test's repeat is the identical call, and the guard would refuse it before the journal.
    return Runner(tools.toolset(), store=f"sqlite:///{tmp_path / 'store.sqlite3'}", retry=RetryPolicy(max_attempts=1),
                  breakers=None, loop_guard=None, **options)


def _fact(cls: ErrorClass, effect_done: bool | None) -> str:
    return "none" if effect_done is False else "some" if effect_done is True else FACTS[cls]


def test_the_class_table_holds_the_documented_fact() -> None:
    assert {cls: spec.effect.value for cls, spec in CLASS_SPECS.items()} == FACTS
    assert {f.value for f in EffectFact} == set(JOURNAL)


@pytest.mark.parametrize("effect_done", [None, False, True])
@pytest.mark.parametrize("cls", list(ErrorClass))
def test_a_write_s_journal_stop_record_and_envelope_agree(tmp_path: Path, cls: ErrorClass,
                                                          effect_done: bool | None) -> None:
    tools = Raising()
    tools.error = _error(cls, effect_done)
    fact = _fact(cls, effect_done)
    with _runner(tmp_path, tools) as runner:
        envelope = runner.call_sync("book", {"item": "onion"}, context=CallContext(conversation_id="c1"))
        runner.flush()
        kept = [i.status for i in runner.store.journal_list()]
        stops = runner.store.list_stops(limit=10)
        assert envelope.error is not None and tools.runs == 1
        assert (kept or ["released"]) == [JOURNAL[fact]]
        for stop in stops:  # a stop record is written when the call gave up (escalate); it says the same
            assert stop.effect_status == STOP_EFFECT[fact], stop
        told_unknown = envelope.error.error_class is ErrorClass.OUTCOME_UNKNOWN
        assert told_unknown == (fact == "maybe" or cls is ErrorClass.OUTCOME_UNKNOWN)  # a tool may say so itself
        if fact != "none":  # the write's fate is bound to its key: the model is told which
            assert envelope.error.idempotency_key == envelope.meta.idempotency_key
        if told_unknown:
            assert stops
        tools.error = None
        again = runner.call_sync("book", {"item": "onion"}, context=CallContext(conversation_id="c1"))
        # Nothing happened: the repeat runs; it may have or some did: answered from the journal, never re-run.
        assert tools.runs == (2 if fact == "none" else 1), again
        assert again.ok == (fact == "none")


@pytest.mark.parametrize("cls", list(ErrorClass))
def test_a_read_has_no_effect_to_settle(tmp_path: Path, cls: ErrorClass) -> None:
    tools = Raising()
    tools.error = _error(cls, None)
    with _runner(tmp_path, tools) as runner:
        envelope = runner.call_sync("look", {"item": "onion"})
        runner.flush()
        assert envelope.error is not None and envelope.error.error_class is cls  # never restated for a read
        assert runner.store.journal_list() == []
        assert all(s.effect_status == "not_done" for s in runner.store.list_stops(limit=10))


def test_a_write_its_breaker_refused_was_never_sent(tmp_path: Path) -> None:
    """The breaker refused before dispatch: nothing happened, so nothing is held as unknown."""
    tools = Raising()
    tools.error = toolproof.TransientUpstream("down")
    with Runner(tools.toolset(), store=f"sqlite:///{tmp_path / 's.sqlite3'}", retry=RetryPolicy(max_attempts=1),
                breakers=BreakerConfig(failure_threshold=1, recovery_s=60.0)) as runner:
        first = runner.call_sync("book", {"item": "a"}, context=CallContext(conversation_id="c"))
        refused = runner.call_sync("book", {"item": "b"}, context=CallContext(conversation_id="c"))
        runner.flush()
        assert first.error is not None and first.error.error_class == "outcome_unknown"
        assert refused.error is not None and refused.error.code == "CIRCUIT_OPEN" and tools.runs == 1
        assert [i.status for i in runner.store.journal_list()] == ["unknown"]  # only the one that was sent
        effects = sorted(s.effect_status for s in runner.store.list_stops(limit=10))
        assert effects == ["not_done", "unknown"]
