"""`toolproof demo`: the wholesaler's ordering agent makes the source article's mistakes and toolproof catches
them, offline, on SQLite files in a folder it names first. The scenes live in `toolproof.examples.wholesaler.demo`
(shipped in the package, so the command works from any folder)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from ._options import console, fail


def _load_demo() -> Any:
    """The example's demo module, imported only when the demo runs (it pulls the evals and rich tables)."""
    try:
        return importlib.import_module("toolproof.examples.wholesaler.demo")
    except ImportError as exc:
        raise fail(f"cannot import the demo (toolproof.examples.wholesaler.demo): {exc}. Is toolproof "
                   "fully installed? Try `pip install --force-reinstall toolproof`.") from None


def demo_cmd(
    directory: Path | None = typer.Option(
        None, "--dir", help="Folder for the demo's SQLite files (default: a new .toolproof/demo-YYYYmmdd-HHMMSS/ "
        "under the current folder). Printed in the first lines. A folder an earlier demo run used starts fresh."),
    live: bool = typer.Option(False, "--live", help="Let a real model play the agent (needs --model)."),
    model: str | None = typer.Option(None, "--model", help="With --live: openai:MODEL, any OpenAI-compatible "
                                     "endpoint (OPENAI_BASE_URL, OPENAI_API_KEY)."),
) -> None:
    """Watch the ordering agent's three failures happen and get caught (offline, a few seconds, any folder)."""
    if live and not model:
        raise fail("--live needs --model, e.g. --model openai:gpt-4.1-mini")
    if model and not live:
        raise fail("--model is only used with --live")
    if model and not model.startswith("openai:"):
        raise fail(f"--live runs the agent through openai:MODEL (any OpenAI-compatible endpoint), got {model!r}")
    module = _load_demo()
    from ..evals._models import ModelError, load_model

    agent_model = None
    if live:
        assert model is not None
        try:
            agent_model = load_model(model)
        except ModelError as exc:
            raise fail(str(exc)) from None
    try:
        # Piped or captured (CI, tests): wide enough for the tables, unless COLUMNS says otherwise.
        out = console if console.is_terminal or "COLUMNS" in os.environ else Console(width=120)
        module.run(directory, console=out, model=agent_model)
    except module.FolderInUse as exc:
        raise fail(str(exc)) from None
    except ModelError as exc:
        reason = str(exc).rstrip(".")
        raise fail(f"the live model failed: {reason}. Is the endpoint reachable (OPENAI_BASE_URL) and the key set "
                   "(OPENAI_API_KEY)? The offline demo runs without --live.", code=1) from None


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
