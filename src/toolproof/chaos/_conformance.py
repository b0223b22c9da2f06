"""`toolproof chaos stdio:CMD --conformance`: does this MCP server run a write once when a client repeats it?

Per write tool, three repeats a client makes without meaning to (a resend on the same session; a call whose
stream is cut while it runs, re-issued on a new session; every call on a session of its own), counted by the
read tool named with `--count-with` (else by whether the repeat was answered as a replay). When the server
announces toolproof's identity extension (`dev.toolproof/operations` under `capabilities.extensions`), two
more checks hold it to what it announced, with the `_meta` keys it named: the same call in another
conversation is another operation (it runs, it is not answered with the first one's result), and so is the
same call by another principal (who must never be handed the first one's answer).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
from mcp.client.stdio import StdioServerParameters

from ..mcp._server import META_CONVERSATION_ID, META_PRINCIPAL, OPERATIONS_EXTENSION
from ._arguments import arguments_for
from ._callers import Reply
from ._run import DEFAULT_PRINCIPAL
from ._servers import ServerCall, ServerRun, guarded, parse_command

__all__ = ["CHECKS", "Check", "run_conformance"]

Verdict = Literal["pass", "fail", "not observable", "not announced"]

#: The checks, in the order they are reported: key and what is asked.
CHECKS: Final[tuple[tuple[str, str], ...]] = (
    ("resend", "a resend of the same call on the same session runs it once"),
    ("cut_stream", "a call whose stream is cut while it runs, re-issued on a new session, runs once"),
    ("session_per_call", "the same call on a session of its own each time runs once"),
    ("identity_conversation", "announced identity: the same call in another conversation is another operation"),
    ("identity_principal", "announced identity: the same call by another principal is never answered with the "
                           "first one's result"),
)
_CUT_AFTER_S: Final = 0.05
_TIMEOUT_S: Final = 60.0  # how long the first call's stream stays open before it is cut


@dataclass(frozen=True, slots=True)
class Check:
    """One check of one tool: the verdict, the effects counted (None: not counted), the replies, and why."""

    tool: str
    check: str
    verdict: Verdict
    effects: int | None
    told: tuple[str, ...]
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "conformance", "tool": self.tool, "check": self.check, "verdict": self.verdict,
                "effects": self.effects, "told": list(self.told), "evidence": self.evidence}


def run_conformance(command: str, *, tools: Sequence[str] = (), arguments: Mapping[str, dict[str, Any]] | None = None,
                    count_with: str | None = None, principal: str = DEFAULT_PRINCIPAL) -> list[Check]:
    run = ServerRun(parse_command(command), dict(arguments or {}), count_with, principal)
    return guarded(command, lambda: anyio.run(_all, run, tools))


async def _announced(run: ServerRun) -> dict[str, Any] | None:
    """The identity extension's settings as the server announces them to a client that negotiates the
    2026-07-28 revision (extensions exist only there); None when it announces none."""
    from mcp import Client

    target: Any = run.argv[0] if run.http else StdioServerParameters(command=run.argv[0], args=run.argv[1:],
                                                                      env=dict(os.environ))
    with anyio.fail_after(_TIMEOUT_S):
        async with Client(target, read_timeout_seconds=_TIMEOUT_S) as client:
            found = (client.server_capabilities.extensions or {}).get(OPERATIONS_EXTENSION)
    return dict(found) if isinstance(found, dict) else None


async def _all(run: ServerRun, names: Sequence[str]) -> list[Check]:
    chosen, extensions = await run.listing(names)
    announced = extensions.get(OPERATIONS_EXTENSION) or await _announced(run)
    meta = announced.get("meta", {}) if isinstance(announced, dict) else {}
    keys = (str(meta.get("conversation", META_CONVERSATION_ID)), str(meta.get("principal", META_PRINCIPAL)))
    journaled = set(announced.get("journaledTools", [])) if isinstance(announced, dict) else set()
    checks: list[Check] = []
    for tool in chosen:
        args = arguments_for(tool.input_schema, (), run.given.get(tool.name))
        for key, _ in CHECKS:
            if key.startswith("identity_") and announced is None:
                checks.append(Check(tool.name, key, "not announced", None, (),
                                    f"the server does not announce {OPERATIONS_EXTENSION}"))
                continue
            call = ServerCall(run, tool, args, f"chaos-{uuid.uuid4().hex[:12]}", keys)
            replies = await _CHECKS[key](call)
            found = _verdict(key, call, replies, counted=run.count_with is not None)
            if found.verdict == "fail" and tool.name in journaled and not key.startswith("identity_"):
                found = Check(found.tool, key, "fail", found.effects, found.told,
                              f"{found.evidence}, though the server announces it as a journaled tool")
            checks.append(found)
    return checks


def _verdict(key: str, call: ServerCall, replies: list[Reply], *, counted: bool) -> Check:
    effects = round(call.effects) if counted else None
    told = tuple(r.told for r in replies)
    name = call.tool.name
    if key.startswith("identity_"):  # the second call is another operation: it runs, or it is refused
        whose = "conversation" if key == "identity_conversation" else "principal"
        if replies[-1].replayed:
            return Check(name, key, "fail", effects, told, f"answered with the first call's result (replayed) for "
                                                            f"another {whose}")
        if effects is not None and replies[-1].ok and effects < 2:
            return Check(name, key, "fail", effects, told, f"the other {whose} was told ok, but its call did not "
                                                            f"run ({effects} effect(s) for the two operations)")
        return Check(name, key, "pass", effects, told, "treated as another operation")
    if effects is not None:
        if effects == 0:
            return Check(name, key, "not observable", effects, told, "it never took effect: give --args for a call "
                                                                     "that does")
        verdict: Verdict = "pass" if effects == 1 else "fail"
        return Check(name, key, verdict, effects, told, f"ran {effects} time(s) (--count-with {call.run.count_with})")
    if replies[-1].replayed:
        return Check(name, key, "pass", None, told, "the repeat was answered as a replay (not counted: no "
                                                    "--count-with)")
    return Check(name, key, "not observable", None, told, "no --count-with TOOL, and the repeat was not a replay")


async def _resend(call: ServerCall) -> list[Reply]:
    async with call.session() as server:
        return [await call.send(server), await call.send(server)]


async def _cut_stream(call: ServerCall) -> list[Reply]:
    first: list[Reply] = []
    async with call.session() as server:
        with anyio.move_on_after(_CUT_AFTER_S):  # the stream is cut whether or not the reply came in time
            first.append(await call.send(server))
    told = f"stream cut after {_CUT_AFTER_S:g} s" + (f"; it was {first[0].told}" if first else " (no reply yet)")
    async with call.session() as server:
        second = await call.send(server)
    return [Reply.lost(told), second]


async def _session_per_call(call: ServerCall) -> list[Reply]:
    replies = []
    for _ in range(2):
        async with call.session() as server:
            replies.append(await call.send(server))
    return replies


async def _other_conversation(call: ServerCall) -> list[Reply]:
    async with call.session() as server:
        return [await call.send(server), await call.send(server, conversation=f"{call.conversation}-other")]


async def _other_principal(call: ServerCall) -> list[Reply]:
    async with call.session() as server:
        return [await call.send(server), await call.send(server, principal=f"{call.run.principal}-other")]


_CHECKS: Final[dict[str, Callable[[ServerCall], Awaitable[list[Reply]]]]] = {
    "resend": _resend,
    "cut_stream": _cut_stream,
    "session_per_call": _session_per_call,
    "identity_conversation": _other_conversation,
    "identity_principal": _other_principal,
}
