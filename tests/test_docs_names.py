"""Every `toolproof.X` the README and the docs name exists where they say, and so does every `Runner.attr`
(or any other root class's attribute) they show in code spans."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import toolproof

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

#: `toolproof.a.b` or `toolproof.a:b` (a command line's `module:attribute`), not inside another dotted name or path.
_NAME = re.compile(r"(?<![\w./-])toolproof(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")
#: A root class's attribute shown in a code span: `Runner.stages`, `Envelope.from_dict(...)`.
_MEMBER = re.compile(r"`(?:toolproof\.)?([A-Z]\w*)\.([A-Za-z_]\w*)")
#: Names that are files, not Python (`toolproof.sqlite3`, `toolproof.lock.json`).
_FILE_SUFFIXES = (".sqlite3", ".json", ".toml")


def _source_strings() -> set[str]:
    """Every string literal of the package: logger names (`toolproof.audit`) and span attributes
    (`toolproof.stop_id`) are names the docs may cite, though nothing imports them."""
    found: set[str] = set()
    for path in (ROOT / "src" / "toolproof").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return found


def _resolves(name: str) -> bool:
    """Import the longest module prefix of `name`, then look up the rest as attributes."""
    dotted, _, attribute = name.partition(":")
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:] + ([attribute] if attribute else []):
            if not hasattr(value, part):
                return False
            value = getattr(value, part)
        return True
    return False


def _named() -> list[tuple[str, str]]:
    return [(path.relative_to(ROOT).as_posix(), m.group(0)) for path in DOCS
            for m in _NAME.finditer(path.read_text(encoding="utf-8"))]


def test_the_docs_name_things() -> None:
    """The scan itself works: it finds the names every reader meets first."""
    names = {name for _, name in _named()}
    assert {"toolproof.Runner", "toolproof.tool", "toolproof.envelope_schema"} <= names


def test_every_toolproof_name_in_the_docs_exists() -> None:
    strings = _source_strings()
    missing = sorted({f"{where}: {name}" for where, name in _named()
                      if not name.endswith(_FILE_SUFFIXES) and name not in strings and not _resolves(name)})
    assert not missing, "the docs name what does not exist:\n" + "\n".join(missing)


def test_every_root_class_member_in_the_docs_exists() -> None:
    missing = []
    for path in DOCS:
        for m in _MEMBER.finditer(path.read_text(encoding="utf-8")):
            owner = getattr(toolproof, m.group(1), None)
            if isinstance(owner, type) and not hasattr(owner, m.group(2)):
                missing.append(f"{path.relative_to(ROOT).as_posix()}: {m.group(1)}.{m.group(2)}")
    assert not missing, "the docs name members that do not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize("name", ["toolproof.Journal", "toolproof.nothing.here", "toolproof.examples.wholesaler:nope"])
def test_a_name_that_does_not_exist_is_caught(name: str) -> None:
    assert not _resolves(name)
