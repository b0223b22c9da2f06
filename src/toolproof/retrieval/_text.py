"""Tokenisation for tool search: identifiers split into words, English stemmed, CJK as character n-grams.

Tool names are identifiers (`get_current_stock_price`, `listIssues`, `AddAgenda`) while messages are prose,
so names are split at `_`, `-`, `.`, `/` and case changes before matching. Stemming lets "captchas" meet
"captcha". Chinese and Japanese have no spaces: each run of CJK characters becomes its characters and their
bigrams, which is how BM25 over CJK is usually made to work without a dictionary.
"""

from __future__ import annotations

import re
from typing import Final

_CAMEL_1: Final = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2: Final = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD: Final = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+|[^\W_]+",
    re.UNICODE,
)
_CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")

#: Words too common in tool definitions and requests to tell tools apart.
STOPWORDS: Final = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own please same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves also e g eg ie
    etc may might must shall use used using want need like help let lets me i'd i'm can't""".split()  # noqa: SIM905
)


class Stemmer:
    """Snowball English stemming (PyStemmer) when installed, else a small suffix stripper that is close enough."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}
        try:
            import Stemmer as _pystemmer  # type: ignore[import-not-found,unused-ignore]

            self._impl: object | None = _pystemmer.Stemmer("english")
        except ImportError:  # pragma: no cover - PyStemmer is in the retrieval extra
            self._impl = None

    def stem(self, word: str) -> str:
        cached = self._cache.get(word)
        if cached is None:
            cached = str(self._impl.stemWord(word)) if self._impl is not None else _fallback_stem(word)  # type: ignore[attr-defined]
            if len(self._cache) < 500_000:
                self._cache[word] = cached
        return cached


def _fallback_stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            return word[: -len(suffix)] + keep
    return word


def split_identifier(text: str) -> str:
    """`getUserToken` -> `get User Token`, `HTTPServer` -> `HTTP Server`; separators become spaces."""
    text = _CAMEL_2.sub(r"\1 \2", text)
    return _CAMEL_1.sub(r"\1 \2", text)


class Tokenizer:
    """Text to index terms: identifier splitting, lower case, stop words out, stemmed, CJK n-grams."""

    def __init__(self, *, stem: bool = True, stopwords: frozenset[str] = STOPWORDS) -> None:
        self._stemmer = Stemmer() if stem else None
        self._stopwords = stopwords

    def __call__(self, text: str) -> list[str]:
        out: list[str] = []
        for match in _WORD.finditer(split_identifier(text)):
            word = match.group(0)
            if _CJK.match(word):
                out.extend(word)
                out.extend(word[i : i + 2] for i in range(len(word) - 1))
                continue
            word = word.lower()
            if word in self._stopwords or (len(word) == 1 and not word.isdigit()):
                continue
            out.append(self._stemmer.stem(word) if self._stemmer is not None else word)
        return out
