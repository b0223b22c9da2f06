"""`toolproof journal ...` on a real SQLite journal that a Runner wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import toolproof
from tests._data import REPO_ROOT
from toolproof.cli import app


def _unknown_write(url: str) -> str:
    @toolproof.tool(effect="write")
    def send_invoice(amount_rs: int) -> dict[str, int]:
        """Send one invoice; the reply is lost.

        Args:
            amount_rs: Amount in rupees.
        """
        raise TimeoutError

    runner = toolproof.Runner(toolproof.Toolset([send_invoice]), store=url)
    env = runner.call_sync("send_invoice", {"amount_rs": 5}, context=toolproof.CallContext(conversation_id="c"))
    runner.close()
    assert env.error is not None and env.error.idempotency_key is not None
    return env.error.idempotency_key


def test_list_show_resolve_prune(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.sqlite3'}"
    key = _unknown_write(url)
    cli = CliRunner()

    out = cli.invoke(app, ["journal", "list", "--status", "unknown", "--json", "--store", url])
    assert out.exit_code == 0, out.output
    assert [r["key"] for r in json.loads(out.output)] == [key]
    table = cli.invoke(app, ["journal", "list", "--store", url])
    assert table.exit_code == 0 and "1 entry" in table.output

    shown = cli.invoke(app, ["journal", "show", key, "--store", url])
    assert shown.exit_code == 0 and json.loads(shown.output)["status"] == "unknown"

    resolved = cli.invoke(app, ["journal", "resolve", key, "--done", "--result", '{"invoice_id": 9}', "--note",
                                "found in billing", "--store", url])
    assert resolved.exit_code == 0, resolved.output
    body: dict[str, Any] = json.loads(resolved.output)
    assert body["status"] == "done" and body["resolution"] == "found in billing"
    assert body["outcome"]["result"] == {"invoice_id": 9}

    kept = cli.invoke(app, ["journal", "prune", "--store", url])
    assert kept.exit_code == 0 and "pruned 0 entries" in kept.output
    pruned = cli.invoke(app, ["journal", "prune", "--older-than", "0s", "--store", url])
    assert pruned.exit_code == 0 and "pruned 1 entry" in pruned.output


def test_resolve_not_done_and_errors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.sqlite3'}"
    key = _unknown_write(url)
    cli = CliRunner()
    assert cli.invoke(app, ["journal", "resolve", key, "--store", url]).exit_code == 2
    assert cli.invoke(app, ["journal", "resolve", key, "--not-done", "--result", "1", "--store", url]).exit_code == 2
    assert cli.invoke(app, ["journal", "resolve", key, "--done", "--result", "{bad", "--store", url]).exit_code == 2
    ok = cli.invoke(app, ["journal", "resolve", key, "--not-done", "--store", url])
    assert ok.exit_code == 0, ok.output
    assert cli.invoke(app, ["journal", "show", key, "--store", url]).exit_code == 1
    assert cli.invoke(app, ["journal", "resolve", key, "--done", "--store", url]).exit_code == 1
    assert cli.invoke(app, ["journal", "list", "--status", "bogus", "--store", url]).exit_code == 2
    assert cli.invoke(app, ["journal", "prune", "--older-than", "soon", "--store", url]).exit_code == 2
    assert cli.invoke(app, ["journal", "list", "--store", "redis://x"]).exit_code == 2


@pytest.mark.e2e
def test_store_from_environment_in_a_real_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.sqlite3'}"
    key = _unknown_write(url)
    env = {"TOOLPROOF_STORE": url, "PYTHONPATH": f"{REPO_ROOT / 'src'}:{REPO_ROOT}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "toolproof", "journal", "list", "--status", "unknown", "--json"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [r["key"] for r in json.loads(proc.stdout)] == [key]
