"""What a scenario sends: given arguments, else the first example, else the schema's smallest valid call; the
changed call changes an amount first and never an id or an operation key."""

from __future__ import annotations

from toolproof.chaos._arguments import arguments_for, changed, sample

SCHEMA = {"type": "object", "required": ["order_id", "crop", "kg", "express"],
          "properties": {"order_id": {"type": "integer", "minimum": 1}, "crop": {"enum": ["onion", "jeera"]},
                         "kg": {"type": "number", "minimum": 10, "maximum": 10}, "express": {"type": "boolean"},
                         "note": {"type": "string"}}}


def test_given_then_example_then_schema() -> None:
    assert arguments_for(SCHEMA, [{"crop": "jeera"}], {"kg": 3}) == {"kg": 3}
    assert arguments_for(SCHEMA, [{"crop": "jeera"}]) == {"crop": "jeera"}
    assert arguments_for(SCHEMA) == {"order_id": 1, "crop": "onion", "kg": 10, "express": False}


def test_an_amount_changes_first_within_its_bounds_and_ids_and_operation_keys_never() -> None:
    args = arguments_for(SCHEMA)
    assert changed(SCHEMA, args) == ("kg", {**args, "kg": 9})  # 11 would pass the maximum
    assert changed(SCHEMA, args, operation_keys=["kg"]) == ("crop", {**args, "crop": "jeera"})
    assert changed(SCHEMA, {"order_id": 7}) is None


def test_the_smallest_value_of_an_output_schema_follows_its_refs_and_nests() -> None:
    schema = {"$defs": {"Crop": {"enum": ["onion", "jeera"], "type": "string"}},
              "type": "object", "required": ["crop", "lines", "ship"],
              "properties": {"crop": {"$ref": "#/$defs/Crop"}, "note": {"type": "string"},
                             "lines": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 3}},
                             "ship": {"anyOf": [{"type": "null"}, {"type": "string"}]}}}
    assert sample(schema) == {"crop": "onion", "lines": [3], "ship": None}
