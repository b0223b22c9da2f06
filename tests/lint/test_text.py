"""Folded text (`text.folded`): a rule's lower-case pattern matches it exactly where the same pattern with
IGNORECASE matches the text as written, at the same offsets, whatever the case and the look-alike letters
(dotted and dotless i, long s, the Kelvin sign) that re's IGNORECASE takes for ASCII ones."""

from __future__ import annotations

import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.lint.rules import descriptions, effects, params
from toolproof.lint.text import folded

PATTERNS = [
    descriptions._WHEN, descriptions._WHEN_NOT, descriptions._RETURNS,
    params._UNITLESS, params._GEOMETRY, params._PHYSICAL, params._COUNTED, params._SAMPLING, params._PROSE_SET,
    params._EXAMPLES, params._PROSE_FORMAT, params._DATE_DESC, params._SAYS_DEFAULT, params._SAYS_OPTIONAL,
    params._SAYS_ANY, params._EXAMPLE_WORDS, effects._FRESH_KEY,
]
_WORDS = ["use", "this", "when", "you", "if", "returns", "return", "e.g.", "eg.", "default", "optional", "any",
          "unique", "new", "for", "each", "every", "request", "time", "one of", "the", "such as", "example",
          "date", "yyyy", "iso 8601", "rfc3339", "format", "number of", "how many", "factor", "sphere", "price",
          "sampling", "model", "generate", "a", "fresh", "key", "instead", "do not", "lists", "list of", "with",
          "its", "looks up", "identifies", "options:", "either '", "is", "fixed", "id"]
_SEPARATORS = [" ", "  ", "\n", ", ", ". ", "-", "_", "", "(", ")", "é", "1"]
_LOOKALIKES = {"i": ["I", "İ", "ı"], "s": ["S", "ſ"], "k": ["K", "K"]}  # the last K is the Kelvin sign


def _disguise(text: str, rnd: random.Random) -> str:
    out = []
    for ch in text:
        roll = rnd.random()
        if ch in _LOOKALIKES and roll < 0.3:
            out.append(rnd.choice(_LOOKALIKES[ch]))
        elif roll < 0.5:
            out.append(ch.upper())
        else:
            out.append(ch)
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPARATORS)), max_size=12),
       st.randoms(use_true_random=False))
def test_a_folded_pattern_matches_where_ignorecase_does(words: list[tuple[str, str]], rnd: random.Random) -> None:
    text = _disguise("".join(w + sep for w, sep in words), rnd)
    low = folded(text)
    assert len(low) == len(text)
    for pattern in PATTERNS:
        assert pattern.flags & re.IGNORECASE == 0
        expected = re.compile(pattern.pattern, re.IGNORECASE).search(text)
        found = pattern.search(low)
        assert (found and found.span()) == (expected and expected.span()), (pattern.pattern, text)
