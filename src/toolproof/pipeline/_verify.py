"""Settled by verify: a write whose outcome is unknown asks its tool's `verify` hook what the outside world holds.

A hook gets the tool's own arguments (the validated ones, and the `CallContext` when the tool declares one, so
it sees the idempotency key) and returns the tool's result when the effect happened, `NOT_DONE` when it did
not; anything it raises means "cannot tell". `verdict` is one check, as steps both drivers perform; `settling`
is a check of a journal entry left `unknown`, with the journal settled by what it said (the runner's resend
and `toolproof journal verify` both use it). What each verdict does to a call is the dispatch and claim
stages' business (`stages.py`).

A "not done" is only acted on once the first attempt can no longer commit: an attempt still running on its
thread after its time limit is waited for (at most `wait_s`) and verify asked again; one still running then
leaves the outcome unknown, never raced by a second dispatch. A "done" needs no wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Generator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from ..contract._context import CallContext
from ..contract._errors import ToolError
from ..contract._redaction import redact_text
from ..contract._tool import NOT_DONE, Tool
from ..journal._journal import Journal
from ..stores._intent import Intent
from ..stores._steps import Io
from ._drivers import in_thread

__all__ = ["Verdict", "bound_for", "settling", "unverifiable", "verdict"]

Bound = tuple[tuple[Any, ...], Mapping[str, Any]]
VerifySteps = Generator[Io, Any, "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a verify said: `done` (with the tool's result, checked against its output schema), `not_done`, or
    `unknown`; `evidence` says why, in words for the stop record and the operator."""

    said: Literal["done", "not_done", "unknown"]
    evidence: str
    result: Any = None

    def as_state(self) -> dict[str, Any]:
        """The verdict as an envelope's `state` / a record's `extra` entry."""
        return {"said": self.said, "evidence": self.evidence}


def verdict(tool: Tool, bound: Bound, *, running: Future[Any] | None = None, wait_s: float = 0.0,
            secrets: list[str] | None = None) -> VerifySteps:
    """Ask `tool.verify`. A "not done" while the first attempt still runs (`running`) is not trusted: the attempt
    is waited for (at most `wait_s`) and verify asked again; still running, the outcome stays unknown."""
    found = yield from _asked(tool, bound, secrets)
    if found.said != "not_done" or running is None:
        return found
    finished = yield Io(_finished, None, (running, wait_s))
    if not finished:
        return Verdict("unknown", f"verify found no effect, but the first attempt was still running {wait_s:g} s "
                                  "after its time limit and may yet commit; it is not sent again")
    return (yield from _asked(tool, bound, secrets))


def _asked(tool: Tool, bound: Bound, secrets: list[str] | None) -> VerifySteps:
    try:
        value = yield Io(_ask, _aask, (tool, bound))
    except TimeoutError:
        return Verdict("unknown", f"verify did not answer within the tool's {tool.timeout_s:g} s")
    except Exception as exc:
        said = redact_text(f"{type(exc).__name__}: {exc}", secrets or [])[:300]
        return Verdict("unknown", f"verify could not tell: it raised {said}")
    if value is NOT_DONE:
        return Verdict("not_done", "verify found no effect")
    try:
        result = tool.check_output(value)
    except ToolError as exc:
        return Verdict("unknown", f"verify's answer breaks the tool's output contract ({exc.code})")
    return Verdict("done", "verify found the effect", result)


def settling(journal: Journal, tool: Tool, entry: Intent, bound: Bound, *,
             secrets: list[str] | None = None) -> VerifySteps:
    """Verify a journal entry whose outcome is unknown, and settle it by the answer: `done` keeps the verified
    result (repeats replay it), `not_done` releases the key (the write may be sent again), `unknown` changes
    nothing. The linked stop records are resolved with the evidence and the reconciliation is audited (as a
    person's `journal resolve` is). An entry whose attempt may still be running (its lease has not ended) is
    not asked."""
    if _may_still_run(entry, journal.now()):
        return Verdict("unknown", "the first attempt may still be running (its lease has not ended), so verify "
                                  "was not asked")
    found = yield from verdict(tool, bound, secrets=secrets)
    if found.said == "unknown":
        return found
    outcome: Literal["done", "not_done"] = "done" if found.said == "done" else "not_done"
    settle = partial(journal.reconcile, entry.key, outcome, result=found.result, note=f"verified: {found.evidence}")
    yield Io(settle, None, ())
    return found


def unverifiable(tool: Tool | None, entry: Intent) -> str:
    """Why a journal entry's outcome cannot be asked of its tool's verify from the journal alone (no such tool,
    no hook, arguments stored redacted), or "" when it can: the one rule `journal verify` and the inbox share."""
    if tool is None:
        return f"the toolset has no tool {entry.tool!r}"
    if tool.verify is None:
        return f"{entry.tool} has no verify hook: check its system, then `toolproof journal resolve {entry.key}`"
    if tool.secret_paths:
        return (f"{entry.tool} takes secrets, which the journal stores redacted, so verify cannot be given its "
                "arguments: resend the call (the runner verifies it) or resolve it by hand")
    return ""


def bound_for(tool: Tool, entry: Intent) -> Bound:
    """The handler's arguments for a journal entry's stored arguments, under a context naming its key."""
    context = CallContext(call_id=entry.call_id, conversation_id=entry.conversation_id, principal=entry.principal,
                          idempotency_key=entry.key)
    return tool.bind(tool.parse_arguments(entry.arguments), context)


def _may_still_run(entry: Intent, now: float) -> bool:
    """Its attempt outlived its time limit and its lease has not ended: it may still commit."""
    outcome = entry.outcome if isinstance(entry.outcome, Mapping) else {}
    error = outcome.get("error")
    state = error.get("state") if isinstance(error, Mapping) else None
    running = isinstance(state, Mapping) and state.get("attempt_running") is True
    return running and entry.lease_until > now


def _finished(running: Future[Any], wait_s: float) -> bool:
    done, _ = concurrent.futures.wait((running,), timeout=max(wait_s, 0.0))
    return bool(done)


def _ask(tool: Tool, bound: Bound) -> Any:
    """The hook's answer, here (under the tool's `timeout_s`, on a thread of its own: a hook that hangs is
    "cannot tell", never a call that hangs)."""
    if tool.timeout_s is None:
        return _answer(tool, bound)
    return in_thread(f"toolproof-verify-{tool.name}", _answer, (tool, bound)).result(tool.timeout_s)


async def _aask(tool: Tool, bound: Bound) -> Any:
    """The hook's answer, awaited under the tool's `timeout_s`; a sync hook off the event loop."""
    assert tool.verify is not None
    if inspect.iscoroutinefunction(tool.verify):
        args, kwargs = bound
        async with asyncio.timeout(tool.timeout_s):
            return await tool.verify(*args, **kwargs)
    if tool.timeout_s is None:
        return await asyncio.to_thread(_answer, tool, bound)
    future = in_thread(f"toolproof-verify-{tool.name}", _answer, (tool, bound))
    return await asyncio.wait_for(asyncio.wrap_future(future), tool.timeout_s)


def _answer(tool: Tool, bound: Bound) -> Any:
    assert tool.verify is not None
    args, kwargs = bound
    value = tool.verify(*args, **kwargs)
    if inspect.isawaitable(value):
        return asyncio.run(_awaited(value))
    return value


async def _awaited(value: Any) -> Any:
    return await value
