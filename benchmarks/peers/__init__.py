"""toolproof next to its peers (pydantic-ai, openai-agents, the MCP SDK's MCPServer): the same tool, the same
faults, every cell measured. Run `python -m benchmarks.peers.compare`; see docs/peers.md."""
