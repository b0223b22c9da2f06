"""@tool turns typed functions into strict definitions; bad definitions fail at definition time."""

from __future__ import annotations

import enum
from datetime import date, datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

import toolproof
from tests._schemas import object_schemas
from toolproof import CallContext, DefinitionError


class Unit(enum.Enum):
    KG = "kg"
    QUINTAL = "quintal"


class Line(BaseModel):
    crop: Literal["onion", "jeera"]
    quantity_kg: float = Field(ge=1, description="Kilograms.")




def _has_key(schema: Any, key: str, *, skip_property_names: bool = True) -> bool:
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k == key:
                return True
            if k == "properties" and skip_property_names:
                if any(_has_key(p, key) for p in v.values()):
                    return True
            elif _has_key(v, key):
                return True
    elif isinstance(schema, list):
        return any(_has_key(v, key) for v in schema)
    return False


@toolproof.tool(effect="write", operation_keys=["lines", "deliver_on"])
def book(
    lines: list[Line],
    deliver_on: date,
    unit: Unit,
    ctx: CallContext,
    note: Annotated[str, Field(max_length=200)] = "",
    title: str = "none",
    slot: datetime | None = None,
    api_token: Annotated[str, toolproof.Secret] = "",
) -> dict[str, Any]:
    """Book several lines for one delivery day.

    Args:
        lines: The order lines.
        deliver_on: Delivery day.
        unit: The unit the buyer used.
        note: Free text for the driver.
    """
    return {
        "n": len(lines),
        "first": lines[0].crop,
        "day": deliver_on.isoformat(),
        "unit": unit.value,
        "conversation": ctx.conversation_id,
        "slot": slot.isoformat() if slot else None,
    }


def test_strict_schema_shape() -> None:
    schema = book.input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["lines", "deliver_on", "unit"]
    assert "ctx" not in schema["properties"]
    for obj in object_schemas(schema):
        assert obj.get("additionalProperties") is False, obj
    assert not _has_key(schema, "title")  # no pydantic title noise...
    assert "title" in schema["properties"]  # ...but a parameter named title stays
    assert not _has_key(schema, "default")
    assert "$defs" not in schema and not _has_key(schema, "$ref")


def test_enums_formats_descriptions_and_defaults() -> None:
    props = book.input_schema["properties"]
    assert props["unit"]["enum"] == ["kg", "quintal"]
    assert props["deliver_on"]["format"] == "date"
    assert props["lines"]["items"]["properties"]["crop"]["enum"] == ["onion", "jeera"]
    assert props["lines"]["items"]["properties"]["quantity_kg"]["minimum"] == 1
    assert props["note"]["description"] == "Free text for the driver. Default: ."
    assert props["title"]["description"] == "Default: none."
    assert book.description == "Book several lines for one delivery day."
    assert book.secret_fields == frozenset({"api_token"})
    assert book.operation_keys == ("lines", "deliver_on")


def test_conversion_and_injection() -> None:
    runner = toolproof.Runner(toolproof.Toolset([book]))
    env = runner.call_sync(
        "book",
        {"lines": [{"crop": "jeera", "quantity_kg": 2}], "deliver_on": "2026-10-23", "unit": "quintal",
         "slot": "2026-10-23T09:00:00Z"},
        context=CallContext(conversation_id="chat-1"),
    )
    assert env.ok, env.error
    assert env.result == {"n": 1, "first": "jeera", "day": "2026-10-23", "unit": "quintal",
                          "conversation": "chat-1", "slot": "2026-10-23T09:00:00+00:00"}


def test_model_cannot_supply_context_ids() -> None:
    runner = toolproof.Runner(toolproof.Toolset([book]))
    env = runner.call_sync("book", {"lines": [], "deliver_on": "2026-10-23", "unit": "kg", "ctx": {"principal": "x"}})
    assert env.error is not None
    assert env.error.code == "UNEXPECTED_FIELD"


def test_fingerprint_is_stable_and_sensitive() -> None:
    def make(desc: str) -> toolproof.Tool:
        def get_price(crop: Literal["onion"]) -> float:
            return 1.0

        get_price.__doc__ = desc
        return toolproof.tool(effect="read")(get_price)

    assert make("Get a price.").schema_version == make("Get a price.").schema_version
    assert make("Get a price.").schema_version != make("Get the price.").schema_version


def test_idempotent_defaults_follow_effect() -> None:
    def f(x: int) -> int:
        """Doc."""
        return x

    assert toolproof.tool(effect="read")(f).idempotent is True
    assert toolproof.tool(effect="write")(f).idempotent is False
    assert toolproof.tool(effect="write", idempotent=True)(f).idempotent is True


def _untyped(x):  # type: ignore[no-untyped-def]
    """Doc."""


def _no_doc(x: int) -> int:
    return x


def _varargs(*args: int) -> int:
    """Doc."""
    return 0


def _ok(x: int) -> int:
    """Doc."""
    return x


@pytest.mark.parametrize(
    ("fn", "options", "match"),
    [
        (_untyped, {"effect": "read"}, "no type annotation"),
        (_no_doc, {"effect": "read"}, "no description"),
        (_varargs, {"effect": "read"}, r"\*args"),
        (_ok, {}, "effect is required"),
        (_ok, {"effect": "delete"}, "effect is required"),
        (_ok, {"effect": "read", "risk": "medium"}, "risk"),
        (_ok, {"effect": "read", "timeout_s": -1}, "timeout_s"),
        (_ok, {"effect": "read", "name": "bad.name"}, "must match"),
        (_ok, {"effect": "read", "name": "x" * 65}, "must match"),
        (_ok, {"effect": "write", "operation_keys": ["y"]}, "unknown parameters"),
        (_ok, {"effect": "read", "examples": [{"x": "not an int"}]}, "example"),
    ],
)
def test_definition_errors(fn: Any, options: dict[str, Any], match: str) -> None:
    with pytest.raises(DefinitionError, match=match):
        toolproof.tool(**options)(fn)


def test_from_schema_tool_gets_arguments_and_context() -> None:
    seen: list[Any] = []

    def handler(arguments: dict[str, Any], context: CallContext) -> Any:
        seen.append((arguments, context.principal))
        return {"echo": arguments["q"]}

    echo = toolproof.Tool.from_schema(
        "echo_text", "Echo text back.", {"type": "object", "properties": {"q": {"type": "string"}},
                                         "required": ["q"]},
        handler, effect="read",
    )
    runner = toolproof.Runner(toolproof.Toolset([echo]))
    assert runner.call_sync("echo_text", {"q": "hé"}, context=CallContext(principal="p")).result == {"echo": "hé"}
    assert seen == [({"q": "hé"}, "p")]
    assert runner.call_sync("echo_text", {"q": 1}).error_class == "invalid_argument"
    assert seen == [({"q": "hé"}, "p")]  # bad arguments never reach the handler


def test_from_schema_rejects_non_object_schema() -> None:
    with pytest.raises(DefinitionError):
        toolproof.Tool.from_schema("x_y", "d", {"type": "array"}, lambda a, c: None, effect="read")


def test_null_for_optional_means_not_given() -> None:
    runner = toolproof.Runner(toolproof.Toolset([book]))
    env = runner.call_sync("book", {"lines": [{"crop": "onion", "quantity_kg": 5}], "deliver_on": "2026-10-23",
                                    "unit": "kg", "note": None, "slot": None})
    assert env.ok, env.error


def test_a_misspelt_tool_option_is_refused_where_it_is_written() -> None:
    import pytest

    import toolproof

    with pytest.raises(TypeError, match="timeout"):
        toolproof.tool(effect="read", timeout=3)  # type: ignore[call-overload]
