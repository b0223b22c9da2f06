"""Toolset lookup and exports, each checked by code against the provider's published rules."""

from __future__ import annotations

import re
from typing import Any

import jsonschema_rs
import pytest

import toolproof
from tests._schemas import object_schemas
from toolproof.catalog._toolset import EXPORT_FORMATS
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.examples.wholesaler.old_tools import build_old_toolset

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
META_2020_12 = "https://json-schema.org/draft/2020-12/schema"




def _check_valid_2020_12(schema: dict[str, Any]) -> None:
    assert jsonschema_rs.meta.is_valid({**schema, "$schema": META_2020_12}), schema


def check_mcp(tool: dict[str, Any]) -> None:
    """MCP 2025-06-18 Tool: name, inputSchema of type object, optional outputSchema of type object, annotations."""
    assert set(tool) <= {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}
    assert NAME.match(tool["name"])
    assert tool["inputSchema"]["type"] == "object"
    _check_valid_2020_12(tool["inputSchema"])
    assert tool["outputSchema"]["type"] == "object"
    _check_valid_2020_12(tool["outputSchema"])
    ann = tool["annotations"]
    assert set(ann) <= {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
    assert all(isinstance(ann[k], bool) for k in ann if k.endswith("Hint"))


OPENAI_ALLOWED_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "description", "enum", "const", "anyOf", "items",
    "$defs", "$ref", "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minItems", "maxItems", "minLength", "maxLength",
}


def _keywords(schema: Any, in_map: bool = False) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        for k, v in schema.items():
            if not in_map:
                found.add(k)
            found |= _keywords(v, in_map=(k in ("properties", "$defs") and not in_map))
    elif isinstance(schema, list):
        for v in schema:
            found |= _keywords(v)
    return found


def check_openai(tool: dict[str, Any]) -> None:
    """OpenAI function tool in strict mode: root object, every property required, objects closed."""
    assert tool["type"] == "function"
    fn = tool["function"]
    assert set(fn) == {"name", "description", "parameters", "strict"}
    assert NAME.match(fn["name"])
    params = fn["parameters"]
    assert params["type"] == "object"
    assert "anyOf" not in params
    _check_valid_2020_12(params)
    if fn["strict"]:
        for obj in object_schemas(params):
            assert obj["additionalProperties"] is False
            assert sorted(obj["required"]) == sorted(obj["properties"])
        assert _keywords(params) <= OPENAI_ALLOWED_KEYWORDS, _keywords(params) - OPENAI_ALLOWED_KEYWORDS


def check_anthropic(tool: dict[str, Any]) -> None:
    """Anthropic Messages API tool: name, description, input_schema of type object."""
    assert set(tool) == {"name", "description", "input_schema"}
    assert NAME.match(tool["name"])
    assert tool["input_schema"]["type"] == "object"
    _check_valid_2020_12(tool["input_schema"])


CHECKERS = {"mcp": check_mcp, "openai": check_openai, "anthropic": check_anthropic}


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
@pytest.mark.parametrize("which", ["new", "old"])
def test_exports_follow_provider_rules(fmt: str, which: str) -> None:
    shop = Shop()
    toolset = build_toolset(shop) if which == "new" else build_old_toolset(shop)
    exported = toolset.export(fmt)  # type: ignore[arg-type]
    assert len(exported) == len(toolset)
    for tool in exported:
        CHECKERS[fmt](tool)


def test_new_tools_export_strict_for_openai() -> None:
    exported = build_toolset(Shop()).to_openai()
    assert all(t["function"]["strict"] for t in exported)
    grade = next(t for t in exported if t["function"]["name"] == "get_today_price")["function"]["parameters"][
        "properties"]["grade"]
    assert grade["type"] == ["string", "null"]
    assert None in grade["enum"]


def test_openai_null_for_optional_is_accepted_by_runner() -> None:
    runner = toolproof.Runner(build_toolset(Shop()))
    env = runner.call_sync("get_today_price", {"crop": "jeera", "grade": None})
    assert env.ok
    assert env.result["grade"] == "A"


def test_mcp_annotations_follow_effect() -> None:
    by_name = {t["name"]: t for t in build_toolset(Shop()).to_mcp()}
    assert by_name["get_today_price"]["annotations"]["readOnlyHint"] is True
    assert by_name["place_order"]["annotations"]["destructiveHint"] is True
    assert by_name["place_order"]["annotations"]["idempotentHint"] is True


def test_duplicate_names_rejected() -> None:
    toolset = build_toolset(Shop())
    with pytest.raises(toolproof.DefinitionError, match="duplicate"):
        toolproof.Toolset([*toolset, toolset.get("check_stock")])


def test_non_tools_rejected() -> None:
    with pytest.raises(toolproof.DefinitionError):
        toolproof.Toolset([lambda: None])  # type: ignore[list-item]


def test_lookup_and_select() -> None:
    toolset = build_toolset(Shop())
    assert "place_order" in toolset
    assert toolset.select(["check_stock"]).names == ["check_stock"]
    with pytest.raises(toolproof.UnknownTool):
        toolset.get("order_v2")
    with pytest.raises(ValueError, match="format"):
        toolset.export("gemini")  # type: ignore[arg-type]
