"""`ToolOptions` is the one list of a tool's options: every way to build a tool takes exactly it."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

import pytest

import toolproof
from toolproof import Tool, ToolOptions
from toolproof.contract._validate import Limits

#: A value for every option that differs from its default, and what the built tool then shows.
NON_DEFAULT: dict[str, Any] = {
    "idempotent": True,
    "risk": "high",
    "timeout_s": 2.5,
    "group": "orders",
    "operation_keys": ["sku"],
    "examples": [{"sku": "A-1"}],
    "secret_fields": ["sku"],
    "fallback": "peek",
    "upstream": "shop",
    "open_world": True,
    "title": "Place it",
    "limits": Limits(max_string_chars=3),
    "approval": "always",
    "verify": lambda sku: sku,
}
SHOWN: dict[str, Any] = {
    "operation_keys": ("sku",),
    "examples": ({"sku": "A-1"},),
    "secret_fields": frozenset({"sku"}),
}


def place(sku: str) -> str:
    """Place an order for one SKU; returns the order id."""
    return sku


def test_the_table_names_every_option() -> None:
    assert set(NON_DEFAULT) == set(ToolOptions.__optional_keys__)


def _built(how: str, **options: Any) -> Tool:
    if how == "decorator":
        return toolproof.tool(effect="write", **options)(place)
    if how == "from_function":
        return Tool.from_function(place, effect="write", **options)
    schema = {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"],
              "additionalProperties": False}
    return Tool.from_schema("place", "Place an order.", schema, lambda a, c: a, effect="write", **options)


@pytest.mark.parametrize("how", ["decorator", "from_function", "from_schema"])
def test_every_option_reaches_the_tool_by_every_way(how: str) -> None:
    tool = _built(how, **NON_DEFAULT)
    fields = {f.name for f in dataclasses.fields(Tool)}
    for key, value in NON_DEFAULT.items():
        if key == "limits":  # not a field: it shapes the validator
            tool.parse_arguments({"sku": "A-1"})
            with pytest.raises(toolproof.InvalidArgument):
                tool.parse_arguments({"sku": "A-12"})
            continue
        assert key in fields, key
        assert getattr(tool, key) == SHOWN.get(key, value), key


@pytest.mark.parametrize("how", ["decorator", "from_function", "from_schema"])
def test_defaults_are_the_same_by_every_way(how: str) -> None:
    tool = _built(how)
    assert (tool.idempotent, tool.risk, tool.timeout_s, tool.group, tool.operation_keys, tool.examples) == (
        False, "low", None, None, None, ())
    assert (tool.fallback, tool.upstream, tool.open_world, tool.title, tool.approval) == (
        None, None, False, "Place", None)
    assert tool.secret_fields == frozenset()


@pytest.mark.parametrize("how", ["decorator", "from_function", "from_schema"])
def test_an_unknown_option_is_a_type_error_naming_it(how: str) -> None:
    with pytest.raises(TypeError, match="verfy"):
        _built(how, verfy=lambda: None)


def test_the_decorator_refuses_an_unknown_option_before_it_sees_a_function() -> None:
    with pytest.raises(TypeError, match="retries"):
        toolproof.tool(effect="read", retries=3)  # type: ignore[call-overload]


def test_the_signatures_take_the_options_as_one_typed_value() -> None:
    for fn in (Tool.from_function, Tool.from_schema):
        kwargs = inspect.signature(fn).parameters["options"]
        assert kwargs.kind is inspect.Parameter.VAR_KEYWORD
        hint = typing.get_type_hints(fn)["options"]
        assert typing.get_args(hint) == (ToolOptions,)
