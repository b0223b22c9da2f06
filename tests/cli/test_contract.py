"""The CLI's contract commands, run as real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from tests.cli._run import fill, json_lines, toolproof_cli


@pytest.mark.e2e
def test_version() -> None:
    assert toolproof_cli("--version").stdout.startswith("toolproof ")


@pytest.mark.e2e
def test_schema_envelope_is_the_library_schema() -> None:
    from toolproof.contract._envelope import envelope_schema

    assert json.loads(toolproof_cli("schema", "envelope").stdout) == envelope_schema()


@pytest.mark.e2e
def test_classify_http_prints_a_valid_envelope() -> None:
    out = toolproof_cli("classify", "http", "429", "--header", "Retry-After: 12", "--body", "slow down").stdout
    env: dict[str, Any] = json.loads(out)
    from toolproof.contract._envelope import envelope_schema

    assert jsonschema_rs.validator_for(envelope_schema()).is_valid(env)
    assert env["error"]["class"] == "rate_limited"
    assert env["error"]["retry_after_s"] == 12


@pytest.mark.e2e
def test_classify_http_bad_input_is_a_clear_error() -> None:
    proc = toolproof_cli("classify", "http", "99", code=None)
    assert proc.returncode == 2
    assert "status must be" in proc.stderr
    proc = toolproof_cli("classify", "http", "500", "--header", "no-colon", code=None)
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
        proc = toolproof_cli("export", target, code=None)
        assert proc.returncode == 2, target
        assert "Traceback" not in proc.stderr


def test_the_cli_commands_share_one_default_store(tmp_path: Path) -> None:
    """serve/gateway write .toolproof/toolproof.sqlite3 (or $TOOLPROOF_STORE); journal, stops and audit read it."""
    from toolproof.stores import FILE_STORE

    assert FILE_STORE == "sqlite:///.toolproof/toolproof.sqlite3"
    fill(f"sqlite:///{tmp_path / '.toolproof' / 'toolproof.sqlite3'}")
    assert len(json_lines(toolproof_cli("stops", "list", "--json", cwd=tmp_path).stdout)) == 2
    elsewhere = tmp_path / "elsewhere.sqlite3"
    fill(f"sqlite:///{elsewhere}")
    env = {"TOOLPROOF_STORE": f"sqlite:///{elsewhere}"}
    assert len(json_lines(toolproof_cli("journal", "list", "--json", cwd=tmp_path, env=env).stdout)) == 2
