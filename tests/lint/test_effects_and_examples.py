"""TP504 (read-only and destructive), TP505 (a new key on every call) and TP315 reading parameter
descriptions: each with a planted positive and a clean negative."""

from __future__ import annotations

from typing import Any

from toolproof.lint import LintConfig, lint

SELECT = LintConfig(select=("TP315", "TP504", "TP505"))


def _tool(name: str, description: str, key_description: str, **annotations: bool) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"idempotency_key": {"type": "string", "description": key_description},
                                               "amount_cents": {"type": "integer", "description": "How much."}}}
    return {"name": name, "description": description, "inputSchema": schema, "annotations": annotations}


def _codes(definition: dict[str, Any]) -> dict[str, str]:
    return {f.code: f.pointer for f in lint([definition], SELECT)}


def test_read_only_and_destructive_is_an_error_and_one_hint_is_clean() -> None:
    both = _codes(_tool("charge_card", "Charge a card.", "One key per payment, e.g. 9b1f.", readOnlyHint=True,
                        destructiveHint=True))
    assert both.get("TP504") == "/annotations"
    clean = _codes(_tool("charge_card", "Charge a card.", "One key per payment, e.g. 9b1f.", readOnlyHint=False,
                         destructiveHint=True))
    assert "TP504" not in clean


def test_a_key_unique_for_every_request_is_found_where_it_is_written() -> None:
    found = _codes(_tool("charge_card", "Charge a card.", "A key that must be unique for every request."))
    assert found.get("TP505") == "/inputSchema/properties/idempotency_key/description"
    in_tool = _codes(_tool("pay", "Pay an invoice. Generate a new UUID each time you call it.", "The key."))
    assert in_tool.get("TP505") == "/description"
    reuse = _codes(_tool("charge_card", "Charge a card.", "One key per payment; send the same key again on a retry."))
    assert "TP505" not in reuse


def test_examples_in_a_parameter_description_count() -> None:
    with_example = _codes(_tool("charge_card", "Charge a card.", "The payment's key, e.g. 2500."))
    assert "TP315" not in with_example
    in_tool = _codes(_tool("charge_card", "Charge a card, e.g. 2500 cents.", "The payment's key."))
    assert "TP315" not in in_tool  # "e.g." followed by a space matches too
    none = _codes(_tool("charge_card", "Charge a card.", "The payment's key."))
    assert none.get("TP315") == "/inputSchema"


def _header_tool(properties: dict[str, Any]) -> dict[str, Any]:
    return {"name": "run_query", "description": "Run a SQL query in a region, e.g. us-west1.",
            "inputSchema": {"type": "object", "properties": properties}}


def test_x_mcp_header_constraints() -> None:
    config = LintConfig(select=("TP318",))
    clean = _header_tool({"region": {"type": "string", "x-mcp-header": "Region"},
                          "query": {"type": "string"}})
    assert lint([clean], config) == []
    bad = _header_tool({
        "region": {"type": "string", "x-mcp-header": "Region"},
        "zone": {"type": "string", "x-mcp-header": "region"},  # the same name, other case
        "spaced": {"type": "string", "x-mcp-header": "My Region"},  # not an HTTP token
        "tags": {"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}},  # not via properties
        "limits": {"type": "object", "x-mcp-header": "Limits"},  # not a primitive
    })
    found = {f.pointer: f.message for f in lint([bad], config)}
    assert set(found) == {"/inputSchema/properties/zone", "/inputSchema/properties/spaced",
                          "/inputSchema/properties/tags/items", "/inputSchema/properties/limits"}
    assert "repeats" in found["/inputSchema/properties/zone"]
    assert "HTTP token" in found["/inputSchema/properties/spaced"]
