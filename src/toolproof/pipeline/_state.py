"""What the stages are given: the call's environment (`Env`, the runner's parts, shared by every call) and
the call's own state (`CallState`: what the caller sent, and what each stage learnt)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

from ..audit._trail import AuditWriter, Failure
from ..catalog._toolset import Toolset
from ..contract._context import EMPTY_MAPPING, CallContext
from ..contract._envelope import Envelope
from ..contract._errors import ToolError
from ..contract._tool import Tool
from ..fleet import SharedState
from ..journal._journal import Journal
from ..journal._keys import KeyParts
from ..orchestration.breaker import Breaker
from ..orchestration.guard import LoopGuard
from ..orchestration.policy import RetryBucket, RetryPolicy, RunBudget, RunState
from ..stores import Store
from ..stores._intent import Intent
from ..stores._records import ValidationOutcome
from ._effects import Clock, Steps
from ._verify import Verdict

__all__ = ["CallState", "Env", "Route", "Stage", "Step"]


@dataclass(frozen=True, slots=True)
class Env:
    """What every stage may use, made once by the runner: the stages see these parts, never the runner itself.

    The mutable state behind them (breakers, run budgets, the loop guard's memory, the journal) belongs to
    those objects; `route` and `run_state` reach the runner's per-tool and per-run tables."""

    toolset: Toolset
    clock: Clock
    store: Store
    journal: Journal
    writer: AuditWriter | None  # None: no audit trail and no hooks
    retry: RetryPolicy
    budget: RunBudget | None
    retry_bucket: RetryBucket | None
    loop_guard: LoopGuard | None
    shared_state: SharedState
    rng: Callable[[], float]
    approval_ttl_s: float
    route: Callable[[Tool], Route]  # the route of another tool (a read fallback)
    run_state: Callable[[str, float], RunState]  # a run's budget state, by `CallContext.run_id`


@dataclass(slots=True)
class CallState:
    """Per call, mutable, owned by one pipeline: stages read what earlier stages wrote and add their part."""

    # Given.
    tool: Tool
    context: CallContext  # ids the code knows; `attempt` and `idempotency_key` are filled in on the way
    raw: Any  # the arguments as the caller sent them (a mapping or JSON text)
    started: float  # monotonic seconds
    stages: tuple[Stage, ...]  # what the call runs (`Runner.route`)
    breaker: Breaker | None  # what its attempts answer to (`Runner.route`)
    scope: str | None = None  # the run or conversation: the loop guard's memory
    fallback_from: str | None = None  # set when this call serves as another tool's read fallback

    # validate
    validation: ValidationOutcome = "skipped"
    args: dict[str, Any] | None = None  # the validated arguments
    bound: tuple[tuple[Any, ...], Mapping[str, Any]] = ((), EMPTY_MAPPING)  # the handler's (args, kwargs)
    key: KeyParts | None = None  # a write's idempotency key, operation id and fingerprint

    # claim (writes only)
    intent: Intent | None = None

    # attempt / decide
    trial: bool = False  # the breaker let this attempt through as its half-open trial
    deadline: float | None = None  # monotonic; the end of the call's wall budget
    timeout: float | None = None  # the current attempt's time limit
    run: RunState | None = None  # the run's budget state
    attempts: int = 0  # dispatched so far
    retry_cost: int = 0  # tokens the last retry took (refunded on success)
    elapsed_s: float = 0.0  # the last attempt's (or the failed validation's) latency
    result: Any = None
    error: ToolError | None = None  # the last attempt's classified error
    unverified: ToolError | None = None  # what the write rule restated as unknown, until a verify says more
    running: Future[Any] | None = None  # the last attempt, still running on its thread after its time limit
    verified: Verdict | None = None  # what the tool's verify said of this call's unknown outcome
    failure: Failure | None = None  # the exception the last failed attempt raised, for its developer

    # The envelope the dispatch stages settled on (settle records it in the journal).
    envelope: Envelope | None = None

    @property
    def arguments(self) -> Any:
        """The arguments to show in the audit trail: validated when they were, else as sent."""
        return self.raw if self.args is None else self.args


#: What a stage returns: None (hand on), the envelope that ends the call, or the steps that will say which.
Step: TypeAlias = Envelope | Steps | None
#: One stage of the pipeline.
Stage: TypeAlias = Callable[[Env, CallState], Step]


class Route(NamedTuple):
    """Where a tool's calls go: the tool, the stages they run (`stages.plan`) and the breaker they answer to."""

    tool: Tool
    stages: tuple[Stage, ...]
    breaker: Breaker | None
