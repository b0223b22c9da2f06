"""Size caps at the gateway: an upstream answer too big for a model's context is cut, with a notice it can read;
a request too big to be a sensible tool call is refused before anything else looks at it.

An upstream nobody here wrote can answer megabytes (a whole table, a log, a page of base64). Passed on, it
fills the model's context, the journal and the audit trail. Cut here, the model reads the head and a notice
that says how much there was and what to do instead (ask for less); the full answer is never passed on, and
its size and SHA-256 go to the envelope's `meta.response_capped`, the metrics and the `toolproof.gateway` log.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import mcp_types as types

from ..contract._errors import InvalidArgument

log: Final = logging.getLogger("toolproof.gateway")

DEFAULT_MAX_RESPONSE_BYTES: Final = 2_000_000
DEFAULT_MAX_RESPONSE_CHARS: Final = 200_000
DEFAULT_MAX_REQUEST_BYTES: Final = 1_000_000
#: Room kept for the notice inside the caps (characters and bytes; the notice is ASCII and shorter).
NOTICE_RESERVE: Final = 800


class CapsError(ValueError):
    """A `[caps]` value is wrong (the message names the key)."""


@dataclass(frozen=True, slots=True)
class ResponseCaps:
    """The `[caps]` table: the most an upstream answer may be (bytes on the wire, characters of text) before
    it is cut, and the most a request's arguments may be (bytes of JSON) before it is refused."""

    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES

    def __post_init__(self) -> None:
        for key in ("max_response_bytes", "max_response_chars", "max_request_bytes"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2 * NOTICE_RESERVE:
                raise CapsError(f"[caps] {key} must be an integer of at least {2 * NOTICE_RESERVE}, got {value!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResponseCaps:
        unknown = sorted(set(data) - {"max_response_bytes", "max_response_chars", "max_request_bytes"})
        if unknown:
            raise CapsError(f"[caps]: unknown key(s) {', '.join(unknown)}; allowed: max_request_bytes, "
                            "max_response_bytes, max_response_chars")
        return cls(**dict(data))


DEFAULT_CAPS: Final = ResponseCaps()


@dataclass(frozen=True, slots=True)
class CapInfo:
    """What a cut answer was: its size, its hash, and what was passed on (never the answer itself)."""

    upstream: str
    tool: str
    bytes: int
    chars: int
    sha256: str
    kept_chars: int
    limit_bytes: int
    limit_chars: int

    def as_meta(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "text_chars": self.chars, "sha256": self.sha256, "kept_chars": self.kept_chars,
                "limit_bytes": self.limit_bytes, "limit_chars": self.limit_chars}


@dataclass(slots=True)
class CallNotes:
    """What the layers under one gateway call noticed, for the layer that builds its envelope and metrics."""

    capped: list[CapInfo] = field(default_factory=list)


#: The notes of the gateway call running in this context (set by the gateway around each call; None outside).
CALL_NOTES: Final[contextvars.ContextVar[CallNotes | None]] = contextvars.ContextVar("toolproof_call_notes",
                                                                                      default=None)


def _texts(result: types.CallToolResult) -> list[str]:
    out: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            out.append(block.text)
        elif isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            out.append(block.resource.text)
    return out


def _binary_size(result: types.CallToolResult) -> int:
    size = 0
    for block in result.content:
        if isinstance(block, types.ImageContent | types.AudioContent):
            size += len(block.data)
        elif isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.BlobResourceContents):
            size += len(block.resource.blob)
    return size


def json_bound(value: Any, budget: int) -> int | None:
    """An upper bound of the UTF-8 size of `value` as compact JSON (`ensure_ascii=False`), or None when that bound
    is over `budget` or `value` holds something whose JSON this does not bound (measure it by encoding then).

    A character is at most 6 bytes (`\\u0000`), an int one digit per 3 bits plus a sign, a float 24 characters;
    a walk over a small answer costs far less than encoding it."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += 6 * len(item) + 2
        elif kind is dict:
            total += 2 + 2 * len(item)  # the braces; a colon and a comma an item
            for key, inner in item.items():
                if type(key) is not str:
                    return None
                total += 6 * len(key) + 2
                stack.append(inner)
        elif kind is list or kind is tuple:
            total += 2 + len(item)
            stack.extend(item)
        elif kind is bool or item is None:
            total += 5
        elif kind is int:
            total += item.bit_length() // 3 + 3
        elif kind is float:
            total += 24
        else:
            return None
        if total > budget:
            return None
    return total


def measure(result: types.CallToolResult, max_bytes: int | None = None) -> tuple[int, int]:
    """(bytes, characters of text) of an upstream answer. Bytes are the UTF-8 size of the text, the encoded
    binary blocks and the structured content's JSON; with `max_bytes`, an answer whose upper bound (4 bytes a
    text character, `json_bound` for the structured content) is within it is given that bound, so an ordinary
    answer costs a length and a walk, not an encoding."""
    texts = _texts(result)
    chars = sum(len(t) for t in texts)
    size = _binary_size(result)
    structured = result.structured_content
    if max_bytes is not None:
        bound: int | None = size + 4 * chars
        if structured is not None and bound is not None:
            extra = json_bound(structured, max_bytes - bound)
            bound = None if extra is None else bound + extra
        if bound is not None and bound <= max_bytes:
            return bound, chars  # within the cap either way; the exact size does not matter
    if structured is not None:
        size += len(json.dumps(structured, ensure_ascii=False, separators=(",", ":"),
                               default=str).encode("utf-8", "surrogatepass"))
    size += sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    return size, chars


def cap_response(result: types.CallToolResult, caps: ResponseCaps, *, upstream: str, tool: str,
                 structured_required: bool = False) -> types.CallToolResult:
    """`result`, or, when it is over a cap, its head and a notice as one text block (see the module docstring).

    `structured_required`: the tool declares an output schema, which a cut answer cannot satisfy, so the call
    fails with `RESPONSE_TOO_LARGE` (invalid_argument: ask for less) instead."""
    size, chars = measure(result, caps.max_response_bytes)
    if size <= caps.max_response_bytes and chars <= caps.max_response_chars:
        return result
    texts = _texts(result)
    full = "\n".join(texts) if texts else (
        json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"), default=str)
        if result.structured_content is not None else "")
    # The hash of what was cut (text blocks joined by newlines, else the structured content as JSON): an
    # operator who fetches the same answer upstream can tell it is the one.
    digest = hashlib.sha256(full.encode("utf-8", "surrogatepass")).hexdigest()
    head = full[: max(caps.max_response_chars - NOTICE_RESERVE, 0)]
    room = caps.max_response_bytes - NOTICE_RESERVE
    if len(head) * 4 > room and len(encoded := head.encode("utf-8", "surrogatepass")) > room:
        head = encoded[:room].decode("utf-8", "ignore")
    info = CapInfo(upstream, tool, size, chars, digest, len(head), caps.max_response_bytes, caps.max_response_chars)
    notes = CALL_NOTES.get()
    if notes is not None:
        notes.capped.append(info)
    log.warning("upstream %s, tool %s: answer of %d bytes (%d characters of text, sha256 %s) over the cap; "
                "%d characters passed on", upstream, tool, size, chars, digest, len(head))
    if structured_required:
        raise InvalidArgument(
            f"The answer of {tool} was {size:,} bytes, more than this gateway passes on ({caps.max_response_bytes:,} "
            f"bytes, {caps.max_response_chars:,} characters), and its declared shape cannot be cut; nothing of it "
            f"was passed on (sha256 {digest}).",
            code="RESPONSE_TOO_LARGE",
            hint="Ask for less: a narrower query, a filter, a smaller page or limit. Do not repeat the same call.",
            effect_done=None,
        )
    notice = (
        f"\n\n[toolproof gateway: this answer was cut. The upstream sent {size:,} bytes ({chars:,} characters of "
        f"text); this gateway passes on at most {caps.max_response_bytes:,} bytes and "
        f"{caps.max_response_chars:,} characters, so only the first {len(head):,} characters are shown above. "
        f"The rest was not passed on (sha256 of the full answer: {digest}). Ask for less - a narrower query, a "
        "filter, a smaller page or limit - rather than repeating the same call.]"
    )
    return types.CallToolResult(content=[types.TextContent(text=head + notice)], is_error=result.is_error)


def request_size(arguments: Any, limit: int) -> int | None:
    """The JSON size of a call's arguments in bytes when it is over `limit`, else None (cheap for small ones)."""
    if isinstance(arguments, str | bytes):
        size = len(arguments)
        if size * 4 <= limit:
            return None
        size = len(arguments.encode("utf-8", "surrogatepass")) if isinstance(arguments, str) else size
        return size if size > limit else None
    if json_bound(arguments, limit) is not None:  # the usual call: well under the limit, nothing encoded
        return None
    try:
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    except (ValueError, RecursionError, TypeError):
        return None  # validation refuses what JSON cannot carry, with its own message
    if len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


def request_too_large(size: int, limit: int) -> InvalidArgument:
    return InvalidArgument(
        f"The arguments are {size:,} bytes of JSON; this gateway accepts at most {limit:,}. Nothing was sent.",
        code="REQUEST_TOO_LARGE",
        hint="Send far less: refer to the data (an id, a path, a URL) instead of including it.",
        effect_done=False,
    )
