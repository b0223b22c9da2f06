"""The compatibility diff of two locks: every change, field by field, with its kind and class."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from ._lock import Lock, ToolEntry
from ._rules import CLASSES, RULES, ChangeClass, Part, at_least, classify
from ._schema_diff import SchemaChange, schema_changes

#: Annotation hints whose change weakens a promise when it goes this way (old, new).
_WEAKER: Final = {"readOnlyHint": (True, False), "idempotentHint": (True, False), "destructiveHint": (False, True)}
#: What MCP says a hint left out means.
_DEFAULTS: Final = {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": True, "openWorldHint": True}


@dataclass(frozen=True, slots=True)
class Change:
    """One change to one tool (or to the error contract, `tool` empty), located by a JSON pointer into the
    locked definition (`/inputSchema/properties/qty`)."""

    tool: str
    part: Part
    kind: str
    change_class: ChangeClass
    pointer: str
    old: Any = None
    new: Any = None

    @property
    def keeps(self) -> str:
        return RULES[self.kind].keeps

    @property
    def why(self) -> str:
        return RULES[self.kind].why

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "keeps": self.keeps}


def _change(tool: str, part: Part, c: SchemaChange, base: str) -> Change:
    return Change(tool, part, c.kind, classify(c.kind, part), base + c.pointer, c.old, c.new)


def diff_locks(old: Lock, new: Lock) -> list[Change]:
    """Every change from `old` to `new`: tools added and removed, each kept tool field by field, and the error
    contract's classes. Empty when the two hold the same definitions, whatever their key order."""
    out: list[Change] = []
    for name in sorted(set(old.tools) | set(new.tools)):
        a, b = old.tools.get(name), new.tools.get(name)
        if a is None:
            out.append(Change(name, "tools", "tool-added", classify("tool-added", "tools"), "", None, name))
        elif b is None:
            out.append(Change(name, "tools", "tool-removed", classify("tool-removed", "tools"), "", name, None))
        else:
            out.extend(diff_tools(a, b))
    for cls in sorted(set(old.errors.classes) ^ set(new.errors.classes)):
        kind = "error-class-added" if cls in new.errors.classes else "error-class-removed"
        out.append(Change("", "errors", kind, classify(kind, "errors"), "/error_contract/classes",
                          cls if kind.endswith("removed") else None, cls if kind.endswith("added") else None))
    return out


def diff_tools(a: ToolEntry, b: ToolEntry) -> list[Change]:
    """The changes of one tool kept under the same name."""
    name = a.name
    out = [_change(name, "input", c, "") for c in schema_changes(
        {"description": a.description, "examples": a.examples}, {"description": b.description, "examples": b.examples})]
    out += [_change(name, "input", c, "/inputSchema") for c in schema_changes(a.input_schema, b.input_schema)]
    out += [_change(name, "output", c, "/outputSchema") for c in schema_changes(a.output_schema, b.output_schema)]
    out += list(_behaviour_changes(a, b))
    return out


def _hints(entry: ToolEntry) -> dict[str, Any]:
    hints = dict(entry.annotations) if isinstance(entry.annotations, Mapping) else {}
    if entry.effect is not None:
        hints["effect"] = entry.effect
    if entry.idempotent is not None:
        hints["idempotent"] = entry.idempotent
    return hints


def _behaviour_changes(a: ToolEntry, b: ToolEntry) -> Iterator[Change]:
    """Annotations, effect and idempotency: a weakened safety promise is breaking, the rest is text. A hint
    left out means its MCP default."""
    old, new = _hints(a), _hints(b)
    for key in sorted(set(old) | set(new)):
        x, y = old.get(key, _DEFAULTS.get(key)), new.get(key, _DEFAULTS.get(key))
        if x == y:
            continue
        if key in _WEAKER or key in ("effect", "idempotent"):
            kind = "safety-weakened" if _weakened(key, x, y) else "safety-strengthened"
        else:
            kind = "title-changed" if key == "title" else "hint-changed"
        pointer = f"/{key}" if key in ("effect", "idempotent") else f"/annotations/{key}"
        yield Change(a.name, "behaviour", kind, classify(kind, "behaviour"), pointer, x, y)


def _weakened(key: str, old: Any, new: Any) -> bool:
    if key == "effect":
        return bool(old == "read")
    if key == "idempotent":
        return old is True
    return bool((old, new) == _WEAKER[key])


def counts(changes: Sequence[Change]) -> dict[str, int]:
    """Changes per class, every class present (zero included), worst first."""
    found = Counter(c.change_class for c in changes)
    return {k: found.get(k, 0) for k in CLASSES}


def worst(changes: Sequence[Change]) -> ChangeClass | None:
    return next((k for k in CLASSES if any(c.change_class == k for c in changes)), None)


def fails(changes: Sequence[Change], fail_on: ChangeClass) -> bool:
    """True when a change at or above `fail_on` exists (breaking > behavioural > compatible)."""
    return any(at_least(c.change_class, fail_on) for c in changes)
