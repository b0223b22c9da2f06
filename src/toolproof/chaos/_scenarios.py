"""The faults that make an agent repeat an action, one scenario each, and how each one is staged.

Every scenario is one logical operation: the caller means to do the thing once. What differs is the fault
in between and how the caller repeats itself (the same call again, a new request id, other arguments, a new
process). A fault is staged on the tool's own function (`Fault`, per entry into it) or on the caller's side
(a reply cut before it arrives).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["SCENARIOS", "Fault", "FaultKind", "Scenario", "scenario"]

FaultKind = Literal["none", "raise_after", "hang_after", "hold_after", "rate_limit_before", "skip_effect"]

#: How long a body runs on after its effect when a timeout or a race is staged (past `TIMEOUT_S`).
HANG_S: Final = 0.3
#: The time limit the caller (or toolproof's runner) is given in the timeout scenario.
TIMEOUT_S: Final = 0.1
#: The Retry-After the 429 carries, in seconds.
RETRY_AFTER_S: Final = 0.2


@dataclass(frozen=True, slots=True)
class Fault:
    """What the instrumented function does on the entries it names (1 is the first entry into it)."""

    kind: FaultKind = "none"
    entries: frozenset[int] = field(default_factory=lambda: frozenset({1}))
    seconds: float = 0.0

    def on(self, entry: int) -> FaultKind:
        return self.kind if entry in self.entries else "none"


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    title: str
    fault: Fault
    #: Whether only a tool's `verify=` hook can observe it (an effect that never happened leaves no entry).
    needs_verify: bool = False


SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario("reply_lost", "the effect is applied, its reply is lost (a connection reset); the caller resends",
             Fault("raise_after")),
    Scenario("timeout_after_commit", f"the effect commits, then the tool runs past a {TIMEOUT_S:g} s time limit; "
             "the caller resends", Fault("hang_after", seconds=HANG_S)),
    Scenario("worker_killed", "the worker process is killed (SIGKILL) after the effect; a new process resends "
             "against the same store", Fault("hold_after", seconds=60.0)),
    Scenario("racing_resends", "two resends of the same call race (two threads)",
             Fault("hang_after", entries=frozenset({1, 2}), seconds=HANG_S)),
    Scenario("rate_limited", f"the first attempt gets a 429 with Retry-After: {RETRY_AFTER_S:g} s (nothing done); "
             "the caller resends", Fault("rate_limit_before", seconds=RETRY_AFTER_S)),
    Scenario("changed_arguments", "the same conversation sends the operation again with one argument changed",
             Fault()),
    Scenario("new_request_id", "the effect is applied, the response stream is cut; the call is re-issued with a "
             "new request id in the same conversation", Fault()),
    Scenario("ok_did_nothing", "the tool answers ok having done nothing (an answer shaped like its output, no "
             "effect); the tool's verify= hook is asked afterwards whether the effect exists", Fault("skip_effect"),
             needs_verify=True),
)


def scenario(key: str) -> Scenario:
    """The scenario called `key` (a `KeyError` names the ones there are)."""
    for s in SCENARIOS:
        if s.key == key:
            return s
    raise KeyError(f"no scenario {key!r}; there are: {', '.join(s.key for s in SCENARIOS)}")
