"""A repeated write asked about the 2026-07-28 way: `needs_clarification` as an `InputRequiredResult`.

When an identical write comes again with no conversation (`REPEAT_WITHOUT_CONVERSATION`), or the same
operation with other arguments after it was done (`ALREADY_DONE_DIFFERENT_ARGS`), the runner answers
`needs_clarification`: a person must say whether a second one is meant. A client on 2026-07-28 that can
elicit gets that question as an `InputRequiredResult` holding one form elicitation (`{"second": boolean}`)
and a `requestState` naming the occurrence to use; the envelope rides along in the result's `_meta`
(`dev.toolproof/envelope`). The client retries the `tools/call` with the answer, under a new request id:
accepted, the call runs as that occurrence (so a re-issue of the retry, after a broken stream, has the
same key and replays); declined or cancelled, the envelope is the result. Other clients get the envelope.

`requestState` comes back from the client and is treated as untrusted: it only chooses an `occurrence`,
which a client may already send in `_meta` (`dev.toolproof/occurrence`), and it must name the tool called.
"""

from __future__ import annotations

import json
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..contract._context import CallContext
from ..contract._envelope import Envelope

__all__ = ["ASKED_CODES", "ENVELOPE_META", "QUESTION_KEY", "answered_occurrence", "input_required"]

#: The `needs_clarification` codes whose answer is "a second one" (a new occurrence) or not.
ASKED_CODES: Final = frozenset({"REPEAT_WITHOUT_CONVERSATION", "ALREADY_DONE_DIFFERENT_ARGS"})
#: The key of the one input request, and of its answer in `inputResponses`.
QUESTION_KEY: Final = "dev.toolproof/second"
#: Where the envelope travels on an `InputRequiredResult` (it has no content of its own).
ENVELOPE_META: Final = "dev.toolproof/envelope"
_STATE_VERSION: Final = 1
_MAX_OCCURRENCE: Final = 1000


def can_ask(ctx: ServerRequestContext[Any, Any]) -> bool:
    """A 2026-07-28 client that declared elicitation (form mode) can be asked inside the call."""
    session = ctx.session
    if getattr(session, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = getattr(session, "client_capabilities", None)
    return capabilities is not None and capabilities.elicitation is not None


def input_required(envelope: Envelope, tool: str, context: CallContext,
                   ctx: ServerRequestContext[Any, Any]) -> types.InputRequiredResult | None:
    """The question for a client that can be asked, else None (the envelope is the answer)."""
    error = envelope.error
    if error is None or error.code not in ASKED_CODES or not can_ask(ctx):
        return None
    occurrence = context.occurrence + 1
    if occurrence > _MAX_OCCURRENCE:
        return None
    question = types.ElicitRequest(params=types.ElicitRequestFormParams(
        message=f"{error.message} Place another one (a second, separate {tool})?",
        requested_schema={"type": "object", "required": ["second"], "properties": {"second": {
            "type": "boolean", "title": "Place another one",
            "description": "true: a second, separate action; false: keep the one that exists"}}},
    ))
    state = json.dumps({"v": _STATE_VERSION, "tool": tool, "occurrence": occurrence}, separators=(",", ":"))
    return types.InputRequiredResult(input_requests={QUESTION_KEY: question}, request_state=state,
                                     _meta={ENVELOPE_META: envelope.to_dict()})


def answered_occurrence(params: types.CallToolRequestParams) -> int | None:
    """The occurrence a retry's answer confirms: the one its `requestState` names when the person accepted
    a second one, else None (no answer, declined, cancelled, or a state for another tool)."""
    answer: Any = (params.input_responses or {}).get(QUESTION_KEY)
    data = answer.model_dump() if hasattr(answer, "model_dump") else answer
    if not isinstance(data, dict) or data.get("action") != "accept":
        return None
    if (data.get("content") or {}).get("second") is not True:
        return None
    try:
        state = json.loads(params.request_state or "")
    except ValueError:
        return None
    if not isinstance(state, dict) or state.get("v") != _STATE_VERSION or state.get("tool") != params.name:
        return None
    occurrence = state.get("occurrence")
    valid = isinstance(occurrence, int) and not isinstance(occurrence, bool) and 0 < occurrence <= _MAX_OCCURRENCE
    return occurrence if valid else None
