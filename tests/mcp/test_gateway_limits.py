"""Gateway rate limits: the `[[limits]]` rules as the TOML gives them (validated with clear errors) and the
token buckets they make (a hand-driven clock, so refill is exact)."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.mcp._config import ConfigError, config_from_dict
from toolproof.mcp._limits import Limiter, LimitRule, LimitsError, unmatched_tools

UP = {"a": {"command": "python -m a"}, "b": {"command": "python -m b"}}


def config(*limits: dict[str, Any], **gateway: Any) -> Any:
    return config_from_dict({"gateway": gateway, "upstreams": UP, "limits": list(limits)})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("rule", "message"), [
    ({"rate": 1, "colour": "red"}, r"\[\[limits\]\] number 1: unknown key\(s\) colour"),
    ({"caller": "*"}, r"number 1: rate is required"),
    ({"rate": 0}, r"'limit-1': rate must be a positive number, got 0"),
    ({"rate": 1, "burst": 0}, r"burst must be a whole number of calls >= 1"),
    ({"rate": 1, "per": ["principal"]}, r"per must be a list of distinct caller, tool, upstream"),
    ({"rate": 1, "per": "caller"}, r"per must be a list"),
    ({"rate": 1, "upstream": "c*"}, r"upstream 'c\*' picks none of the configured upstreams \(a, b\)"),
    ({"rate": 1, "name": "has space"}, r"name 'has space' must match"),
    ({"rate": 1, "shared": True}, r"shared = true, but \[gateway\] shared_state names no"),
])
def test_a_bad_rule_fails_at_start_naming_the_rule_and_the_key(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(rule)


def test_two_rules_with_one_name_and_a_limits_table_that_is_not_an_array_fail() -> None:
    with pytest.raises(ConfigError, match="two rules are both named 'x'"):
        config({"name": "x", "rate": 1}, {"name": "x", "rate": 2})
    with pytest.raises(ConfigError, match=r"array of tables: \[\[limits\]\]"):
        config_from_dict({"upstreams": UP, "limits": {"rate": 1}})


def test_a_good_rule_reads_with_its_defaults() -> None:
    cfg = config({"name": "search", "tool": "search_*", "rate": 2.5, "period_s": 60},
                 shared_state="redis://127.0.0.1:6379/0")
    rule = cfg.limits[0]
    assert (rule.name, rule.tool, rule.caller, rule.upstream, rule.per, rule.burst) == (
        "search", "search_*", "*", "*", ("caller",), 3)
    assert cfg.shared_state == "redis://127.0.0.1:6379/0"
    assert unmatched_tools(cfg.limits, {"search_web": "a", "fetch": "b"}) == []
    assert unmatched_tools(cfg.limits, {"fetch": "b"}) == ["search"]


def test_a_burst_then_one_call_per_refill_and_the_wait_is_exact() -> None:
    clock = Clock()
    limiter = Limiter([LimitRule("r", rate=2, period_s=1, burst=3)], clock=clock)
    assert [limiter.check("alice", "t", "a") for _ in range(3)] == [None, None, None]
    refused = limiter.check("alice", "t", "a")
    assert refused is not None and refused.code == "GATEWAY_RATE_LIMITED" and refused.retry_after_s == 0.5
    assert refused.error_class.value == "rate_limited" and refused.effect_done is False
    assert "alice is over the gateway limit 'r'" in refused.message
    clock.now += 0.25
    assert limiter.check("alice", "t", "a").retry_after_s == 0.25  # type: ignore[union-attr]  # nothing taken
    clock.now += 0.25
    assert limiter.check("alice", "t", "a") is None
    assert limiter.check("bob", "t", "a") is None  # per caller: bob has his own bucket


def test_every_rule_that_picks_a_call_applies_and_a_refusal_takes_no_token() -> None:
    clock = Clock()
    limiter = Limiter([LimitRule("caller", rate=10, burst=10),
                       LimitRule("writes", rate=1, burst=1, tool="write_*", per=())], clock=clock)
    assert limiter.check("alice", "write_row", "a") is None
    refused = limiter.check("bob", "write_row", "a")  # the shared `writes` bucket is empty
    assert refused is not None and "'writes'" in refused.message and refused.retry_after_s == 1.0
    for _ in range(9):  # bob's own bucket lost nothing to the refusal: 9 more reads...
        assert limiter.check("bob", "read_row", "a") is None
    assert limiter.check("bob", "read_row", "a") is None  # ...and the 10th
    assert limiter.check("bob", "read_row", "a") is not None


def test_globs_on_caller_tool_and_upstream() -> None:
    limiter = Limiter([LimitRule("bots", rate=1, burst=1, caller="bot-*", upstream="b", per=["caller", "tool"])],
                      clock=Clock())
    assert limiter.check("bot-1", "x", "b") is None
    assert limiter.check("bot-1", "x", "b") is not None
    assert limiter.check("bot-1", "y", "b") is None  # per tool too
    assert limiter.check("bot-1", "x", "a") is None  # another upstream: not picked
    assert limiter.check("alice", "x", "b") is None and limiter.check("alice", "x", "b") is None
    assert limiter.check(None, "x", "b") is None  # anonymous is not bot-*


def test_buckets_are_bounded() -> None:
    limiter = Limiter([LimitRule("r", rate=1, burst=1)], clock=Clock(), max_buckets=100)
    for n in range(1000):
        limiter.check(f"caller-{n}", "t", "a")
    assert len(limiter._buckets) <= 101


def test_a_shared_rule_needs_a_shared_store() -> None:
    with pytest.raises(LimitsError, match="shared_state names no"):
        Limiter([LimitRule("r", rate=1, shared=True)])


def test_a_reload_keeps_the_buckets_of_unchanged_rules_only() -> None:
    clock = Clock()
    same, changed = LimitRule("same", rate=1, burst=1), LimitRule("changed", rate=1, burst=1, tool="t*")
    old = Limiter([same, changed], clock=clock)
    assert old.check("alice", "t", "a") is None
    new = Limiter([same, LimitRule("changed", rate=1, burst=5, tool="t*")], clock=clock)
    new.keep_buckets(old)
    refused = new.check("alice", "t", "a")
    assert refused is not None and "'same'" in refused.message  # alice's spent token in `same` stays spent
    assert new.check("bob", "t", "a") is None
