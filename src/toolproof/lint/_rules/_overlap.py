"""Look-alikes by what tools do, not what they are called: descriptions compared for every pair of a toolset
(whatever the names), catch-all tools, and clusters of three or more tools doing one job.

The name pass in `toolset.py` finds `rates` beside `price_lookup`; this one finds `list_invoices` beside
`get_invoices` (other action words, descriptions one word apart) and `search`/`get_data` joining the price
tools. Lexical and deterministic; candidate pairs come from hashing each description's word set, so 10,000
tools never cost 50 million comparisons.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Final

from .._model import ToolDef
from .._text import GENERIC_NAMES, STOPWORDS, canonical, folded, name_words, stem, verb_position
from ._effects import is_write

#: Read actions (after `canonical`): two of them on one object do one job (`list_invoices`, `get_invoices`).
#: Any other pair of different actions is a CRUD sibling (`create_x`, `delete_x`) and never a look-alike.
READ_ACTIONS: Final = frozenset({"get", "list", "search", "show", "view", "describe", "browse", "inspect",
                                 "display", "check", "load"})
_TAIL_WORDS: Final = ("new", "old", "legacy", "deprecated", "latest", "next")
_VERSION_TAIL: Final = re.compile(rf"(?:[_\-.]?v\d+(?:[._]\d+)*|[_\-](?:{'|'.join(_TAIL_WORDS)})|[_\-]?\d+)$",
                                  re.IGNORECASE)
_MIN_TOKENS: Final = 3  # content words a description needs to be compared by its words
_NUMBER: Final = re.compile(r"\d+(?:[.,]\d+)*")
_LETTERS: Final = re.compile(r"[a-z]+")
#: Words that say how many, by what they mean: "all the teams" against "a team", "a specific category"
#: against "categories". "a list of" (a set, a batch...) says many.
_COUNT_WORDS: Final = {"a": "one", "an": "one", "one": "one", "single": "one", "all": "all", "every": "all",
                       "each": "all", "some": "many", "multiple": "many", "many": "many", "several": "many",
                       "specific": "specific", "particular": "specific"}
#: Words that name no job: generic reads and generic objects (canonical forms).
_NOTHING_WORDS: Final = frozenset({"search", "get", "list", "data", "info", "information", "result", "detail",
                                   "thing", "stuff", "anything", "everything", "general", "lookup", "item"})


@dataclass(frozen=True, slots=True)
class Pair:
    """Two tools (positions in the toolset) that look alike, and what the finding should say about them."""

    i: int
    j: int
    shared: tuple[str, ...]  # description words both use (the heaviest first)
    apart: tuple[str, ...]  # what tells them apart today (only their names), for the fix
    similarity: float


_COLLECTIONS: Final = frozenset({"list", "collection", "series", "array", "bunch", "few"})
#: ...and words that say many only before "of": "a page of results", but "a page element", "a number to add".
_COLLECTIONS_OF: Final = frozenset({"set", "number", "range", "batch", "page", "group"})


def actions_compatible(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b or (a in READ_ACTIONS and b in READ_ACTIONS)


@lru_cache(maxsize=1 << 14)
def how_many(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The numbers a description gives and what it says about how many (one, all, many, a specific one)."""
    low = text.lower()
    words = _LETTERS.findall(low)
    said = {("many" if w in ("a", "an") and _collection(words[i + 1:i + 3]) else _COUNT_WORDS[w])
            for i, w in enumerate(words) if w in _COUNT_WORDS}
    return frozenset(_NUMBER.findall(low)), frozenset(said)


def _collection(after: list[str]) -> bool:
    """The words after "a" name many: "a list", "a few", "a page of"."""
    return bool(after) and (after[0] in _COLLECTIONS or (after[0] in _COLLECTIONS_OF and after[1:] == ["of"]))


def said_apart(a: ToolDef, b: ToolDef) -> bool:
    """Two descriptions that give other numbers ("over 1.5 goals", "over 2.5 goals") or say another how-many
    ("all items", "items") tell their tools apart even when every content word is shared."""
    return how_many(a.description_text) != how_many(b.description_text)


def one_vs_many(a_raw: Sequence[str], b_raw: Sequence[str]) -> bool:
    """`get_advisory` beside `list_advisories`: the names already say one against many."""
    (a_obj, a_stems), (b_obj, b_stems) = _object_words(tuple(a_raw)), _object_words(tuple(b_raw))
    return len(a_obj) == len(b_obj) and a_obj != b_obj and a_stems == b_stems


@lru_cache(maxsize=1 << 14)
def _object_words(raw: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A name's words other than read actions, as written and stemmed (one name meets many others)."""
    obj = tuple(w for w in raw if canonical(w) not in READ_ACTIONS)
    return obj, tuple(map(stem, obj))


def base_name(name: str) -> str:
    """The name without a version tail (`order_v2`, `search_new`, `lookup2` -> `order`, `search`, `lookup`)."""
    end = name.rstrip("\n")  # `$` also matches before a final newline
    if not (end[-1:].isdigit() or folded(end).endswith(_TAIL_WORDS)):
        return name  # every tail ends in a digit or a tail word: most names skip a search from every position
    return _VERSION_TAIL.sub("", name) or name


NameProfile = tuple[str | None, frozenset[str], tuple[str, ...]]


def name_profile(name: str) -> NameProfile:
    """(canonical action word or None, the other canonical name words, the raw words)."""
    words = name_words(base_name(name))
    at = verb_position(words)
    verb = canonical(words[at]) if at is not None else None
    return verb, frozenset(canonical(w) for i, w in enumerate(words) if i != at), words


@lru_cache(maxsize=1 << 16)
def _word(w: str) -> str:
    """A description word as compared: every read action one word ("List"/"Get"/"Fetch" the same), any other
    word only without its plural (synonyms such as add/create stay apart: "Add URLs to" is not "Create")."""
    c = canonical(w)
    return "get" if c in READ_ACTIONS or c == "return" else stem(w)


class TfIdf:
    """TF-IDF unit vectors of a toolset's documents (their words), each built the first time a pair needs it:
    10,000 tools compare in a few thousand pairs, not all."""

    def __init__(self, docs: Sequence[Sequence[str]], sets: Sequence[frozenset[str]] | None = None) -> None:
        """`sets`: each document's set of words, when the caller has them."""
        df = Counter(chain.from_iterable(sets if sets is not None else map(set, docs)))  # one count, in C
        n = len(docs)
        self._docs = docs
        self._idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self._vectors: dict[int, dict[str, float]] = {}

    def vector(self, i: int) -> dict[str, float]:
        vec = self._vectors.get(i)
        if vec is None:
            weights = {w: c * self._idf[w] for w, c in Counter(self._docs[i]).items()}
            norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
            vec = self._vectors[i] = {w: v / norm for w, v in weights.items()}
        return vec

    def cosine(self, i: int, j: int) -> float:
        a, b = self.vector(i), self.vector(j)
        small, big = (a, b) if len(a) <= len(b) else (b, a)
        return sum([v * big.get(w, 0.0) for w, v in small.items()])


class Descriptions:
    """The toolset's descriptions as compared: canonical content words, their set, and TF-IDF vectors."""

    def __init__(self, tools: Sequence[ToolDef]) -> None:
        self.tokens = [tuple(map(_word, t.description_content)) for t in tools]
        self.sets = [frozenset(d) for d in self.tokens]
        self.tfidf = TfIdf(self.tokens, self.sets)
        self._orders: dict[int, tuple[str, ...]] = {}

    def first_order(self, i: int) -> tuple[str, ...]:
        """The description's distinct words in the order they first come."""
        order = self._orders.get(i)
        if order is None:
            order = self._orders[i] = tuple(dict.fromkeys(self.tokens[i]))
        return order

    def shared(self, i: int, j: int, n: int = 5) -> tuple[str, ...]:
        """The words both descriptions use, heaviest first (the generic read action left out)."""
        a, b = self.tfidf.vector(i), self.tfidf.vector(j)
        return tuple(w for _, w in sorted([(-a[w] * b[w], w) for w in a.keys() & b.keys() if w != "get"])[:n])

    def cosine(self, i: int, j: int) -> float:
        return self.tfidf.cosine(i, j)


def candidate_pairs(desc: Descriptions) -> Iterator[tuple[int, int]]:
    """Every pair whose descriptions use the same set of words (the only pairs the description pass can
    report), found by hashing each set once: linear in the tools plus the pairs themselves."""
    buckets: dict[frozenset[str], list[int]] = defaultdict(list)
    for i, words in enumerate(desc.sets):
        if len(words) >= _MIN_TOKENS:
            buckets[words].append(i)
    for members in buckets.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                yield i, j


def description_pairs(tools: Sequence[ToolDef], desc: Descriptions,
                      names: Sequence[NameProfile] | None = None) -> Iterator[Pair]:
    """Pairs whose descriptions use the same words, so only the names say what is different.

    Left out: CRUD siblings (different actions, not both reads), one-vs-many names, converse names (same
    words, other order), descriptions mostly in CJK or too short to compare, pairs whose descriptions
    carry the word their names differ by (`download_from_youtube`: "...a given youtube URL"), and pairs whose
    descriptions still say which is which: other numbers, another how-many, or the same words in another
    order (hex to RGB against RGB to hex, drug names by X against X by drug name). `names`: each tool's
    `name_profile`, when the caller has them.
    """
    names = names if names is not None else [name_profile(t.label) for t in tools]
    for i, j in candidate_pairs(desc):
        a, b = tools[i], tools[j]
        if a.label == b.label or not _comparable(desc, a, i) or not _comparable(desc, b, j):
            continue
        (va, sa, ra), (vb, sb, rb) = names[i], names[j]
        if not actions_compatible(va, vb) or one_vs_many(ra, rb):
            continue
        if ra != rb and sorted(map(stem, ra)) == sorted(map(stem, rb)):
            continue  # converse: fahrenheit_to_celsius beside celsius_to_fahrenheit
        if _same_words(desc, i, j) and not _mentions(a, b) and not said_apart(a, b):
            yield Pair(i, j, desc.shared(i, j), tuple(sorted(sa ^ sb)), desc.cosine(i, j))


def _comparable(desc: Descriptions, tool: ToolDef, i: int) -> bool:
    return len(desc.sets[i]) >= _MIN_TOKENS and tool.description_cjk < len(desc.tokens[i])


def _mentions(a: ToolDef, b: ToolDef) -> bool:
    return (len(b.label) > 2 and b.label in a.description_text) or (len(a.label) > 2 and a.label in b.description_text)


def _same_words(desc: Descriptions, i: int, j: int) -> bool:
    """False when the descriptions say which is which: any content word in one and not the other does
    (measured on the corpora: "a list of" against "the details of", "as HTML" against "as plain text"), and so
    does their order. Only stop words, repeats and the form of a read action may differ."""
    return desc.sets[i] == desc.sets[j] and desc.first_order(i) == desc.first_order(j)


def is_catch_all(tool: ToolDef, min_words: int) -> bool:
    """A tool whose name and description say nothing about its job (`search`: "Search for information.",
    `get_data`: "Gets data."): every word is a generic read or a generic object, so it reads like every
    other read tool of the toolset. `status` ("Get status.") names a thing and is not one."""
    words = name_words(tool.label.rsplit(".", 1)[-1])
    content = [canonical(w) for w in tool.description_words if w not in STOPWORDS]
    if "_".join(words) not in GENERIC_NAMES or len(content) >= min_words:
        return False
    return all(canonical(w) in _NOTHING_WORDS for w in [*words, *content])


def clusters(tools: Sequence[ToolDef], pairs: Sequence[tuple[int, int]], min_words: int) -> list[list[int]]:
    """Groups of three or more tools doing one job: the look-alike pairs joined transitively, plus each
    catch-all read tool added to the read group it shares most parameter names with."""
    parent = list(range(len(tools)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in pairs:
        parent[find(i)] = find(j)
    paired = sorted({x for p in pairs for x in p})
    groups: dict[int, list[int]] = defaultdict(list)
    for i in paired:
        groups[find(i)].append(i)
    reads = [g for g in groups.values() if not any(is_write(tools[m]) for m in g)]
    for c in sorted(set(range(len(tools))) - set(paired)) if reads else ():
        if not is_write(tools[c]) and is_catch_all(tools[c], min_words):
            best = max(reads, key=lambda g: _affinity(tools, c, g))
            best.append(c)
    return [sorted(g) for g in groups.values() if len(g) >= 3]


def _affinity(tools: Sequence[ToolDef], c: int, group: list[int]) -> tuple[int, int, list[str]]:
    """Shared parameter names, then group size, then (for a stable choice whatever the order) the names."""
    shared = _params(tools[c]) & set().union(*(_params(tools[m]) for m in group))
    return len(shared), len(group), sorted((tools[m].label for m in group), reverse=True)


def _params(tool: ToolDef) -> set[str]:
    return {canonical(str(k).lower()) for k in tool.properties}
