"""A discrete-time simulation (ticks of `dt`) of N agents calling one upstream of capacity C that is down
for T seconds. Not real processes: the point is the shape of the load, at scales no test machine runs.

Each agent makes one call at a time, then thinks (exponential, mean `think_s`), so the offered load is
N / think_s calls per second; the upstream serves C = `headroom` x that per second and fails the excess.
A failed attempt is retried with exponential backoff (base 1 s, x2, cap 20 s, `max_attempts` in all)
unless the strategy says no; a call that gives up is lost and the agent thinks again. Agents run in
processes of `per_process` agents; strategies:

- `no_jitter`: the backoff as computed; `full_jitter`: uniform in [0, backoff];
- `token_bucket`: full jitter + the AWS-style retry quota, one bucket per process (today's default);
- `process_breaker`: + a circuit breaker per process; `shared_breaker`: + one breaker and one bucket for
  the whole fleet (what `Runner(shared_state=...)` gives).

A breaker opens after `threshold` consecutive failures, refuses calls (not sent: the agent gives up) for
`recovery_s`, then lets exactly one trial through per window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

STRATEGIES = ("no_jitter", "full_jitter", "token_bucket", "process_breaker", "shared_breaker")


@dataclass(frozen=True)
class Params:
    agents: int = 10_000
    per_process: int = 100
    think_s: float = 10.0
    headroom: float = 1.25
    outage_at: float = 10.0
    outage_s: float = 30.0
    duration_s: float = 100.0
    dt: float = 0.01
    max_attempts: int = 4
    base_s: float = 1.0
    cap_s: float = 20.0
    bucket: int = 500
    retry_cost: int = 5
    threshold: int = 5
    recovery_s: float = 5.0
    seed: int = 7


@dataclass
class Result:
    strategy: str
    params: Params
    sent: np.ndarray  # upstream requests per tick
    failed: np.ndarray  # of which failed
    latencies: list[float] = field(default_factory=list)

    def per_second(self, series: np.ndarray) -> np.ndarray:
        ticks = round(1 / self.params.dt)
        return series[: len(series) // ticks * ticks].reshape(-1, ticks).sum(axis=1)

    def summary(self) -> dict[str, Any]:
        p = self.params
        sent, failed = self.per_second(self.sent), self.per_second(self.failed)
        offered = p.agents / p.think_s
        end = int(p.outage_at + p.outage_s)
        ok = sent - failed
        window = np.ones(5) / 5  # 5-second means: Poisson noise alone must not look like an outage
        ok_mean = np.convolve(ok[end:], window, "valid")
        bad_mean = np.convolve(failed[end:], window, "valid")
        healthy = np.nonzero((ok_mean >= 0.9 * offered) & (bad_mean <= 0.1 * offered))[0]
        lat = np.array(self.latencies) if self.latencies else np.zeros(1)
        return {
            "strategy": self.strategy, "agents": p.agents, "capacity_per_s": round(offered * p.headroom),
            "peak_load_x_capacity": round(float(sent.max()) / (offered * p.headroom), 2),
            "wasted_calls": int(self.failed.sum()),
            "wasted_per_agent": round(float(self.failed.sum()) / p.agents, 2),
            "recovery_s": int(healthy[0]) if len(healthy) else None,
            "latency_p50_s": round(float(np.percentile(lat, 50)), 2),
            "latency_p99_s": round(float(np.percentile(lat, 99)), 2),
        }


class Breakers:
    """One breaker per group (a process, or the whole fleet): state, consecutive failures, opened at."""

    def __init__(self, groups: int, threshold: int, recovery_s: float) -> None:
        self.open = np.zeros(groups, bool)
        self.opened_at = np.zeros(groups)
        self.count = np.zeros(groups, int)
        self.threshold, self.recovery_s = threshold, recovery_s

    def admit(self, t: float, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(admitted, trial) for agents due now, in order: open breakers refuse all but one trial per window."""
        shut = self.open[group]
        ripe = shut & (t >= self.opened_at[group] + self.recovery_s)
        first = np.zeros(len(group), bool)
        idx = np.nonzero(ripe)[0]
        if len(idx):
            _, pos = np.unique(group[idx], return_index=True)
            first[idx[pos]] = True
        return ~shut | first, first

    def record(self, t: float, group: np.ndarray, failed: np.ndarray, trial: np.ndarray) -> None:
        groups = len(self.open)
        fails = np.bincount(group[failed], minlength=groups)
        oks = np.bincount(group[~failed], minlength=groups)
        trial_ok = np.bincount(group[trial & ~failed], minlength=groups) > 0
        trial_bad = np.bincount(group[trial & failed], minlength=groups) > 0
        self.open[trial_ok] = False
        self.count = np.where(oks > 0, 0, self.count + fails)
        trip = (~self.open & (self.count >= self.threshold)) | trial_bad
        self.open[trip] = True
        self.opened_at[trip] = t
        self.count[trip] = 0


def run(strategy: str, p: Params) -> Result:
    """Simulate one strategy; deterministic for a given `p.seed`."""
    rng = np.random.default_rng(p.seed)
    n, ticks = p.agents, round(p.duration_s / p.dt)
    processes = -(-n // p.per_process)
    proc = np.arange(n) // p.per_process
    group = np.zeros(n, int) if strategy == "shared_breaker" else proc
    tokens = np.full(1 if strategy == "shared_breaker" else processes, p.bucket)
    bucketed = strategy in ("token_bucket", "process_breaker", "shared_breaker")
    breakers = Breakers(len(tokens), p.threshold, p.recovery_s) if "breaker" in strategy else None
    next_t = rng.exponential(p.think_s, n)
    attempt = np.zeros(n, int)
    started = next_t.copy()
    capacity_tick = n / p.think_s * p.headroom * p.dt
    res = Result(strategy, p, np.zeros(ticks, int), np.zeros(ticks, int))
    credit = 0.0
    for k in range(ticks):
        t = k * p.dt
        due = np.nonzero(next_t < t + p.dt)[0]
        if not len(due):
            continue
        fresh = attempt[due] == 0
        started[due[fresh]] = t
        trial = np.zeros(len(due), bool)
        if breakers is not None:
            admitted, trial = breakers.admit(t, group[due])
            refused = due[~admitted]
            next_t[refused], attempt[refused] = t + rng.exponential(p.think_s, len(refused)), 0
            due, trial = due[admitted], trial[admitted]
        down = p.outage_at <= t < p.outage_at + p.outage_s
        credit = min(credit + capacity_tick, capacity_tick + 1)
        served = 0 if down else min(len(due), int(credit))
        credit -= served
        failed = np.ones(len(due), bool)
        failed[rng.permutation(len(due))[:served]] = False
        res.sent[k], res.failed[k] = len(due), len(due) - served
        if breakers is not None:
            breakers.record(t, group[due], failed, trial)
        ok = due[~failed]
        res.latencies.extend((t - started[ok]).tolist())
        next_t[ok], attempt[ok] = t + rng.exponential(p.think_s, len(ok)), 0
        if bucketed:
            tokens = np.minimum(p.bucket, tokens + np.bincount(group[ok] if breakers else proc[ok],
                                                               minlength=len(tokens)))
        _retry(strategy, p, rng, t, due[failed], attempt, next_t, tokens, group if breakers else proc, breakers)
    return res


def _retry(strategy: str, p: Params, rng: np.random.Generator, t: float, bad: np.ndarray, attempt: np.ndarray,
           next_t: np.ndarray, tokens: np.ndarray, owner: np.ndarray, breakers: Breakers | None) -> None:
    """Failed attempts: retry after a backoff when the attempts, the quota and the breaker allow; else give up."""
    attempt[bad] += 1
    may = attempt[bad] < p.max_attempts
    if breakers is not None:
        may &= ~breakers.open[owner[bad]]
    if strategy in ("token_bucket", "process_breaker", "shared_breaker"):
        idx = np.nonzero(may)[0]
        order = idx[np.argsort(owner[bad[idx]], kind="stable")]
        groups = owner[bad[order]]
        rank = np.arange(len(order)) - np.searchsorted(groups, groups)  # position within its owner's group
        paid = rank < tokens[groups] // p.retry_cost
        may[order[~paid]] = False
        np.subtract.at(tokens, groups[paid], p.retry_cost)
    retry, give_up = bad[may], bad[~may]
    delay = np.minimum(p.cap_s, p.base_s * 2.0 ** (attempt[retry] - 1))
    if strategy != "no_jitter":
        delay *= rng.random(len(retry))
    next_t[retry] = t + np.maximum(delay, p.dt)
    next_t[give_up], attempt[give_up] = t + rng.exponential(p.think_s, len(give_up)), 0
