"""Rate limits at the gateway: token buckets per caller, per tool and per upstream, from `[[limits]]` rules.

A rule picks calls by globs on the caller (the authenticated principal; `anonymous` when there is none), the
gateway tool name and the upstream, and gives them `rate` calls per `period_s` with bursts up to `burst`.
`per` says who shares a bucket: `["caller"]` (the default) gives every caller its own; `["caller", "tool"]`
one per caller and tool; `[]` one for every call the rule picks. A call must pass every rule that picks it;
a refused call takes no token from any bucket and is answered `rate_limited` with `retry_after_s`, never
sent. `shared = true` keeps the rule's buckets in the fleet's shared state (`[gateway] shared_state`), so
the limit holds across every gateway process; while that store is away, each process enforces it alone.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final, Protocol

from ..contract._errors import RateLimited

DIMENSIONS: Final = ("caller", "tool", "upstream")
ANONYMOUS: Final = "anonymous"
#: Buckets one gateway keeps in memory at most; the least recently used is forgotten first (it refills anyway).
MAX_BUCKETS: Final = 100_000
_NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
_RULE_KEYS: Final = frozenset({"name", "caller", "tool", "upstream", "per", "rate", "period_s", "burst", "shared"})


class LimitsError(ValueError):
    """A `[[limits]]` rule is wrong (the message names the rule and the key)."""


@dataclass(frozen=True, slots=True)
class LimitRule:
    """`rate` calls per `period_s` (bursts up to `burst`) for the calls its globs pick, bucketed by `per`."""

    name: str
    rate: float
    period_s: float = 1.0
    burst: int | None = None
    caller: str = "*"
    tool: str = "*"
    upstream: str = "*"
    per: tuple[str, ...] = ("caller",)
    shared: bool = False

    def __post_init__(self) -> None:
        where = f"[[limits]] {self.name!r}"
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise LimitsError(f"[[limits]]: name {self.name!r} must match {_NAME_RE.pattern}")
        for key in ("rate", "period_s"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise LimitsError(f"{where}: {key} must be a positive number, got {value!r}")
        if self.burst is None:
            object.__setattr__(self, "burst", max(1, math.ceil(self.rate)))
        elif isinstance(self.burst, bool) or not isinstance(self.burst, int) or self.burst < 1:
            raise LimitsError(f"{where}: burst must be a whole number of calls >= 1, got {self.burst!r}")
        for key in ("caller", "tool", "upstream"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value or len(value) > 200:
                raise LimitsError(f"{where}: {key} must be a glob (1-200 characters, e.g. \"*\" or \"search_*\"), "
                                  f"got {value!r}")
        if isinstance(self.per, str) or not isinstance(self.per, Sequence):
            raise LimitsError(f"{where}: per must be a list of {', '.join(DIMENSIONS)}, got {self.per!r}")
        per = tuple(self.per)
        bad = [p for p in per if p not in DIMENSIONS]
        if bad or len(set(per)) != len(per):
            raise LimitsError(f"{where}: per must be a list of distinct {', '.join(DIMENSIONS)}, got {list(per)!r}")
        object.__setattr__(self, "per", per)
        if not isinstance(self.shared, bool):
            raise LimitsError(f"{where}: shared must be true or false")

    @property
    def tokens_per_s(self) -> float:
        return self.rate / self.period_s

    def picks(self, caller: str, tool: str, upstream: str) -> bool:
        return (fnmatchcase(tool, self.tool) and fnmatchcase(upstream, self.upstream)
                and fnmatchcase(caller, self.caller))

    def bucket_key(self, caller: str, tool: str, upstream: str) -> str:
        if self.per == ("caller",):
            return f"{self.name}\x1f{caller}"
        values = {"caller": caller, "tool": tool, "upstream": upstream}
        return "\x1f".join((self.name, *(values[p] for p in self.per)))

    def describe(self) -> str:
        per = f"per {' and '.join(self.per)}" if self.per else "shared by every caller"
        return f"{self.rate:g} calls per {self.period_s:g} s, burst {self.burst}, {per}"


def rules_from_toml(items: Any, *, upstreams: Sequence[str] = ()) -> tuple[LimitRule, ...]:
    """The `[[limits]]` array of tables as rules: unknown keys, duplicate names and an upstream glob that
    picks no configured upstream are errors (a typo there would silently limit nothing)."""
    if not isinstance(items, list):
        raise LimitsError("limits must be an array of tables: [[limits]]")
    rules: list[LimitRule] = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise LimitsError(f"[[limits]] number {number} must be a table")
        unknown = sorted(set(item) - _RULE_KEYS)
        if unknown:
            raise LimitsError(f"[[limits]] number {number}: unknown key(s) {', '.join(unknown)}; "
                              f"allowed: {', '.join(sorted(_RULE_KEYS))}")
        if "rate" not in item:
            raise LimitsError(f"[[limits]] number {number}: rate is required (calls per period_s)")
        data = dict(item)
        data.setdefault("name", f"limit-{number}")
        if "per" in data and isinstance(data["per"], list):
            data["per"] = tuple(data["per"])
        rules.append(LimitRule(**data))
    check_rules(rules, upstreams)
    return tuple(rules)


def check_rules(rules: Sequence[LimitRule], upstreams: Sequence[str]) -> None:
    names = [r.name for r in rules]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise LimitsError(f"[[limits]]: two rules are both named {twice[0]!r}")
    if upstreams:
        for rule in rules:
            if not any(fnmatchcase(u, rule.upstream) for u in upstreams):
                raise LimitsError(f"[[limits]] {rule.name!r}: upstream {rule.upstream!r} picks none of the "
                                  f"configured upstreams ({', '.join(upstreams)})")


def unmatched_tools(rules: Sequence[LimitRule], tools: Mapping[str, str]) -> list[str]:
    """Rules whose tool and upstream globs pick none of the served tools (`tools`: name -> upstream)."""
    return [r.name for r in rules
            if not any(fnmatchcase(t, r.tool) and fnmatchcase(u, r.upstream) for t, u in tools.items())]


class SharedRate(Protocol):
    """A fleet-wide bucket store (toolproof.fleet): take one token, or say how long until there is one."""

    def rate_take(self, key: str, tokens_per_s: float, burst: int) -> float | None: ...


class _Bucket:
    __slots__ = ("at", "tokens")

    def __init__(self, tokens: float, at: float) -> None:
        self.tokens = tokens
        self.at = at


class Limiter:
    """The buckets of one gateway, for one set of rules (a reload makes a new `Limiter`)."""

    def __init__(self, rules: Sequence[LimitRule] = (), *, shared: SharedRate | None = None,
                 clock: Callable[[], float] = time.monotonic, max_buckets: int = MAX_BUCKETS) -> None:
        self.rules = tuple(rules)
        if any(r.shared for r in self.rules) and shared is None:
            raise LimitsError("a [[limits]] rule says shared = true, but [gateway] shared_state names no "
                              "redis:// or postgresql:// store")
        self._shared = shared
        self._clock = clock
        self._max = max_buckets
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()
        self._picked: dict[tuple[str, str], tuple[LimitRule, ...]] = {}  # (tool, upstream) -> candidate rules
        self._picked_by: dict[tuple[str, str, str], tuple[LimitRule, ...]] = {}  # (caller, tool, upstream) -> rules

    def _candidates(self, tool: str, upstream: str) -> tuple[LimitRule, ...]:
        found = self._picked.get((tool, upstream))
        if found is None:
            if len(self._picked) > 10_000:
                self._picked.clear()
            found = self._picked[(tool, upstream)] = tuple(
                r for r in self.rules if fnmatchcase(tool, r.tool) and fnmatchcase(upstream, r.upstream))
        return found

    def shared_for(self, tool: str, upstream: str) -> bool:
        """Whether a rule that may pick calls of this tool keeps its buckets in the shared state (I/O)."""
        return any(r.shared for r in self._candidates(tool, upstream))

    def check(self, caller: str | None, tool: str, upstream: str) -> RateLimited | None:
        """Take one token from every bucket the call falls in, or none and say why (the refusal to return)."""
        if not self.rules:
            return None
        who = caller or ANONYMOUS
        picked = (who, tool, upstream)
        rules = self._picked_by.get(picked)
        if rules is None:
            if len(self._picked_by) >= self._max:
                self._picked_by.clear()
            rules = self._picked_by[picked] = tuple(r for r in self._candidates(tool, upstream)
                                                    if fnmatchcase(who, r.caller))
        if not rules:
            return None
        local = [r for r in rules if not r.shared]
        refused: list[tuple[float, LimitRule]] = []
        if local:
            now = self._clock()
            with self._lock:
                states = [(r, self._bucket(r, r.bucket_key(who, tool, upstream), now)) for r in local]
                for rule, bucket in states:
                    if bucket.tokens < 1.0:
                        refused.append(((1.0 - bucket.tokens) / rule.tokens_per_s, rule))
                if not refused:
                    for _, bucket in states:
                        bucket.tokens -= 1.0
        if not refused and self._shared is not None:
            for rule in (r for r in rules if r.shared):
                wait = self._shared.rate_take(rule.bucket_key(who, tool, upstream), rule.tokens_per_s,
                                              int(rule.burst or 1))
                if wait is not None:
                    refused.append((wait, rule))
                    break  # the buckets before it keep the token they gave: shared rules are rarely stacked
        if not refused:
            return None
        wait, rule = max(refused, key=lambda pair: pair[0])
        return refusal(rule, who, tool, wait)

    def keep_buckets(self, old: Limiter) -> None:
        """Take over `old`'s buckets for the rules both have unchanged (a reload: a caller who spent its burst
        does not get it back because an unrelated line of the config changed)."""
        same = {r.name for r in self.rules if r in old.rules}
        with old._lock, self._lock:
            for key, bucket in old._buckets.items():
                if key.split("\x1f", 1)[0] in same:
                    self._buckets[key] = bucket

    def _bucket(self, rule: LimitRule, key: str, now: float) -> _Bucket:
        burst = float(rule.burst or 1)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(burst, now)
            if len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
            return bucket
        self._buckets.move_to_end(key)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * rule.tokens_per_s)
        bucket.at = now
        return bucket


def refusal(rule: LimitRule, caller: str, tool: str, wait_s: float) -> RateLimited:
    wait = max(math.ceil(wait_s * 1000) / 1000, 0.001)
    return RateLimited(
        f"{caller} is over the gateway limit {rule.name!r} for {tool} ({rule.describe()}); this call was not sent.",
        code="GATEWAY_RATE_LIMITED",
        hint=f"Nothing was done. Wait at least {wait:g} s before calling {tool} again; do not call it in a loop.",
        retry_after_s=wait,
        effect_done=False,
    )
