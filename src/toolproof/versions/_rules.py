"""The compatibility rules: one table, read by the diff, the docs and the gateway alike.

Vocabulary from schema registries (Confluent): a change keeps BACKWARD compatibility when a reader on the new
schema reads everything written against the old one, FORWARD when a reader on the old schema reads everything
written against the new one, FULL when both, NONE when neither. Each part of a tool definition has a reader:

- `input`: the tool reads what the model writes, and models, prompts and evals written against the old
  definition keep writing old calls: the new tool must read them, so inputs need BACKWARD.
- `output`: callers written against the old output read what the new tool returns: outputs need FORWARD.
- `errors` (the error contract) and `tools` (the set of tool names): stored records, prompts and evals name
  old classes and old tools, so both need BACKWARD: add freely, retire by no longer emitting, never remove.

A change that keeps what its part needs is **compatible**, one that does not is **breaking**. Text the model
reads (descriptions, titles, examples, defaults) is **behavioural**: nothing fails to parse, but the model
may act differently, so the evals run again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Keeps = Literal["full", "backward", "forward", "none"]
Part = Literal["tools", "input", "output", "errors", "behaviour"]
ChangeClass = Literal["breaking", "behavioural", "compatible"]

#: Worst first: the order `--fail-on` and summaries use.
CLASSES: Final[tuple[ChangeClass, ...]] = ("breaking", "behavioural", "compatible")
#: What each part needs to stay compatible (see the module docstring).
NEEDS: Final[dict[Part, Keeps]] = {
    "tools": "backward", "input": "backward", "output": "forward", "errors": "backward", "behaviour": "full",
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of change: what it keeps, and why, in one sentence."""

    kind: str
    keeps: Keeps
    why: str
    behavioural: bool = False


_RULES: Final = (
    Rule("tool-added", "backward", "a new tool: nobody called it before"),
    Rule("tool-removed", "forward", "calls, prompts and evals that name it fail"),
    Rule("field-added-optional", "full", "old calls omit it; old readers ignore it"),
    Rule("field-added-required", "forward", "old calls lack it; old readers ignore it"),
    Rule("field-removed", "forward", "strict schemas reject old calls that send it; old readers can do without "
         "an optional field"),
    Rule("field-removed-required", "none", "strict schemas reject old calls that send it; old readers need it"),
    Rule("field-renamed", "none", "old calls use the old name; old readers look for it"),
    Rule("field-now-required", "forward", "old calls may omit it; old readers always get it"),
    Rule("field-now-optional", "backward", "old calls still valid; old readers may miss it"),
    Rule("type-widened", "backward", "every old value is still valid; new values may surprise old readers"),
    Rule("type-narrowed", "forward", "some old values are rejected"),
    Rule("type-changed", "none", "old values are rejected and new ones surprise old readers"),
    Rule("enum-widened", "backward", "values added: old values still valid"),
    Rule("enum-narrowed", "forward", "values removed: old values rejected"),
    Rule("enum-changed", "none", "values both added and removed"),
    Rule("range-widened", "backward", "a bound loosened or dropped (minimum, maxLength, pattern, ...)"),
    Rule("range-narrowed", "forward", "a bound tightened or added"),
    Rule("constraint-changed", "none", "a pattern, format or multipleOf replaced by another"),
    Rule("schema-changed", "none", "a change the rules cannot prove safe ($ref, anyOf, an unknown keyword)"),
    Rule("error-class-added", "backward", "old records still parse; a reader of the new class acts on its "
         "`next_action`"),
    Rule("error-class-removed", "forward", "old records, prompts and evals that name it no longer parse"),
    Rule("safety-weakened", "none", "read-only became a write, idempotent became not, or not destructive "
         "became destructive: callers retry or auto-approve what they should not"),
    Rule("safety-strengthened", "full", "the tool promises more than before"),
    Rule("description-changed", "full", "the model reads it: behaviour may change", behavioural=True),
    Rule("title-changed", "full", "the model or the person reads it", behavioural=True),
    Rule("examples-changed", "full", "the model imitates examples", behavioural=True),
    Rule("default-changed", "full", "an omitted field now means something else", behavioural=True),
    Rule("hint-changed", "full", "an annotation that changes how clients present the tool", behavioural=True),
)
RULES: Final = {r.kind: r for r in _RULES}


def classify(kind: str, part: Part) -> ChangeClass:
    """The class of one change of `kind` in `part`: behavioural text, else compatible iff it keeps what the
    part needs."""
    rule = RULES[kind]
    if rule.behavioural:
        return "behavioural"
    need = NEEDS[part]
    return "compatible" if rule.keeps in ("full", need) else "breaking"


def at_least(klass: ChangeClass, threshold: ChangeClass) -> bool:
    """True when `klass` is as bad as `threshold` or worse (breaking > behavioural > compatible)."""
    return CLASSES.index(klass) <= CLASSES.index(threshold)
