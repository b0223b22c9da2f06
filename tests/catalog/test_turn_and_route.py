"""`Toolset.search`, per-turn exports and the `search_tools` meta-tool on the wholesaler's real tools."""

from __future__ import annotations

import toolproof
from toolproof.catalog import Router, search_tools_tool, tools_for_turn
from toolproof.retrieval._index import ToolIndex


def test_search_ranks_the_wholesaler_tools(wholesaler: toolproof.Toolset) -> None:
    hits = wholesaler.search("how many bags of groundnut do you have in stock?", k=3)
    assert hits[0].tool.name == "check_stock"
    assert all(isinstance(h.tool, toolproof.Tool) for h in hits)
    assert [h.rank for h in hits] == [1, 2, 3] and hits[0].score > 0
    assert wholesaler.search("cancel my order", k=1)[0].tool.name == "cancel_order"
    assert wholesaler.search("price history of onion over the last week", k=1)[0].tool.name == "get_price_history"


def test_the_index_is_built_once_per_toolset(wholesaler: toolproof.Toolset) -> None:
    first = wholesaler.search_index()
    wholesaler.search("stock", k=2)
    assert wholesaler.search_index() is first
    other = wholesaler.select(wholesaler.names)
    assert other.search_index() is not first  # no state shared between toolsets


def test_tools_for_turn_exports_only_the_picked_tools(wholesaler: toolproof.Toolset) -> None:
    openai = tools_for_turn(wholesaler, "please cancel order 42", k=2, fmt="openai")
    assert openai[0]["function"]["name"] == "cancel_order" and len(openai) == 2
    assert openai[0] == wholesaler.select(["cancel_order"]).to_openai()[0]
    mcp = tools_for_turn(wholesaler, "please cancel order 42", k=1, fmt="mcp", always=["get_order_status"])
    assert [d["name"] for d in mcp] == ["cancel_order", "get_order_status"]
    anthropic = tools_for_turn(wholesaler, "today's price of jeera", k=1, fmt="anthropic")
    assert set(anthropic[0]) == {"name", "description", "input_schema"}


def test_search_tools_meta_tool_runs_through_the_runner(
    wholesaler: toolproof.Toolset, buyer: toolproof.CallContext
) -> None:
    meta = search_tools_tool(wholesaler, default_k=2)
    assert meta.name == "search_tools" and meta.effect == "read"
    runner = toolproof.Runner(toolproof.Toolset([meta]))
    env = runner.call_sync("search_tools", {"query": "is my order shipped yet?"}, context=buyer)
    assert env.ok, env
    tools = env.result["tools"]
    assert len(tools) == 2 and tools[0]["id"] == "get_order_status"
    assert tools[0]["definition"]["inputSchema"] == wholesaler.get("get_order_status").input_schema
    bad = runner.call_sync("search_tools", {"query": "", "k": 500}, context=buyer)
    assert not bad.ok and bad.error is not None and bad.error.error_class.value == "invalid_argument"


def test_search_tools_over_plain_definitions(buyer: toolproof.CallContext) -> None:
    index = ToolIndex.from_definitions(
        [{"name": "create_issue", "description": "Open a GitHub issue",
          "inputSchema": {"type": "object", "properties": {"title": {"type": "string", "description": "Title"}}}},
         {"name": "list_commits", "description": "Commits of a branch", "inputSchema": {"type": "object"}}],
        group="github")
    runner = toolproof.Runner(toolproof.Toolset([search_tools_tool(index, name="find_tools")]))
    env = runner.call_sync("find_tools", {"query": "open an issue about the crash", "k": 1}, context=buyer)
    assert env.ok
    assert env.result["tools"][0]["id"] == "github::create_issue"
    assert env.result["tools"][0]["definition"]["inputSchema"]["properties"]["title"]["description"] == "Title"


def test_router_picks_groups_by_search_and_keywords(wholesaler: toolproof.Toolset) -> None:
    groups = {t.group for t in wholesaler}
    assert None not in groups and len(groups) >= 2
    router = Router(wholesaler)
    order_group = wholesaler.get("cancel_order").group
    assert router.route("cancel my order please")[0].group == order_group
    narrowed = router.toolset_for("cancel my order please")
    assert "cancel_order" in narrowed and all(t.group == order_group for t in narrowed)
    stock_group = wholesaler.get("check_stock").group
    keyed = Router(wholesaler, keywords={stock_group: ["warehouse"]})
    assert keyed.route("what's in the warehouse?")[0].via == "keyword"
    assert Router(wholesaler).toolset_for("zzzz qqqq") .names == []


def test_search_never_answers_with_tools_that_share_nothing_with_the_message(
    wholesaler: toolproof.Toolset,
) -> None:
    assert wholesaler.search("how much is 100 dollars in euros", k=3) == []  # "100" alone is not a match
    assert wholesaler.search("", k=3) == [] and wholesaler.search("   ", k=3) == []
    hits = wholesaler.search("price of onion", k=5)
    assert hits and all(h.score > 0 for h in hits) and len(hits) < len(wholesaler)


def test_tools_for_turn_without_a_match_falls_back_to_the_documented_set(wholesaler: toolproof.Toolset) -> None:
    message = "how much is 100 dollars in euros"
    whole = tools_for_turn(wholesaler, message, k=3, fmt="mcp")
    assert [d["name"] for d in whole] == wholesaler.names  # a small toolset is sent whole: the model decides
    only_always = tools_for_turn(wholesaler, message, k=3, fmt="mcp", always=["get_order_status"], small=2)
    assert [d["name"] for d in only_always] == ["get_order_status"]  # a large one: only the `always` tools
    assert tools_for_turn(wholesaler, message, k=3, small=2) == []
    matched = tools_for_turn(wholesaler, "please cancel order 42", k=3, fmt="mcp", small=2)
    assert matched and "cancel_order" in [d["name"] for d in matched]


def test_search_tools_says_when_nothing_matches(wholesaler: toolproof.Toolset, buyer: toolproof.CallContext) -> None:
    runner = toolproof.Runner(toolproof.Toolset([search_tools_tool(wholesaler)]))
    env = runner.call_sync("search_tools", {"query": "how much is 100 dollars in euros"}, context=buyer)
    assert env.ok and env.result["tools"] == [] and "describe the task differently" in env.result["note"]


def test_search_takes_a_retriever_and_fusion_through_the_toolset(wholesaler: toolproof.Toolset) -> None:
    rrf = wholesaler.search_index("hybrid", fusion="rrf")
    lift = wholesaler.search_index("hybrid")
    assert (rrf.retriever_name, rrf.fusion, lift.fusion) == ("hybrid", "rrf", "lift")
    assert rrf is not lift and wholesaler.search_index("hybrid", fusion="rrf") is rrf  # one index per choice
    hits = wholesaler.search("please cancel order 42", k=2, retriever="hybrid", fusion="rrf")
    assert hits[0].tool.name == "cancel_order" and all(isinstance(h.tool, toolproof.Tool) for h in hits)
    assert wholesaler.search_index("auto").retriever_name == "hybrid"  # the model is installed in the test venv


def test_the_default_fuses_the_static_model_and_keeps_the_floor(wholesaler: toolproof.Toolset) -> None:
    assert wholesaler.search_index().retriever_name == "bm25+static"  # the model files are in the test venv
    assert wholesaler.search("how much is 100 dollars in euros", k=3) == []
