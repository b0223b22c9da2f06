"""`toolproof examples [DIR]`: copy the files the docs name out of the installed package into a folder, so
the docs' `eval` and `diff` commands run after a plain `pip install toolproof`, without a source checkout.

Files already in DIR are kept as they are (a case set being edited is never overwritten)."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Final

import typer

from ._options import fail, plural, say

#: The packages whose data files are copied, and which of their files: (package, suffixes).
SHIPPED: Final = (
    ("toolproof.examples.wholesaler.cases", (".yaml", ".jsonl")),
    ("toolproof.examples.versions", (".json",)),
)
DEFAULT_DIR: Final = Path("toolproof-examples")


def shipped_files() -> list[Traversable]:
    """The example data files in the installed package, sorted by name (names are unique across packages)."""
    found = [f for package, suffixes in SHIPPED for f in files(package).iterdir()
             if f.is_file() and f.name.endswith(suffixes)]
    return sorted(found, key=lambda f: f.name)


def examples_cmd(
    directory: Annotated[Path, typer.Argument(help="Folder to copy into (created if missing).")] = DEFAULT_DIR,
) -> None:
    """Copy the example files (the wholesaler's eval cases and recorded model outputs, two versions of a
    toolset for `diff`) into DIR, to run the docs' commands on and to edit."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail(f"cannot create {directory}: {exc}") from None
    copied, kept = [], []
    for source in shipped_files():
        target = directory / source.name
        if target.exists():
            kept.append(source.name)
            continue
        try:
            target.write_bytes(source.read_bytes())
        except OSError as exc:
            raise fail(f"cannot write {target}: {exc}") from None
        copied.append(source.name)
    if copied:
        say(f"copied {plural(len(copied), 'file', 'files')} to {directory}: {', '.join(copied)}", stderr=True)
    if kept:
        say(f"kept {plural(len(kept), 'file', 'files')} already in {directory}: {', '.join(kept)}", stderr=True)


def register(app: typer.Typer) -> None:
    app.command("examples")(examples_cmd)
