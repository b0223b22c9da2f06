"""Toolset rules (TP4xx): how tools read side by side. Too many at once, look-alikes (the nine spice jars),
one name from two sources, and versioned twins (`order` beside `order_v2`)."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from ..config import LintConfig
from ..model import ToolDef
from ..text import STOPWORDS, VERBS, canonical, name_words, text_words
from .base import Hit, Rule

_VERSION_TAIL: Final = re.compile(r"(?:[_\-.]?v\d+(?:[._]\d+)*|[_\-](?:new|old|legacy|deprecated|latest|next)|"
                                  r"[_\-]?\d+)$", re.IGNORECASE)
ALL_PAIRS_BELOW: Final = 400  # smaller toolsets compare every pair; larger ones block on shared rare words


def base_name(name: str) -> str:
    return _VERSION_TAIL.sub("", name) or name


@dataclass(frozen=True, slots=True)
class _Profile:
    name: str
    order: tuple[str, ...]  # the canonical name words in order (celsius_to_fahrenheit is not the reverse)
    verb: str | None  # the canonical action word of the name, if it has one
    name_set: frozenset[str]  # the other canonical name words (the object, any namespace)
    desc: dict[str, float]  # L2-normalised TF-IDF weights
    text: str


def _profiles(tools: Sequence[ToolDef]) -> list[_Profile]:
    docs = [[canonical(w) for w in text_words(t.description_text) if w not in STOPWORDS and len(w) > 1]
            for t in tools]
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    n = len(docs)
    out = []
    for tool, doc in zip(tools, docs, strict=True):
        tf = Counter(doc)
        weights = {w: c * (math.log((1 + n) / (1 + df[w])) + 1.0) for w, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
        name = tool.label
        words = name_words(base_name(name))
        verb_at = next((i for i, w in enumerate(words[:2]) if w in VERBS), None)
        out.append(_Profile(
            name=name,
            order=tuple(canonical(w) for w in words),
            verb=canonical(words[verb_at]) if verb_at is not None else None,
            name_set=frozenset(canonical(w) for i, w in enumerate(words) if i != verb_at),
            desc={w: v / norm for w, v in weights.items()},
            text=tool.description_text,
        ))
    return out


def similarity(a: _Profile, b: _Profile) -> tuple[float, float]:
    """(name similarity, description cosine). Names with different actions (get vs delete) score 0: CRUD
    siblings are not look-alikes; a name without an action matches one with an action only on the same object
    words. Otherwise the Jaccard of the remaining canonical words."""
    if a.verb != b.verb and ((a.verb and b.verb) or a.name_set != b.name_set or not a.name_set):
        return 0.0, 0.0
    union = len(a.name_set | b.name_set)
    name_sim = len(a.name_set & b.name_set) / union if union else 1.0
    if name_sim == 1.0 and len(a.order) == len(b.order) and a.order != b.order and set(a.order) == set(b.order):
        name_sim = 0.5  # same words, other order: a converse (fahrenheit_to_celsius), not a twin
    small, big = (a.desc, b.desc) if len(a.desc) <= len(b.desc) else (b.desc, a.desc)
    desc_sim = sum(v * big.get(w, 0.0) for w, v in small.items())
    return name_sim, desc_sim


def _candidates(profiles: list[_Profile]) -> Iterator[tuple[int, int]]:
    n = len(profiles)
    if n < ALL_PAIRS_BELOW:
        for i in range(n):
            for j in range(i + 1, n):
                yield i, j
        return
    # Blocking: pairs that share a name word or one of a tool's rarer description words (document frequency
    # at most `cap`). Pairs sharing only very common words cannot reach the thresholds in practice.
    cap = max(20, int(math.sqrt(n)))
    index: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(profiles):
        index["v:" + (p.verb or "") + ":" + "_".join(sorted(p.name_set))].append(i)
        for w in p.name_set:
            index["n:" + w].append(i)
        for w in sorted(p.desc, key=p.desc.__getitem__, reverse=True)[:8]:
            index["d:" + w].append(i)
    seen: set[tuple[int, int]] = set()
    for postings in index.values():
        if len(postings) < 2 or len(postings) > cap:
            continue
        for x in range(len(postings)):
            for y in range(x + 1, len(postings)):
                pair = (postings[x], postings[y])
                if pair not in seen:
                    seen.add(pair)
                    yield pair


def _mentions(text: str, name: str) -> bool:
    return len(name) > 2 and name in text


def check_lookalike(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    """Same action (or none) on the same object words, and descriptions that do not tell them apart: they
    overlap (cosine at or above the threshold) or one is too short to say anything."""
    if len(tools) < 2:
        return
    t_name, t_desc = config.threshold("lookalike-name"), config.threshold("lookalike-description")
    min_words = int(config.threshold("min-description-words"))
    profiles = _profiles(tools)
    for i, j in _candidates(profiles):
        a, b = profiles[i], profiles[j]
        if a.name == b.name:
            continue  # same name: the duplicate rule says it
        name_sim, desc_sim = similarity(a, b)
        if name_sim < t_name:
            continue
        vague = a.verb == b.verb and min(len(text_words(a.text)), len(text_words(b.text))) < min_words
        if desc_sim < t_desc and not vague:
            continue  # the descriptions tell them apart (getStory: one by id; getStories: many by type)
        if _mentions(a.text, b.name) or _mentions(b.text, a.name):
            continue  # the descriptions already point at each other
        for me, other in ((i, b), (j, a)):
            yield Hit(tools[me], tools[me].name_pointer, f"looks like {other.name!r} (name similarity "
                      f"{name_sim:.2f}, description similarity {desc_sim:.2f}); the model cannot tell which to "
                      "pick", f"Merge the two, or say in each description when to use it and when to call "
                      f"{other.name!r} instead.")


def check_too_many(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    limit = int(config.threshold("max-tools"))
    if len(tools) > limit:
        yield Hit(None, "", f"{len(tools)} tools in one toolset (more than {limit}); picking accuracy falls as "
                  "the list grows", "Show fewer tools per request: route first (by topic) or search first "
                  "(retrieve the few that match the message).")


def check_duplicate(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    """Across the whole run: one name twice in a toolset, or from two sources."""
    by_name: dict[str, list[ToolDef]] = defaultdict(list)
    for t in tools:
        if isinstance(t.name, str):
            by_name[t.name].append(t)
    for name, same in by_name.items():
        if len(same) < 2:
            continue
        groups = Counter((t.source, t.toolset) for t in same)
        sources = sorted({t.source for t in same})
        if len(sources) < 2 and max(groups.values()) < 2:
            continue  # one name in several toolsets of one source (e.g. a corpus of servers): never combined
        where = ", ".join(repr(s) for s in sources) if len(sources) > 1 else f"toolset {same[0].toolset!r}"
        for t in same:
            yield Hit(t, t.name_pointer, f"name {name!r} is defined {len(same)} times ({where}); a client keeps "
                      "one or renames them", "Prefix names with the server or domain (e.g. 'shop_search'), or "
                      "drop one.")


def check_versioned_twin(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    names = {t.name for t in tools if isinstance(t.name, str)}
    for t in tools:
        if not isinstance(t.name, str):
            continue
        base = base_name(t.name)
        if base != t.name and base in names:
            twin = next(x for x in tools if x.name == base)
            yield Hit(t, t.name_pointer, f"{t.name!r} is a versioned twin of {base!r}; the model sees two tools "
                      "for one job and may call both (two orders, two bills)",
                      f"Keep one tool named {base!r}; retire the other.")
            yield Hit(twin, twin.name_pointer, f"{base!r} has a versioned twin {t.name!r}; the model sees two "
                      "tools for one job and may call both", f"Keep one tool named {base!r}; retire the other.")


RULES: Final = (
    Rule("TP401", "toolset-too-many", "warning", "More tools in one toolset than the threshold.",
         "Picking accuracy falls and prompt cost grows with the number of tools shown.",
         "Route first or search first.", toolset_check=check_too_many, family="toolset"),
    Rule("TP402", "toolset-look-alike", "warning", "Two tools look alike by name or description and neither "
         "description names the other.", "The nine spice jars: the model picks one at random.",
         "Merge them, or make each description point at the other.", toolset_check=check_lookalike,
         family="toolset"),
    Rule("TP403", "toolset-duplicate-name", "error", "The same name comes from two sources (or twice in one).",
         "Clients keep one, rename both, or fail.", "Prefix by server or domain.", toolset_check=check_duplicate,
         family="toolset"),
    Rule("TP404", "toolset-versioned-twin", "error", "A tool and its versioned twin (order, order_v2) are both "
         "visible.", "The model cannot tell the old one is old; a retry through the twin repeats the write.",
         "Keep one.", toolset_check=check_versioned_twin, family="toolset"),
)
RUN_WIDE: Final = frozenset({"TP403"})
