"""The schema walk (`schema_walk.walk`): every sub-schema under every key that holds one, leaves included."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.lint._schema_walk import walk

LEAF: dict[str, Any] = {"type": "string", "description": "a leaf"}


@pytest.mark.parametrize(("key", "value", "pointer"), [
    ("properties", {"a/b": LEAF}, "/s/properties/a~1b"),
    ("items", LEAF, "/s/items"),
    ("items", [LEAF], "/s/items/0"),
    ("anyOf", [LEAF], "/s/anyOf/0"),
    ("oneOf", [LEAF], "/s/oneOf/0"),
    ("allOf", [LEAF], "/s/allOf/0"),
    ("additionalProperties", LEAF, "/s/additionalProperties"),
    ("$defs", {"x": LEAF}, "/s/$defs/x"),
    ("definitions", {"x": LEAF}, "/s/definitions/x"),
])
def test_a_sub_schema_under_any_parent_key_is_walked(key: str, value: Any, pointer: str) -> None:
    nodes = walk({"type": "object", key: value}, "/s")
    assert [n.pointer for n in nodes] == ["/s", pointer]
    assert nodes[1].description == "a leaf" and nodes[1].types == {"string"}
    assert walk({"type": "object", "properties": {"p": {key: value}}}, "/s")[-1].pointer == pointer.replace(
        "/s", "/s/properties/p", 1)


def test_nodes_come_in_document_order_and_share_their_type_sets() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": LEAF}}, "c": LEAF}}
    nodes = walk(schema, "")
    assert [n.pointer for n in nodes] == ["", "/properties/a", "/properties/a/properties/b", "/properties/c"]
    assert nodes[2].types is nodes[3].types
    assert [n.depth for n in nodes] == [0, 1, 2, 1]
