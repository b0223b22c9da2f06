"""The CLI's contract commands, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import jsonschema_rs
import pytest

from tests._data import REPO_ROOT


def toolproof_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'src'}{os.pathsep}{REPO_ROOT}"}
    proc = subprocess.run([sys.executable, "-m", "toolproof", *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          env=env, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.e2e
def test_version() -> None:
    assert toolproof_cli("--version").stdout.startswith("toolproof ")


@pytest.mark.e2e
def test_schema_envelope_is_the_library_schema() -> None:
    from toolproof.contract.envelope import envelope_schema

    assert json.loads(toolproof_cli("schema", "envelope").stdout) == envelope_schema()


@pytest.mark.e2e
def test_classify_http_prints_a_valid_envelope() -> None:
    out = toolproof_cli("classify", "http", "429", "--header", "Retry-After: 12", "--body", "slow down").stdout
    env: dict[str, Any] = json.loads(out)
    from toolproof.contract.envelope import envelope_schema

    assert jsonschema_rs.validator_for(envelope_schema()).is_valid(env)
    assert env["error"]["class"] == "rate_limited"
    assert env["error"]["retry_after_s"] == 12


@pytest.mark.e2e
def test_classify_http_bad_input_is_a_clear_error() -> None:
    proc = toolproof_cli("classify", "http", "99", check=False)
    assert proc.returncode == 2
    assert "status must be" in proc.stderr
    proc = toolproof_cli("classify", "http", "500", "--header", "no-colon", check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


@pytest.mark.e2e
def test_export_formats() -> None:
    for fmt, key in (("mcp", "inputSchema"), ("openai", "function"), ("anthropic", "input_schema")):
        tools = json.loads(toolproof_cli("export", "toolproof.examples.wholesaler:toolset", "--format", fmt).stdout)
        assert len(tools) == 6
        assert all(key in t for t in tools)


@pytest.mark.e2e
def test_export_bad_target() -> None:
    for target in ("nope", "no.such.module:x", "toolproof.examples.wholesaler:missing",
                   "toolproof.examples.wholesaler:CROPS"):
        proc = toolproof_cli("export", target, check=False)
        assert proc.returncode == 2, target
        assert "Traceback" not in proc.stderr


def test_the_cli_commands_share_one_default_store(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolproof.cli._common import DEFAULT_STORE, store_url

    monkeypatch.delenv("TOOLPROOF_STORE", raising=False)
    assert store_url(None) == DEFAULT_STORE == "sqlite:///.toolproof/toolproof.sqlite3"
    monkeypatch.setenv("TOOLPROOF_STORE", "memory://")
    assert store_url(None) == "memory://"
    assert store_url("sqlite:///x.db") == "sqlite:///x.db"
    from toolproof.cli import stops

    assert stops.STORE_OPTION.default == DEFAULT_STORE  # stops and audit read what serve/gateway/journal write
