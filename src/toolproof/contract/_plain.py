"""Plain JSON: what every envelope is made of, whatever a caller sends or a tool returns.

`plain_json` turns a Python value into dicts, lists, str, int, float, bool and None, or says why it cannot:
subclasses (a `str` subclass, an `IntEnum`, `numpy.float64`) become their base type, tuples become lists,
values pydantic knows how to dump (datetime, UUID, Decimal, sets, dataclasses, models) become their JSON
form. What JSON cannot carry (NaN, infinities, integers of more than 4,000 digits, cycles or nesting deeper
than `MAX_DEPTH`, keys that are not text, other objects) raises `NotPlainJson`, naming where. A value that
is already plain is returned as it is (no copy).

Text: JSON text can escape a lone surrogate, but no UTF-8 wire can carry one. `surrogates="replace"` turns
them into U+FFFD (results: shown, never used as identity); `"refuse"` raises (arguments: a handler gets
exactly what was sent, or an error).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic_core import PydanticSerializationError, to_jsonable_python

MAX_DEPTH: Final = 256
MAX_INT_BITS: Final = 13_000  # about 3,900 decimal digits: Python refuses to print more than 4,300

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_EXACT: Final = frozenset({str, int, float, bool, type(None)})

Surrogates = Literal["replace", "refuse"]


class NotPlainJson(ValueError):
    """A value JSON cannot carry: `what` it is and `path` (a list of keys and indexes) to where it is."""

    def __init__(self, what: str, path: tuple[Any, ...]) -> None:
        self.what = what
        self.path = path
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        super().__init__(f"{what} at {where}" if where else what)


def plain_json(value: Any, *, surrogates: Surrogates = "replace", copy: bool = False) -> Any:
    """`value` as plain JSON data (see the module docstring); raises `NotPlainJson`. `copy`: new lists and
    dicts throughout (a snapshot the caller's later changes cannot reach), not only where something changed."""
    if _plain_scalar(value):  # a float result: 0.35 -> 0.11 µs a call (timeit, this machine)
        return value
    return _Plain(surrogates, copy).value(value, (), set())


def _plain_scalar(value: Any) -> bool:
    """True for the common results that are plain as they are: skips building a walker."""
    kind = type(value)
    if kind is float:
        return bool(math.isfinite(value))
    if kind is str:
        return bool(value.isascii())
    if kind is int:
        return bool(value.bit_length() <= MAX_INT_BITS)
    return kind is bool or value is None


class _Plain:
    __slots__ = ("copy", "refuse")

    def __init__(self, surrogates: Surrogates, copy: bool = False) -> None:
        self.refuse = surrogates == "refuse"
        self.copy = copy

    def value(self, value: Any, path: tuple[Any, ...], seen: set[int]) -> Any:
        kind = type(value)
        if kind in _EXACT:
            return self.scalar(value, path)
        if isinstance(value, Mapping | list | tuple):
            return self.container(value, path, seen)
        if isinstance(value, bool):  # numpy.bool_ is not a bool; a bool subclass cannot exist
            return bool(value)
        if isinstance(value, str):
            return self.scalar(str.__str__(value), path)
        if isinstance(value, numbers.Integral):
            return self.scalar(int(value), path)
        if isinstance(value, numbers.Real):
            return self.scalar(float(value), path)
        if type(value).__module__ == "numpy" and hasattr(value, "item"):  # numpy.bool_ and friends
            return self.value(value.item(), path, seen)
        try:
            dumped = to_jsonable_python(value)
        except (PydanticSerializationError, TypeError, ValueError, RecursionError):
            raise NotPlainJson(f"a value of type {type(value).__name__}", path) from None
        return self.value(dumped, path, seen)

    def scalar(self, value: Any, path: tuple[Any, ...]) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value, path)
        if kind is float and not math.isfinite(value):
            raise NotPlainJson(f"a number JSON cannot carry ({value})", path)
        if kind is int and value.bit_length() > MAX_INT_BITS:
            raise NotPlainJson("an integer of more than 3,900 digits", path)
        return value

    def text(self, value: str, path: tuple[Any, ...]) -> str:
        if value.isascii() or not _SURROGATE.search(value):
            return value
        if self.refuse:
            raise NotPlainJson("text with a lone surrogate, which is not Unicode", path)
        return _SURROGATE.sub("\ufffd", value)

    def container(self, value: Any, path: tuple[Any, ...], seen: set[int]) -> Any:
        if len(path) >= MAX_DEPTH or id(value) in seen:
            raise NotPlainJson(f"a cycle, or nesting deeper than {MAX_DEPTH} levels", path)
        seen.add(id(value))
        try:
            if isinstance(value, Mapping):
                return self.mapping(value, path, seen)
            items = [self.value(item, (*path, i), seen) for i, item in enumerate(value)]
        finally:
            seen.discard(id(value))
        if not self.copy and type(value) is list and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items

    def mapping(self, value: Mapping[Any, Any], path: tuple[Any, ...], seen: set[int]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        same = type(value) is dict and not self.copy
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotPlainJson(f"an object key of type {type(key).__name__} (keys are text)", path)
            name = self.text(str.__str__(key) if type(key) is not str else key, path)
            plain = self.value(item, (*path, name), seen)
            same = same and name is key and plain is item
            out[name] = plain
        return value if same else out  # type: ignore[return-value]
