"""`toolproof bench` runs a checkout's benchmarks/ and says clearly when there is no checkout to run."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests._data import REPO_ROOT
from toolproof.cli import _bench as bench_module
from toolproof.cli import app

RUNNER = CliRunner()


def test_help_says_it_needs_a_checkout() -> None:
    result = RUNNER.invoke(app, ["bench", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "Needs a checkout" in " ".join(result.output.split())


def test_outside_a_checkout_it_fails_with_a_clear_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # As installed: the module lives in site-packages, and the current folder is no checkout.
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages" / "toolproof" / "cli"
    site.mkdir(parents=True)
    monkeypatch.setattr(bench_module, "__file__", str(site / "bench.py"))
    monkeypatch.chdir(tmp_path)
    result = RUNNER.invoke(app, ["bench", "--quick"], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "needs a toolproof source checkout" in message and "not part of the installed package" in message


def test_from_a_subfolder_of_the_checkout_it_finds_the_benchmarks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT / "docs")
    assert bench_module._checkout() == REPO_ROOT
    result = RUNNER.invoke(app, ["bench", "--only", "no-such-benchmark"])
    assert result.exit_code == 0, result.output
