"""Helpers shared by the CLI modules: loading `MODULE:ATTR` targets and printing JSON."""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

import typer
from rich.console import Console

from ..catalog.toolset import Toolset

#: Where the CLI keeps state when neither --store nor TOOLPROOF_STORE says otherwise: long-running commands
#: (serve, gateway) and the commands that read what they left (stops, audit, journal) agree on one file.
DEFAULT_STORE = "sqlite:///.toolproof/toolproof.sqlite3"

console = Console()
err_console = Console(stderr=True)


def store_url(store: str | None) -> str:
    """--store, else TOOLPROOF_STORE, else the SQLite file in .toolproof/ (created on first use)."""
    return store or os.environ.get("TOOLPROOF_STORE") or DEFAULT_STORE


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


def load_object(target: str) -> Any:
    """Import `package.module:attribute` (the current directory is importable, as with uvicorn)."""
    if ":" not in target:
        raise fail(f"expected MODULE:ATTRIBUTE, got {target!r}")
    module_name, _, attr = target.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise fail(f"cannot import {module_name!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise fail(f"{module_name!r} has no attribute {attr!r}") from None
    return obj


def load_toolset(target: str) -> Toolset:
    obj = load_object(target)
    if callable(obj) and not isinstance(obj, Toolset):
        obj = obj()
    if not isinstance(obj, Toolset):
        raise fail(f"{target!r} is a {type(obj).__name__}, not a toolproof.Toolset")
    return obj


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
