"""Description rules (TP2xx): what the tool does, when to use it, when not (naming the neighbour), and what
comes back. The description is most of what the model knows about a tool."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from ...contract._untrusted import findings
from .._config import LintConfig
from .._model import ToolDef
from .._text import STOPWORDS, canonical, name_words
from ._base import Hit, Rule

# The phrase patterns are matched against the folded (lower-case) description: `text.folded`. `WHEN` and
# `WHEN_NOT` are public: TP208's guidelines component reads the same phrases.
_FILLER: Final = frozenset({"get", "gets", "return", "returns", "tool", "function", "this", "item", "items",
                            "information", "info", "data", "details"})
WHEN: Final = re.compile(
    r"\b(use (this|it|when|for|to|if|only|after|before)|used (to|for|when)|useful (for|when)|when (you|the|a|an|"
    r"user|users|asked|needed|you're)|if (you|the user)|call (this|it) (when|to|if|for)|should be used|"
    r"helpful (for|when)|ideal for|best for|intended for|designed (for|to)|for (example|instance)|e\.g\.|"
    r"use case|good for|meant for|appropriate (for|when))",
)
WHEN_NOT: Final = re.compile(
    r"\b(do not|don't|never|avoid|instead|rather than|not (for|to be used|suitable|meant|intended)|"
    r"only (for|when|if|after|use)|prefer|must not|should not|unless|except)\b",
)
_RETURNS: Final = re.compile(
    r"\b(return|returns|returned|returning|respond|responds|response|result|results|output|outputs|gives|yields|"
    r"provides|produces|lists?|list of|shows?|reports?|displays?|prints?|retrieves?|fetch(es)?|gets?|reads?|"
    r"contents?|with (the|its)|including|containing|tells?|answers?|checks?|searche?s? for|finds?|"
    r"download(s)?|summary|calculates?|computes?|generates?|converts?|providing|estimates?|predicts?|"
    r"determines?|translates?|summari[sz]es?|describes?|analy[sz]es?|counts?|creates?|recommends?|"
    r"looks? up|lookups?|locates?|identif(y|ies)|detects?|exports?|renders?|converts?|extracts?)\b",
)


def check_missing(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if not tool.description_text.strip():
        yield Hit(tool, tool.description_pointer, "the tool has no description: the model sees only its name",
                  "Say what it does, when to use it, when not to, and what it returns.")


def check_short(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    n = len(tool.description_words) + tool.description_cjk // 2  # about two characters per CJK word
    limit = int(config.threshold("min-description-words"))
    if n and n < limit:
        yield Hit(tool, tool.description_pointer, f"the description has {n} word(s) "
                  f"({tool.description_text.strip()!r}); too short to tell this tool from its neighbours",
                  "Say what it does, when to use it, when not to, and what it returns.")


def check_restates_name(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if not isinstance(tool.name, str) or tool.description_cjk:
        return  # a CJK description cannot be compared word by word with an ASCII name
    words = [w for w in tool.description_words if w not in STOPWORDS]
    if not words:
        return
    name = {canonical(w) for w in name_words(tool.name)}
    if not any(w not in _FILLER and canonical(w) not in name for w in words):  # stops at the first word of its own
        yield Hit(tool, tool.description_pointer, f"the description ({tool.description_text.strip()!r}) only "
                  f"restates the name {tool.name!r}", "Say what the name cannot: the scope, when to use it, "
                  "what it returns.")


def check_no_when(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if tool.description_text.strip() and not tool.description_cjk and not WHEN.search(tool.description_folded):
        yield Hit(tool, tool.description_pointer, "the description does not say when to use the tool",
                  f"Add a sentence saying which requests {tool.name!r} is for: 'Use this when ...'.")


_NAME_TOKEN: Final = re.compile(r"[A-Za-z0-9_.\-]{4,}")


def check_no_when_not(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    if len(tools) < 2:
        return
    names = {t.name for t in tools if isinstance(t.name, str) and len(t.name) > 3}
    for tool in tools:
        text = tool.description_text
        if not text.strip() or tool.description_cjk or WHEN_NOT.search(tool.description_folded):
            continue
        # Token lookup, not a substring scan per neighbour: linear in the toolset, not quadratic.
        tokens = {tok.strip(".-") for tok in _NAME_TOKEN.findall(text)}
        if not (tokens & names) - {tool.name}:
            yield Hit(tool, tool.description_pointer, "the description does not say when not to use the tool "
                      "or which neighbour to use instead", "Add 'Do not use it for X (call other_tool).'")


def check_no_return(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    if not tool.description_text.strip() or isinstance(tool.output_schema, dict) or tool.description_cjk:
        return  # the phrase lists are English; a CJK description is not judged
    if not _RETURNS.search(tool.description_folded):
        yield Hit(tool, tool.description_pointer, "there is no output schema and the description does not say "
                  "what comes back", "Add 'Returns ...' to the description, or publish an output schema.")


def check_markup(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    """Words the model reads that carry markup, chat-template tokens or invisible characters (tool poisoning):
    the same rule the gateway neutralises an untrusted upstream's listing with (`contract.untrusted`)."""
    texts = [tool.description_text]
    for node in tool.nodes:
        title = node.schema.get("title")
        texts += (node.description, title) if isinstance(title, str) else (node.description,)
    if not findings("\n".join(texts), any_tag=False):
        return  # none of the patterns is anchored: clean joined text means every text is clean
    for pointer, text in _texts(tool):
        found = findings(text, any_tag=False)
        if found:
            yield Hit(tool, pointer, f"the text carries {', '.join(found)}: a model reading the listing could take "
                      "it for the harness or the system (tool poisoning)",
                      "Remove the tags, tokens and invisible characters; the gateway serves an untrusted upstream's "
                      "text neutralised.")


def _texts(tool: ToolDef) -> Iterator[tuple[str, str]]:
    """(pointer, text) of the description and of every schema description and title."""
    yield tool.description_pointer, tool.description_text
    for node in tool.nodes:
        yield from ((f"{node.pointer}/{key}", node.schema[key]) for key in ("description", "title")
                    if isinstance(node.schema.get(key), str))


RULES: Final = (
    Rule("TP201", "description-missing", "error", "The tool has no description.",
         "Without one the model guesses from the name alone.", "Write what it does, when (not) to use it, "
         "what it returns.", tool_check=check_missing, family="descriptions"),
    Rule("TP202", "description-too-short", "warning", "The description is shorter than the minimum word count.",
         "A few words cannot separate a tool from its neighbours ('Gets data.').",
         "Say what it does, when to use it, when not to, and what it returns.", tool_check=check_short,
         family="descriptions"),
    Rule("TP203", "description-restates-name", "warning", "The description only repeats the name.",
         "It adds nothing the model did not already have.", "Say what the name cannot.",
         tool_check=check_restates_name, family="descriptions"),
    Rule("TP204", "description-no-when", "advice", "The description does not say when to use the tool.",
         "The model has to infer the situations it is for; near neighbours get confused.",
         "Add 'Use this when ...'.", tool_check=check_no_when, family="descriptions"),
    Rule("TP205", "description-no-when-not", "advice", "The description neither says when not to use the tool "
         "nor names a neighbour to use instead.", "Pointing at the neighbour is what stops wrong picks between "
         "look-alike tools.", "Add 'Do not use it for X (call other_tool).'", toolset_check=check_no_when_not,
         family="descriptions"),
    Rule("TP206", "description-no-return", "advice", "No output schema and the description does not say what "
         "comes back.", "The model plans the next step from what it expects back.",
         "Add 'Returns ...' or an output schema.", tool_check=check_no_return, family="descriptions"),
    Rule("TP207", "description-markup", "error", "A description or title carries role or harness tags, "
         "chat-template tokens or invisible characters.", "Text like `</tool_result><system>` or a zero-width "
         "character in a listing can pose as the harness or hide instructions from a reviewer (tool poisoning).",
         "Plain words only.", tool_check=check_markup, family="descriptions"),
)
