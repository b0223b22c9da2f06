"""`@value`, the one generated constructor: for every value type it builds what the dataclass would build."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolproof import AuditRecord, CallContext, Envelope, Meta, StopRecord
from toolproof.contract._values import value
from toolproof.lint import Finding

VALUES = [Meta, Envelope, CallContext, AuditRecord, StopRecord, Finding]


def _reference(cls: type[Any], **given: Any) -> Any:
    """What the dataclass's own `__init__` does: every field set, missing ones from their defaults."""
    obj = object.__new__(cls)
    for f in dataclasses.fields(cls):
        if f.name in given:
            got = given[f.name]
        elif f.default is not dataclasses.MISSING:
            got = f.default
        else:
            assert f.default_factory is not dataclasses.MISSING, f.name
            got = f.default_factory()
        object.__setattr__(obj, f.name, got)
    return obj


def _required(cls: type[Any]) -> dict[str, Any]:
    return {f.name: f"v-{f.name}" for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


@pytest.mark.parametrize("cls", VALUES, ids=lambda c: c.__name__)
def test_the_generated_constructor_builds_what_the_dataclass_builds(cls: type[Any]) -> None:
    given = _required(cls)
    built = cls(**given)
    assert built == _reference(cls, **given)
    every = {f.name: f"w-{f.name}" for f in dataclasses.fields(cls)}
    assert cls(**every) == _reference(cls, **every)
    assert cls(*every.values()) == cls(**every)  # positionally, in field order
    first = dataclasses.fields(cls)[0].name
    assert dataclasses.replace(built, **{first: "changed"}) == _reference(cls, **{**given, first: "changed"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.__setattr__(first, "x")
    with pytest.raises(TypeError):
        cls(**given, not_a_field=1)


def test_default_factories_are_called_per_instance() -> None:
    assert Meta("t", "c").extra == {} and Meta("t", "c").extra is not None
    assert CallContext().metadata == {}


def test_only_frozen_slotted_dataclasses_take_it() -> None:
    @dataclasses.dataclass
    class Loose:
        x: int

    with pytest.raises(TypeError, match="frozen, slotted"):
        value(Loose)
