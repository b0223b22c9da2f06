"""Schema-walking helpers shared by the definition and export tests."""

from __future__ import annotations

from typing import Any


def object_schemas(schema: Any) -> list[dict[str, Any]]:
    """Every object-typed subschema (anything with `type: object` or `properties`)."""
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found.extend(object_schemas(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(object_schemas(value))
    return found
