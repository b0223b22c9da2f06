"""Toolset rules (TP4xx): how tools read side by side. Too many at once, look-alikes (the nine spice jars),
one name from two sources, and versioned twins (`order` beside `order_v2`)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Final

from .._config import LintConfig
from .._model import ToolDef, ToolGroup
from .._text import canonical, name_words, stem, verb_position
from ._base import Hit, Rule
from ._overlap import (
    Descriptions,
    TfIdf,
    actions_compatible,
    base_name,
    clusters,
    description_pairs,
    how_many,
    one_vs_many,
    said_apart,
)

_DIRECTION: Final = frozenset({"by", "to", "from", "into", "for", "per", "via"})
_PREFIX_TOOLS: Final = 3  # tools of one listing sharing a first word before their verb make it a prefix
_PLURAL_DESC: Final = 0.9  # singular/plural twins must read nearly alike to be look-alikes (else one vs many)


@dataclass(slots=True)  # not frozen: built once per tool and run, and a frozen init costs four times as much
class _Profile:
    index: int  # the tool's position in its toolset
    name: str
    order: tuple[str, ...]  # the canonical name words in order (celsius_to_fahrenheit is not the reverse)
    raw: tuple[str, ...]  # the name words as written (getComment vs getComments differ here only)
    obj_raw: tuple[str, ...]  # ...without the action word
    verb: str | None  # the canonical action word of the name, if it has one
    name_set: frozenset[str]  # the other canonical name words (the object, any namespace)
    prefix: frozenset[str]  # the server's prefix among them, if any (see `_prefix`)
    text: str


def _profiles(tools: Sequence[ToolDef]) -> tuple[list[_Profile], TfIdf]:
    """Each tool's name taken apart, and the TF-IDF vectors of the canonical words of the descriptions."""
    out = []
    split = [name_words(base_name(tool.label)) for tool in tools]
    leads = Counter(words[0] for words in split if len(words) > 1 and verb_position(words) == 1)
    for index, (tool, words) in enumerate(zip(tools, split, strict=True)):
        name = tool.label
        verb_at = verb_position(words)
        obj_raw = words if verb_at is None else words[:verb_at] + words[verb_at + 1:]
        out.append(_Profile(
            index=index,
            name=name,
            order=tuple(map(canonical, words)),
            raw=words,
            obj_raw=obj_raw,
            verb=canonical(words[verb_at]) if verb_at is not None else None,
            name_set=frozenset(map(canonical, obj_raw)),
            prefix=_prefix(tool, words, leads),
            text=tool.description_text,
        ))
    return out, TfIdf([tuple(map(canonical, t.description_content)) for t in tools])


def _prefix(tool: ToolDef, words: tuple[str, ...], leads: Counter[str]) -> frozenset[str]:
    """The one word before the verb (as TP102 reads it) when it is a server's prefix: it names the tool's own
    server, or `_PREFIX_TOOLS` tools of the listing start with it before their verb (`playwright_click`,
    `playwright_fill`, ... beside `puppeteer_click`). Another word before the verb is the object
    (`component_search`); words before a `.` are no prefix (BFCL's `basketball_scores.get_scores` beside
    `soccer_scores.get_scores` differ there)."""
    if "." in tool.label or len(words) < 2 or verb_position(words) != 1:
        return frozenset()
    lead = words[0]
    if lead in name_words(tool.toolset) or leads[lead] >= _PREFIX_TOOLS:
        return frozenset((canonical(lead),))
    return frozenset()


def similarity(a: _Profile, b: _Profile, corpus: TfIdf) -> tuple[float, float]:
    """(name similarity, description cosine); (0, 0) for names that share nothing."""
    name_sim = name_similarity(a, b)
    return (name_sim, corpus.cosine(a.index, b.index)) if name_sim else (0.0, 0.0)


def name_similarity(a: _Profile, b: _Profile) -> float:
    """Names with different actions (get vs delete) score 0: CRUD siblings are not look-alikes; a name without
    an action matches one with an action only on the same object words. Otherwise the Jaccard of the remaining
    canonical words; a name with a direction word (by, to, from) whose shared words come in another order is a
    converse (fahrenheit_to_celsius, drug_names_by_risk beside risk_info_by_drug_name), not a twin."""
    if a.verb != b.verb and ((a.verb and b.verb) or a.name_set != b.name_set or not a.name_set):
        return 0.0
    union = len(a.name_set | b.name_set)
    name_sim = len(a.name_set & b.name_set) / union if union else 1.0
    if _converse(a.order, b.order):
        name_sim = min(name_sim, 0.5)
    return name_sim


def _converse(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The same words in another order (user_groups, group_users), or a direction word (by, to) with the shared
    words in another order (drug_names_by_risk, risk_info_by_drug_name)."""
    if len(a) == len(b) and a != b and set(a) == set(b):
        return True
    common = set(a) & set(b)
    return bool(common & _DIRECTION) and [w for w in dict.fromkeys(a) if w in common] != [
        w for w in dict.fromkeys(b) if w in common]


def _candidates(profiles: list[_Profile], threshold: float) -> Iterator[tuple[int, int]]:
    """Every pair whose name-word Jaccard can reach `threshold`, without comparing all pairs.

    Prefix filtering (as in set-similarity joins): order words rarest first; a set of size s only needs its
    first s - ceil(t*s) + 1 words indexed, and two sets with Jaccard >= t always share one of those. Exact:
    no pair above the threshold is missed (the benchmark checks this against the all-pairs pass).
    """
    t = max(threshold, 1e-9)
    df = Counter(chain.from_iterable(p.name_set for p in profiles))
    index: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(profiles):
        words = sorted(p.name_set, key=lambda w: (df[w], w)) or ["\0"]
        keep = len(words) - math.ceil(t * len(words)) + 1
        for w in words[:max(keep, 1)]:
            index[w].append(i)
    seen: set[tuple[int, int]] = set()
    for postings in index.values():
        for x in range(len(postings)):
            a = profiles[postings[x]]
            for y in range(x + 1, len(postings)):
                b = profiles[postings[y]]
                la, lb = len(a.name_set), len(b.name_set)
                if min(la, lb) < t * max(la, lb):
                    continue  # sizes too different for the threshold
                if a.verb and b.verb and a.verb != b.verb:
                    continue
                pair = (postings[x], postings[y])
                if pair not in seen:
                    seen.add(pair)
                    yield pair


def _forms(p: _Profile, words: tuple[str, ...], other: tuple[str, ...]) -> frozenset[str]:
    """How a description (its `words`) writes the words its name and the other differ by: "a random word" or
    "random words"."""
    stems = {stem(w) for w in set(p.obj_raw) ^ set(other)}
    return frozenset(w for w in words if stem(w) in stems)


def _mentions(text: str, name: str) -> bool:
    return len(name) > 2 and name in text


def _name_pairs(tools: Sequence[ToolDef], profiles: list[_Profile], corpus: TfIdf,
                config: LintConfig) -> Iterator[tuple[int, int, float, float]]:
    """Same action (or none) on the same object words, and descriptions that do not tell them apart: they
    overlap (cosine at or above the threshold) or one is too short to say anything."""
    t_name, t_desc = config.threshold("lookalike-name"), config.threshold("lookalike-description")
    min_words = int(config.threshold("min-description-words"))
    for i, j in _candidates(profiles, t_name):
        a, b = profiles[i], profiles[j]
        if a.name == b.name:
            continue  # same name: the duplicate rule says it
        name_sim = name_similarity(a, b)
        if name_sim < t_name:
            continue  # most candidates: their descriptions are never vectorised
        desc_sim = corpus.cosine(i, j) if name_sim else 0.0
        if one_vs_many(a.obj_raw, b.obj_raw) and (desc_sim < _PLURAL_DESC or said_apart(tools[i], tools[j])
                                                  or _forms(a, tools[i].description_words, b.obj_raw)
                                                  != _forms(b, tools[j].description_words, a.obj_raw)):
            continue  # one vs many (getComment, getComments; Categories, Get Category) and the descriptions say which
        vague = a.verb == b.verb and min(len(tools[i].description_words), len(tools[j].description_words)) < min_words
        if desc_sim < t_desc and not vague:
            continue  # the descriptions tell them apart (getStory: one by id; getStories: many by type)
        if _mentions(a.text, b.name) or _mentions(b.text, a.name):
            continue  # the descriptions already point at each other
        yield i, j, name_sim, desc_sim


def lookalike_pairs(tools: Sequence[ToolDef], config: LintConfig) -> list[tuple[int, int, str, str]]:
    """Every look-alike pair of one toolset, by name (then description) or by description alone, each with
    the message's reason and what would tell the two apart. A pair found by both is reported once. Found
    once per toolset and run: TP402 reports the pairs, TP405 joins them."""
    return ToolGroup.of(tools).derived("lookalike-pairs", config, lambda: _lookalike_pairs(tools, config))


def _lookalike_pairs(tools: Sequence[ToolDef], config: LintConfig) -> list[tuple[int, int, str, str]]:
    out: dict[tuple[int, int], tuple[int, int, str, str]] = {}
    profiles, corpus = _profiles(tools)
    desc = Descriptions(tools)
    for i, j, name_sim, desc_sim in _name_pairs(tools, profiles, corpus, config):
        words = ", ".join(desc.shared(i, j)) or "no word in common"
        out[(i, j)] = (i, j, f"name similarity {name_sim:.2f}, description similarity {desc_sim:.2f}; both say: "
                       f"{words}", "say in each description when to use it")
    for p in description_pairs(tools, desc, [(pr.verb, pr.name_set, pr.raw) for pr in profiles]):
        key = (min(p.i, p.j), max(p.i, p.j))
        if key not in out:
            apart = (f"only their names differ ({', '.join(p.apart)})" if p.apart else
                     "their names differ only in the action word")
            out[key] = (*key, f"description similarity {p.similarity:.2f}; both say: {', '.join(p.shared)}; "
                        f"{apart}", "say in each description what it does that the other does not")
    for i, j, cosine in embedding_pairs(tools, config, profiles):
        if (i, j) not in out:
            out[(i, j)] = (i, j, f"descriptions alike in meaning (cosine {cosine:.2f}) under other names",
                           "say in each description what it does that the other does not")
    return [out[k] for k in sorted(out)]


def embedding_pairs(tools: Sequence[ToolDef], config: LintConfig,
                    profiles: list[_Profile] | None = None) -> Iterator[tuple[int, int, float]]:
    """Pairs whose descriptions mean the same by the static embedding model, whatever their names (the
    `lookalike-embedding` threshold; off at 0), and whose schemas and names agree (`said_alike`). The
    lexical passes' exclusions hold: CRUD siblings, one vs many, descriptions that name the other tool; and
    one description saying all or many where the other does not (`_says_many`)."""
    threshold = config.threshold("lookalike-embedding")
    if config.encoder is None or threshold <= 0 or len(tools) < 2:
        return
    min_words = int(config.threshold("min-description-words"))
    usable = [i for i, t in enumerate(tools) if len(t.description_words) >= min_words and _param_names(t)]
    if len(usable) < 2:
        return
    vectors = config.encoder.encode([tools[i].description_text for i in usable])
    sims = vectors @ vectors.T
    profiles = profiles if profiles is not None else _profiles(tools)[0]
    for x, i in enumerate(usable):
        for y in range(x + 1, len(usable)):
            j = usable[y]
            cosine = float(sims[x, y])
            a, b = profiles[i], profiles[j]
            if cosine < threshold or a.name == b.name or not actions_compatible(a.verb, b.verb):
                continue
            if one_vs_many(a.obj_raw, b.obj_raw) or _says_many(tools[i]) != _says_many(tools[j]):
                continue
            if _mentions(a.text, b.name) or _mentions(b.text, a.name):
                continue
            if said_alike(tools[i], tools[j], a, b):
                yield i, j, cosine


_PARAMS_SHARED: Final = 0.5  # the Jaccard of two tools' parameter names that counts as one schema
_NAME_STOP: Final = _DIRECTION | {"of", "and", "with", "in", "on", "the", "a", "an", "or", "at"}
#: JSON types as the same call fills them: BFCL writes `integer`, `float` and `dict`, Java `HashMap`.
_TYPES: Final = {"integer": "number", "float": "number", "double": "number", "int": "number", "long": "number",
                 "dict": "object", "hashmap": "object", "map": "object", "list": "array", "tuple": "array",
                 "arraylist": "array", "bool": "boolean"}


def _says_many(tool: ToolDef) -> bool:
    """The description says all or many ("all readings", "a list of projects"). The other how-many words are
    left out here: "a", "the given" and "a specific" are how one job is worded, not another job, and a number
    in a formula (area = 0.5 * base * height) is not an option."""
    return bool(how_many(tool.description_text)[1] & {"all", "many"})


def _param_names(tool: ToolDef) -> frozenset[str]:
    """The top-level parameter names, lower case, letters and digits only, plural stripped (`city_1` and
    `city1` are one, so are `unit` and `units`)."""
    return frozenset(stem("".join(ch for ch in k.lower() if ch.isalnum())) for k in tool.properties)


def _required_types(tool: ToolDef) -> tuple[str, ...]:
    """The JSON types of the required parameters, sorted: what every call must fill, whatever the names
    (`origin`, `destination` or `start_location`, `end_location`: two strings)."""
    required = tool.schema.get("required")
    if not isinstance(required, list):
        return ()
    out = []
    for key in required:
        spec = tool.properties.get(key) if isinstance(key, str) else None
        kind = spec.get("type") if isinstance(spec, dict) else None
        name = str(kind).lower() if isinstance(kind, str) else "any"
        out.append(_TYPES.get(name, name))
    return tuple(sorted(out))


def _local_stems(name: str) -> frozenset[str]:
    """The stems of a name's words after its namespace."""
    return frozenset(stem(w) for w in name_words(base_name(name).rpartition(".")[2]) if w not in _NAME_STOP)


def _namespace(name: str) -> frozenset[str]:
    """The canonical words before the last `.` (`geometry` in `geometry.calculate_area_circle`): where a tool
    lives, not what it does."""
    head, dot, _ = name.rpartition(".")
    return frozenset(map(canonical, name_words(head))) if dot else frozenset()


def said_alike(a: ToolDef, b: ToolDef, pa: _Profile, pb: _Profile) -> bool:
    """The second signal of the pass by meaning: a mean of word vectors cannot weigh the one word that tells
    two jobs apart, so the schemas and names must not tell them apart either.

    * Schemas: at least half the parameter names shared, or the same required parameters by count and JSON
      type whatever their names (a renamed or an added optional parameter is the same call). A tool without
      parameters gives no evidence.
    * Names that share no word after their namespace (the part before the last `.`, where a tool lives) say
      nothing against it (`fetch_quote`, `ticker_lookup`; `weather.forecast`, `weather_forecast.get_prediction`).
      Names that share a word must name the same object (`read_note`, `view_note`): one slot filled two ways is
      a contrast (`go_back`, `go_forward`; `fetch_html`, `fetch_txt`), and so are the same words in another
      order (`celsius_to_fahrenheit`). One name that is the other plus words names a part or an option when it
      takes other parameters (`delete_policy_rule` takes `rule_id`); with the same parameters it is a copy
      (`Video Thumbnail Extractor_copy`), and a namespace added is neither (`circle.area`,
      `geometry.calculate_area_circle`). A server's prefix before the verb names no object
      (`playwright_click`, `puppeteer_click`).
    """
    params_a, params_b = _param_names(a), _param_names(b)
    union = params_a | params_b
    if not union:
        return False
    if len(params_a & params_b) < _PARAMS_SHARED * len(union) and (
            not _required_types(a) or _required_types(a) != _required_types(b)):
        return False
    if not _local_stems(pa.name) & _local_stems(pb.name):
        return True
    if _converse(pa.order, pb.order):
        return False
    obj_a, obj_b = pa.name_set - _NAME_STOP, pb.name_set - _NAME_STOP
    if obj_a == obj_b or obj_a - pa.prefix == obj_b - pb.prefix:
        return True
    if obj_b < obj_a:
        obj_a, obj_b, pb = obj_b, obj_a, pa
    return obj_a < obj_b and (params_a == params_b or obj_b - obj_a <= _namespace(pb.name))


def check_lookalike(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    if len(tools) < 2:
        return
    for i, j, why, how in lookalike_pairs(tools, config):
        for me, other in ((i, tools[j].label), (j, tools[i].label)):
            yield Hit(tools[me], tools[me].name_pointer, f"looks like {other!r} ({why}); the model cannot tell "
                      "which to pick", f"Merge the two, or {how} and when to call {other!r} instead.")


def check_same_job(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    """Three or more tools doing one job (the nine spice jars): one finding per member, naming the others."""
    if len(tools) < 3:
        return
    pairs = [(i, j) for i, j, _, _ in lookalike_pairs(tools, config)]
    for group in clusters(tools, pairs, int(config.threshold("min-description-words"))):
        names = [tools[m].label for m in group]
        for m in group:
            others = ", ".join(repr(n) for n in names if n != tools[m].label)
            yield Hit(tools[m], tools[m].name_pointer, f"one of {len(group)} tools that read as one job: "
                      f"{', '.join(repr(n) for n in names)}", f"Keep one tool for the job, or say in each "
                      f"description what it does that {others} do not.")


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
                      "one or renames them", f"Prefix names with the server or domain ('<server>_{name}'), or "
                      "drop one.")


def check_versioned_twin(tools: Sequence[ToolDef], config: LintConfig) -> Iterator[Hit]:
    by_name = {t.name: t for t in reversed(tools) if isinstance(t.name, str)}
    for t in tools:
        if not isinstance(t.name, str):
            continue
        base = base_name(t.name)
        if base != t.name and base in by_name:
            twin = by_name[base]
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
    Rule("TP405", "toolset-same-job", "warning", "Three or more tools read as one job: look-alike pairs joined, "
         "plus catch-all tools (a generic name and a description that says nothing) beside them.",
         "The model spreads one kind of request over several tools, each with its own quirks.",
         "Keep one tool for the job, or make each description say what it does that the others do not.",
         toolset_check=check_same_job, family="toolset"),
)
RUN_WIDE: Final = frozenset({"TP403"})
