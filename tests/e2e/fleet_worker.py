"""One worker process of the fleet test: TASKS concurrent async calls of a journaled write to the upstream.

    python fleet_worker.py UPSTREAM_PORT WORKER SHARED_STATE STORE_URL SECONDS TASKS

It prints `ready` once imported and set up, then reads the start time (unix) from stdin, so that slow
imports on a loaded machine do not shift one worker's timeline against another's.

SHARED_STATE is `memory` (per-process breakers) or a URL. Workers 2k and 2k+1 make the same calls (same
conversation, same arguments, so the same idempotency key): the journal must let only one through. The
worker paces each task to one call per PACE_S and prints a JSON summary of its envelopes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections import Counter
from typing import Any

import toolproof
from toolproof.orchestration.breaker import BreakerConfig
from toolproof.orchestration.policy import RetryPolicy

PACE_S = 0.1
BREAKER = BreakerConfig(failure_threshold=5, recovery_s=0.8, half_open_retry_after_s=0.4)
RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.1, max_wall_s=5.0)


async def http_get(port: int, path: str) -> int:
    """One HTTP/1.0 request on loopback; the status code."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: upstream\r\n\r\n".encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    await reader.read()
    writer.close()
    await writer.wait_closed()
    return status


def toolset(port: int, worker: str) -> toolproof.Toolset:
    @toolproof.tool(effect="write", idempotent=True, timeout_s=2.0)
    async def book_slot(slot: str, ctx: toolproof.CallContext) -> dict[str, str]:
        """Book one delivery slot at the market's upstream service.

        Args:
            slot: The slot to book.
        """
        status = await http_get(port, f"/call?key={ctx.idempotency_key}&worker={worker}")
        if status != 200:
            raise toolproof.TransientUpstream(f"the booking service answered {status}")
        return {"slot": slot}

    return toolproof.Toolset([book_slot])


async def task(
    runner: toolproof.Runner, pair: int, index: int, until: float, outcomes: Counter[str], lag: list[float],
) -> None:
    n = 0
    while time.time() < until:
        ctx = toolproof.CallContext(conversation_id=f"pair{pair}-task{index}-{n}")
        envelope = await runner.call("book_slot", {"slot": f"s{n}"}, context=ctx)
        outcomes["ok" if envelope.ok else envelope.error.code] += 1  # type: ignore[union-attr]
        n += 1
        slept = time.monotonic()
        await asyncio.sleep(PACE_S)
        # How late the event loop woke this task: time the machine, not the breaker, kept the worker waiting.
        lag[0] = max(lag[0], time.monotonic() - slept - PACE_S)


async def main(port: int, worker: int, shared: str, store: str, seconds: float, tasks: int) -> None:
    runner = toolproof.Runner(toolset(port, str(worker)), store=store, breakers=BREAKER, retry=RETRY,
                              loop_guard=None, audit=False, shared_state=None if shared == "memory" else shared)
    logging.getLogger("toolproof.stops").setLevel(logging.ERROR)  # thousands of circuit_open stops by design
    print("ready", flush=True)
    start_at = float(await asyncio.to_thread(sys.stdin.readline))
    outcomes: Counter[str] = Counter()
    lag = [0.0]
    await asyncio.sleep(max(start_at - time.time(), 0))
    await asyncio.gather(*(task(runner, worker // 2, i, start_at + seconds, outcomes, lag) for i in range(tasks)))
    runner.close()
    print(json.dumps({"worker": worker, "outcomes": dict(outcomes), "degraded": runner.shared_state.outage.outages,
                      "max_lag_s": round(lag[0], 3)}))


if __name__ == "__main__":
    args: list[Any] = sys.argv[1:]
    asyncio.run(main(int(args[0]), int(args[1]), args[2], args[3], float(args[4]), int(args[5])))
