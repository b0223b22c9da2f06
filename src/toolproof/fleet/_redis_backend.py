"""The shared state in Redis: one hash per breaker, one counter per bucket, each decision one Lua script.

A script runs atomically on the server, so a read-decide-write never races another worker; time is the
server's (`TIME`), so workers on machines with skewed clocks agree on when a recovery window ends.
"""

from __future__ import annotations

from typing import Any, Final

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..orchestration.breaker import Admission, BreakerConfig, BreakerState

# KEYS[1] the breaker hash; ARGV recovery_s, half_open_retry_after_s, trial token.
# -> {allowed, trial token or "", retry_after_s (string: Lua numbers come back truncated), consecutive}
_ADMIT: Final = """
local h = redis.call('HMGET', KEYS[1], 'state', 'opened_at', 'trial_at', 'consecutive')
local state = h[1] or 'closed'
if state == 'closed' then return {1, '', '0', tonumber(h[4] or '0')} end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local recovery = tonumber(ARGV[1])
if state == 'open' then
  local left = tonumber(h[2]) + recovery - now
  if left > 0 then return {0, '', tostring(math.min(left, recovery)), 0} end
  redis.call('HSET', KEYS[1], 'state', 'half_open')
  h[3] = false
end
if h[3] and now - tonumber(h[3]) < recovery then return {0, '', ARGV[2], 0} end
redis.call('HSET', KEYS[1], 'trial_at', tostring(now), 'trial', ARGV[3])
return {1, ARGV[3], '0', 0}
"""

# KEYS[1] the breaker hash; ARGV failure (0/1), trial token or "", failure_threshold. -> consecutive
_RECORD: Final = """
local h = redis.call('HMGET', KEYS[1], 'state', 'trial')
local state = h[1] or 'closed'
local failure = ARGV[1] == '1'
local function open()
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', tostring(tonumber(t[1]) + tonumber(t[2]) / 1000000),
             'consecutive', 0)
  redis.call('HDEL', KEYS[1], 'trial', 'trial_at')
  redis.call('HINCRBY', KEYS[1], 'opened', 1)
end
if state == 'half_open' then
  if ARGV[2] == '' or ARGV[2] ~= h[2] then return 0 end
  if failure then open() else
    redis.call('HSET', KEYS[1], 'state', 'closed', 'consecutive', 0)
    redis.call('HDEL', KEYS[1], 'trial', 'trial_at')
  end
  return 0
end
if state == 'open' then return 0 end
if not failure then
  redis.call('HSET', KEYS[1], 'consecutive', 0)
  return 0
end
local n = redis.call('HINCRBY', KEYS[1], 'consecutive', 1)
if n >= tonumber(ARGV[3]) then open() return 0 end
return n
"""

# KEYS[1] the breaker hash; ARGV recovery_s. -> state as a caller would find it now
_STATE: Final = """
local h = redis.call('HMGET', KEYS[1], 'state', 'opened_at')
local state = h[1] or 'closed'
if state ~= 'open' then return state end
local t = redis.call('TIME')
if tonumber(t[1]) + tonumber(t[2]) / 1000000 >= tonumber(h[2]) + tonumber(ARGV[1]) then return 'half_open' end
return 'open'
"""

# KEYS[1] the bucket's counter; ARGV capacity, cost, refund. -> tokens left, or -1 when too few
_TAKE: Final = """
local cap = tonumber(ARGV[1])
local tokens = math.min(cap, tonumber(redis.call('GET', KEYS[1]) or ARGV[1]) + tonumber(ARGV[3]))
local cost = tonumber(ARGV[2])
if tokens < cost then
  redis.call('SET', KEYS[1], tokens)
  return -1
end
redis.call('SET', KEYS[1], tokens - cost)
return tokens - cost
"""


# KEYS[1] the rate bucket hash; ARGV tokens per second, burst. -> "" when a token was taken, else the seconds
# until one is there (a string: Lua numbers come back truncated). Refilled by the server's clock.
_RATE: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = burst
if h[1] then tokens = math.min(burst, tonumber(h[1]) + math.max(0, now - tonumber(h[2])) * rate) end
local out = ''
if tokens >= 1 then tokens = tokens - 1 else out = tostring((1 - tokens) / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return out
"""


class RedisBackend:
    """Breakers and buckets under `PREFIX:breaker:NAME` and `PREFIX:bucket:NAME` (redis-py, sync)."""

    errors: tuple[type[BaseException], ...] = (redis.ConnectionError, redis.TimeoutError)

    def __init__(self, url: str, *, prefix: str = "toolproof", timeout_s: float = 0.25) -> None:
        self.label = url.split("@")[-1]  # never a password in a log line
        self.prefix = prefix
        # No client-side retries: an unreachable store means "decide locally now", not "wait and try again".
        self.client: redis.Redis = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0),
            decode_responses=True,
        )
        self._admit = self.client.register_script(_ADMIT)
        self._record = self.client.register_script(_RECORD)
        self._state = self.client.register_script(_STATE)
        self._take = self.client.register_script(_TAKE)
        self._rate = self.client.register_script(_RATE)

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}:{kind}:{name}"

    def admit(self, name: str, config: BreakerConfig, token: str) -> tuple[Admission, int]:
        allowed, trial, retry_after, consecutive = self._run(
            self._admit, name, config.recovery_s, config.half_open_retry_after_s, token)
        if not allowed:
            return Admission(False, retry_after_s=float(retry_after)), 0
        return Admission(True, trial=bool(trial)), int(consecutive)

    def record(self, name: str, config: BreakerConfig, failure: bool, token: str | None) -> int:
        return int(self._run(self._record, name, int(failure), token or "", config.failure_threshold))

    def state(self, name: str, config: BreakerConfig) -> BreakerState:
        return BreakerState(self._run(self._state, name, config.recovery_s))

    def take(self, name: str, capacity: int, cost: int, refund: int) -> int | None:
        left = int(self._take(keys=[self._key("bucket", name)], args=[capacity, cost, refund]))
        return None if left < 0 else left

    def rate_take(self, name: str, tokens_per_s: float, burst: int) -> float | None:
        wait = self._rate(keys=[self._key("rate", name)], args=[repr(float(tokens_per_s)), burst])
        return float(wait) if wait else None

    def reset(self, name: str) -> None:
        self.client.delete(self._key("breaker", name))

    def close(self) -> None:
        self.client.close()

    def _run(self, script: Any, name: str, *args: Any) -> Any:
        return script(keys=[self._key("breaker", name)], args=list(args))
