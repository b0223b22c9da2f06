"""Run by tests/e2e/test_langchain_mcp_adapters.py in langchain-mcp-adapters' own environment (its `mcp<2`
pin clashes with the project's): book ORDER twice through `MultiServerMCPClient` tools, each time on a new
client (as `get_tools()` opens a session per call anyway), naming the conversation only in the
`Toolproof-Conversation-Id` header; print the two envelopes the tools returned as JSON lines.

Usage: python book_twice.py URL CONVERSATION
"""

import asyncio
import json
import sys

from langchain_mcp_adapters.client import MultiServerMCPClient

ORDER = {"crop": "onion", "quantity_kg": 400, "delivery_date": "2026-10-23"}


async def book(url: str, conversation: str) -> object:
    client = MultiServerMCPClient({"desk": {"transport": "streamable_http", "url": url,
                                            "headers": {"Toolproof-Conversation-Id": conversation,
                                                        "Toolproof-Principal": "B-17"}}})
    tools = {tool.name: tool for tool in await client.get_tools()}
    return await tools["place_order"].ainvoke(ORDER)


async def main(url: str, conversation: str) -> None:
    for _ in range(2):
        print(json.dumps(await book(url, conversation), default=str), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
