"""The pipeline of one call, and the API for extending it.

A stage is a function `(env, state) -> None | Envelope | steps`: None hands the call on, an envelope ends
it, steps (a generator) yield effects (`Dispatch`, `Sleep`, `Io`) that the driver performs and sends back.
Add one by subclassing `toolproof.Runner` with `stages = (..., your_stage, ...)` (see docs/architecture.md).
Everything named here is the extension API; the modules below it are internals.
"""

from __future__ import annotations

from .._surface import publish_all
from ..contract._envelope import Envelope, Meta
from ._effects import SYSTEM_CLOCK, Clock, Dispatch, Effect, Io, Outcome, Pipeline, Sleep, Steps
from ._runner import Runner
from ._stages import STAGES, Stage, Step, approval, audit, claim, dispatch, give_up, guard, plan, run, settle, validate
from ._state import CallState, Env, Route

__all__ = [
    "STAGES",
    "SYSTEM_CLOCK",
    "CallState",
    "Clock",
    "Dispatch",
    "Effect",
    "Env",
    "Envelope",
    "Io",
    "Meta",
    "Outcome",
    "Pipeline",
    "Route",
    "Runner",
    "Sleep",
    "Stage",
    "Step",
    "Steps",
    "approval",
    "audit",
    "claim",
    "dispatch",
    "give_up",
    "guard",
    "plan",
    "run",
    "settle",
    "validate",
]

publish_all(globals())
