"""FastMCP with its `RetryMiddleware` (defaults: 3 retries on ConnectionError and TimeoutError, no check of
the tool's annotations) except `base_delay=0.01`, called through a real `fastmcp.Client` session in memory
(`Client(server)`); the reply is the `CallToolResult`. Scenario 5 uses the client's `timeout=0.1`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from benchmarks.peers._common import TIMEOUT_S, Observation, OrderBook, Reply, Scenario, make_place_order, simple_loop
from benchmarks.peers._mcp import _reply

NAME = "fastmcp RetryMiddleware"
DIST = "fastmcp-slim"


def available() -> bool:
    try:
        from fastmcp.server.middleware.error_handling import RetryMiddleware  # noqa: F401
    except ImportError:
        return False
    return True


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    from fastmcp import Client, FastMCP
    from fastmcp.server.middleware.error_handling import RetryMiddleware

    for name in ("fastmcp", "fastmcp.retry"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    obs = Observation(NAME, scenario.key)
    server = FastMCP("shop")
    server.add_middleware(RetryMiddleware(base_delay=0.01))
    server.tool(make_place_order(book))
    async with Client(server) as client:

        async def send(args: dict[str, Any]) -> Reply:
            try:
                result = await client.call_tool("place_order", args, raise_on_error=False,
                                                timeout=TIMEOUT_S if scenario.timeout else None)
            except Exception as exc:
                return Reply.from_text(f"client raised {type(exc).__name__}", str(exc), error=True)
            return _reply(result)

        await simple_loop(scenario, send, obs)
    return obs
