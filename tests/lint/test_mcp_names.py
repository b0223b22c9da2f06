"""TP105 follows the MCP 2026-07-28 tool name rule (1 to 128 of A-Z a-z 0-9 _ - .): a planted positive and a
clean negative at each edge; TP106 keeps the stricter OpenAI/Anthropic rule apart."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.lint import LintConfig, lint

CONFIG = LintConfig(select=("TP105", "TP106"))


def _codes(name: Any) -> set[str]:
    definition = {"name": name, "description": "Read one note by its title, e.g. 'groceries'.",
                  "inputSchema": {"type": "object", "properties": {}}}
    return {f.code for f in lint([definition], CONFIG)}


@pytest.mark.parametrize("name", ["get_note", "notes.read", "read-note", "Read_Note.v2", "a", "x" * 128])
def test_a_name_mcp_accepts_is_not_invalid(name: str) -> None:
    assert "TP105" not in _codes(name)


@pytest.mark.parametrize("name", ["", "x" * 129, "read note", "notes/read", "read:note", "überprüfen", "note!"])
def test_a_name_mcp_rejects_is_invalid(name: str) -> None:
    assert "TP105" in _codes(name)


def test_valid_mcp_names_that_model_apis_reject_are_only_not_portable() -> None:
    assert _codes("notes.read") == {"TP106"}  # '.' is MCP, not OpenAI or Anthropic
    assert _codes("x" * 65) == {"TP106"}  # MCP allows 128, the model APIs 64
    assert _codes("x" * 64) == set()


def test_the_fix_says_exactly_what_mcp_accepts() -> None:
    found = [f for f in lint([{"name": "read note", "inputSchema": {"type": "object"}}], CONFIG) if f.code == "TP105"]
    assert [f.fix for f in found] == ["Use 1 to 128 of A-Z a-z 0-9 _ - ."]
    from toolproof.lint import rule_by_key

    rule = rule_by_key("TP105")
    assert rule is not None and rule.fix == "Use 1 to 128 of A-Z a-z 0-9 _ - ."


def test_a_trailing_newline_is_not_a_valid_name() -> None:
    """`$` matches before a final newline; the name rule must not."""
    assert "TP105" in _codes("get_note\n")
    assert "TP105" not in _codes("get_note")
