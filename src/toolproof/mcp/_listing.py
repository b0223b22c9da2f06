"""An untrusted upstream's tool listing made safe before any client or model reads it.

Drift pinning catches a definition that changes later; on first sight the model reads whatever the upstream
listed. So the words of an untrusted upstream's tool (description, title, the `description`, `title` and enum
labels of its schemas) go through the same rule as its results (`contract.untrusted.neutralise`) and are
capped. What cannot be changed without breaking calls (parameter names, enum and const values) is left as
sent and reported. `clean_listing` says what it changed, for `gateway --check`, the start table and /metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types

from ..contract._untrusted import findings, neutralise

__all__ = ["MAX_DESCRIPTION", "MAX_SCHEMA_TEXT", "MAX_TITLE", "Neutralised", "clean_listing"]

#: The most characters of an untrusted tool's description served (longer ones are cut and end with `…`).
MAX_DESCRIPTION: Final = 4000
#: ... of a title (the tool's, or its annotations').
MAX_TITLE: Final = 200
#: ... of a text inside its schemas (a parameter's description or title, an enum label).
MAX_SCHEMA_TEXT: Final = 1000
# Schema keys whose strings are words for the model, not values the call sends back.
_WORDS: Final = frozenset(
    {
        "description",
        "title",
        "enumNames",
        "enumDescriptions",
        "x-enum-descriptions",
        "x-enumNames",
        "markdownDescription",
    }
)
_VALUES: Final = frozenset({"enum", "const"})


@dataclass(frozen=True, slots=True)
class Neutralised:
    """One place of a listing that was not served as sent: where (a JSON pointer into the tool), what was found
    (`markup tags`, `chat-template tokens`, `control or invisible characters`, `cut to N characters`), and
    whether it was left as sent (`kept`: a name or a value the call needs verbatim)."""

    where: str
    found: tuple[str, ...]
    kept: bool = False

    def __str__(self) -> str:
        return f"{self.where} ({', '.join(self.found)}{'; left as sent' if self.kept else ''})"


def _clean(text: str, limit: int, where: str, out: list[Neutralised]) -> str:
    found = findings(text)
    clean = neutralise(text)
    if len(clean) > limit:
        clean = clean[: limit - 1] + "…"
        found.append(f"cut to {limit} characters")
    if found:
        out.append(Neutralised(where, tuple(found)))
    return clean


def _schema(node: Any, where: str, out: list[Neutralised], depth: int = 0) -> Any:
    """A copy of a schema with its words cleaned; names and values reported, not changed."""
    if depth > 64:
        return node
    if isinstance(node, list):
        return [_schema(item, f"{where}/{i}", out, depth + 1) for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    copy: dict[str, Any] = {}
    for key, value in node.items():
        here = f"{where}/{_escape(str(key))}"
        if key in _WORDS and isinstance(value, str):
            copy[key] = _clean(value, MAX_SCHEMA_TEXT, here, out)
        elif key in _WORDS and isinstance(value, list):
            copy[key] = [
                _clean(v, MAX_SCHEMA_TEXT, f"{here}/{i}", out) if isinstance(v, str) else v for i, v in enumerate(value)
            ]
        elif key in _VALUES:
            out.extend(_kept(value, here))
            copy[key] = value
        elif key == "properties" and isinstance(value, dict):
            for name in value:
                out.extend(_kept(name, f"{here}/{_escape(str(name))}"))
            copy[key] = {
                name: _schema(sub, f"{here}/{_escape(str(name))}", out, depth + 1) for name, sub in value.items()
            }
        else:
            copy[key] = _schema(value, here, out, depth + 1)
    return copy


def _kept(value: Any, where: str) -> Iterator[Neutralised]:
    for i, item in enumerate(value if isinstance(value, list) else [value]):
        if isinstance(item, str) and (found := findings(item)):
            yield Neutralised(f"{where}/{i}" if isinstance(value, list) else where, tuple(found), kept=True)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def clean_listing(remote: types.Tool) -> tuple[types.Tool, tuple[Neutralised, ...]]:
    """The tool as served to clients of an untrusted upstream, and every place that differs from (or, kept,
    would be neutralised in) what the upstream listed. A clean listing comes back unchanged, with `()`."""
    out: list[Neutralised] = []
    update: dict[str, Any] = {}
    if remote.description is not None:
        update["description"] = _clean(remote.description, MAX_DESCRIPTION, "/description", out)
    if remote.title is not None:
        update["title"] = _clean(remote.title, MAX_TITLE, "/title", out)
    annotations = remote.annotations
    if annotations is not None and annotations.title is not None:
        title = _clean(annotations.title, MAX_TITLE, "/annotations/title", out)
        update["annotations"] = annotations.model_copy(update={"title": title})
    update["input_schema"] = _schema(remote.input_schema, "/inputSchema", out)
    if remote.output_schema is not None:
        update["output_schema"] = _schema(remote.output_schema, "/outputSchema", out)
    out.extend(_kept(remote.name, "/name"))
    if not out:
        return remote, ()
    return remote.model_copy(update=update), tuple(out)
