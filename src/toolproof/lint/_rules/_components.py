"""TP208: which of the six description components a tool's description lacks, and what it costs now.

The components are those of a 2026 study of 856 MCP tools on 103 servers ("MCP Tool Descriptions Are Smelly!",
arXiv 2602.14878): purpose, guidelines (when to use it), limitations, parameters explained, length, examples.
There 97.1% of descriptions had at least one smell; descriptions fixed for every component raised task success by
a median 5.85 points and took 67% more steps. So the finding names what is missing *and* the description's token
cost, for the author to weigh. The study scored components with a model; these are word heuristics, each one
line below, tested on planted positives and negatives.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Final

from .._config import LintConfig
from .._model import ToolDef
from .._text import VERBS, name_words, text_words
from ._base import Hit, Rule
from ._descriptions import WHEN, WHEN_NOT
from ._params import example_given

CHARS_PER_TOKEN: Final = 4  # an estimate for English text, said in every message: no tokenizer is loaded
MIN_WORDS: Final = 20  # length: enough words to hold the other components
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|\n")
#: Words before the action in a first sentence: "This tool retrieves ...", "Allows you to create ...".
_LEAD: Final = frozenset({"this", "the", "a", "an", "tool", "function", "endpoint", "api", "method", "it", "will",
                          "can", "lets", "allows", "helps", "you", "to", "is", "used", "simply"})
#: Example markers, which TP204's "when" phrases accept: an example is its own component, not a guideline.
_EXAMPLE_MARKERS: Final = re.compile(r"e\.g\.|\bfor (example|instance)\b")
_LIMITS: Final = re.compile(
    r"\b(only|cannot|can't|can ?not|does not|doesn't|won't|not (supported|available|possible)|unsupported|limits?|"
    r"limited|at most|up to|maximum|max|no more than|requires?|must|fails?|errors?|rate[- ]limit(ed)?|quota|"
    r"time ?out|times out|unless|except|deprecated|expires?|beware|caution|warning|note:)\b")


#: Verbs descriptions lead with that tool names rarely do ("Provides usage analytics", "Echoes the input").
_DESCRIPTION_VERBS: Final = frozenset({"provide", "echo", "offer", "produce", "contain", "give"})


def _is_verb(word: str) -> bool:
    """A verb of the lexicon in its base, third-person or -ing form (retrieves, lists, fetching)."""
    forms = [word]
    if word.endswith("ies"):
        forms.append(word[:-3] + "y")
    if word.endswith("es"):
        forms.append(word[:-2])
    if word.endswith("s"):
        forms.append(word[:-1])
    if word.endswith("ing"):
        forms += [word[:-3], word[:-3] + "e"]
    return any(f in VERBS or f in _DESCRIPTION_VERBS for f in forms)


def _has_purpose(text: str) -> bool:
    """The first sentence leads with an action (after "This tool", "Allows you to", ...) and has three words."""
    words = text_words(_SENTENCE_END.split(text.strip(), maxsplit=1)[0])
    lead = next((w for w in words if w not in _LEAD), None)
    return len(words) >= 3 and lead is not None and _is_verb(lead)


def _unexplained(tool: ToolDef, low: str) -> list[str]:
    """Top-level parameters with no schema description whose name the description does not mention either."""
    said = set(text_words(low))
    out = []
    for name, prop in tool.properties.items():
        described = isinstance(prop, dict) and isinstance(prop.get("description"), str) and prop["description"].strip()
        words = set(name_words(str(name)))
        if not described and not (words and words <= said):  # order_id: "the order's id" names it
            out.append(str(name))
    return out


def missing_components(tool: ToolDef) -> list[str]:
    """The components the description lacks, in the study's order (empty for a description with all six)."""
    text = tool.description_text
    low = tool.description_folded
    missing = []
    if not _has_purpose(text):
        missing.append("purpose")
    guidance = _EXAMPLE_MARKERS.sub(" ", low)
    if not (WHEN.search(guidance) or WHEN_NOT.search(guidance)):
        missing.append("guidelines")
    if not _LIMITS.search(low):
        missing.append("limitations")
    unexplained = _unexplained(tool, low)
    if unexplained:
        shown = ", ".join(unexplained[:3]) + (", ..." if len(unexplained) > 3 else "")
        missing.append(f"parameters ({shown} explained nowhere)")
    if len(tool.description_words) < MIN_WORDS:
        missing.append("length")
    if not example_given(tool):
        missing.append("examples")
    return missing


def check_components(tool: ToolDef, config: LintConfig) -> Iterator[Hit]:
    text = tool.description_text
    if not text.strip() or tool.description_cjk:
        return  # no description is TP201's; the heuristics are English words
    missing = missing_components(tool)
    if not missing:
        return
    tokens = math.ceil(len(text) / CHARS_PER_TOKEN)
    yield Hit(tool, tool.description_pointer, f"the description lacks {len(missing)} of 6 components: "
              f"{'; '.join(missing)}. It is {len(text)} characters, about {tokens} tokens (estimated at "
              f"{CHARS_PER_TOKEN} characters a token), read on every request that lists the tool",
              "Add a sentence for each missing component this tool needs: what it does, when (not) to use it, "
              "its limits, what each parameter means, an example call. In the study of 856 MCP tools, descriptions "
              "fixed for all six gained a median +5.85 points of task success and took +67% steps: weigh the "
              "tokens you add.")


RULES: Final = (
    Rule("TP208", "description-components", "advice", "The description lacks some of six components: purpose, "
         "guidelines (when to use), limitations, parameters explained, length, examples.",
         "A study of 856 MCP tools found 97% of descriptions lacking one; fixing all six raised task success "
         "(median +5.85 points) and cost 67% more steps, so the finding gives the description's token cost.",
         "Add the components this tool needs, in a sentence each.", tool_check=check_components,
         family="descriptions", default_on=False),
)
