"""Folded text (`text.folded`): a rule's lower-case pattern matches it exactly where the same pattern with
IGNORECASE matches the text as written, at the same offsets, whatever the case and the look-alike letters
(dotted and dotless i, long s, the Kelvin sign) that re's IGNORECASE takes for ASCII ones."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.lint._rules import _descriptions as descriptions
from toolproof.lint._rules import _effects as effects
from toolproof.lint._rules import _overlap as overlap
from toolproof.lint._rules import _params as params
from toolproof.lint._text import folded

PATTERNS = [
    descriptions.WHEN, descriptions.WHEN_NOT, descriptions._RETURNS,
    params._UNITLESS, params._GEOMETRY, params._PHYSICAL, params._COUNTED, params._SAMPLING, params._PROSE_SET,
    params._EXAMPLES, params._PROSE_FORMAT, params._DATE_DESC, params._SAYS_DEFAULT, params._SAYS_OPTIONAL,
    params._SAYS_ANY, params._EXAMPLE_WORDS, effects._FRESH_KEY,
]
_WORDS = ["use", "this", "when", "you", "if", "returns", "return", "e.g.", "eg.", "default", "optional", "any",
          "unique", "new", "for", "each", "every", "request", "time", "one of", "the", "such as", "example",
          "date", "yyyy", "iso 8601", "rfc3339", "format", "number of", "how many", "factor", "sphere", "price",
          "sampling", "model", "generate", "a", "fresh", "key", "instead", "do not", "lists", "list of", "with",
          "its", "looks up", "identifies", "options:", "either '", "is", "fixed", "id", "random", "different",
          "mint", "per", "call", "for instance", "examples", "such"]
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


#: Patterns searched only when the text holds one of their words (every match holds one), each with texts that
#: take every branch of it.
NEEDLES = [
    (effects._FRESH_KEY, effects._FRESH_WORDS, ["a unique id for each request", "a new key on every new call",
                                                "a fresh token per any attempt", "a random nonce in every retry",
                                                "a different value with each operation", "generate a new key each time",
                                                "mint a fresh id every time", "use a random token each time",
                                                "create a different one every time"]),
    (params._EXAMPLE_WORDS, params._EXAMPLE_NEEDLES, ["for example", "examples:", "e.g. 12", "for instance 3",
                                                      "such as paris"]),
]


@pytest.mark.parametrize(("pattern", "needles", "texts"), NEEDLES)
def test_every_branch_of_a_prefiltered_pattern_holds_one_of_its_words(pattern: re.Pattern[str],
                                                                      needles: tuple[str, ...],
                                                                      texts: list[str]) -> None:
    for text in texts:
        assert pattern.search(text), text
        assert any(n in text for n in needles), text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPARATORS)), max_size=12),
       st.randoms(use_true_random=False))
def test_every_match_of_a_prefiltered_pattern_holds_one_of_its_words(words: list[tuple[str, str]],
                                                                     rnd: random.Random) -> None:
    low = folded(_disguise("".join(w + sep for w, sep in words), rnd))
    for pattern, needles, _ in NEEDLES:
        if pattern.search(low):
            assert any(n in low for n in needles), (pattern.pattern, low)


_NAME_PARTS = ["get", "order", "_", "-", ".", "v", "V", "2", "1.0", "new", "NEW", "latest", "lateſt", "next", "old",
               "\n", "²", "x", "s", "İ"]


@pytest.mark.parametrize("name", ["order_v2", "order-V1.2", "lookup2", "search_new", "search_LATEST", "rates_lateſt",
                                  "get2\n", "order_v2\n", "x_new\n", "x_new\n\n", "v2", "²", "get_x", ""])
def test_a_version_tail_comes_off_as_the_pattern_takes_it(name: str) -> None:
    assert overlap.base_name(name) == (overlap._VERSION_TAIL.sub("", name) or name)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_NAME_PARTS), max_size=6))
def test_any_version_tail_comes_off_as_the_pattern_takes_it(parts: list[str]) -> None:
    name = "".join(parts)
    assert overlap.base_name(name) == (overlap._VERSION_TAIL.sub("", name) or name)
