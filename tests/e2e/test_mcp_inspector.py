"""A client no one here wrote: the MCP Inspector's CLI mode (TypeScript SDK) lists and calls the tools of
`toolproof serve`, over stdio. The Inspector is pinned in `tests/e2e/inspector/package.json`; the test
installs it with `npm ci` when `node_modules` is missing (CI starts from a clean clone)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_servers.harness import PY, REPO_ROOT, child_env

pytestmark = pytest.mark.timeout(300)
HERE = Path(__file__).resolve().parent / "inspector"
BIN = HERE / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture(scope="module")
def inspector() -> Path:
    if not BIN.exists():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed for the MCP Inspector test (Node is part of the test setup)"
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True,
                              timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
    return BIN


def run_inspector(binary: Path, *args: str) -> tuple[int, str, str]:
    env = child_env()
    done = subprocess.run(
        [str(binary), "--cli", "-e", f"PYTHONPATH={env['PYTHONPATH']}",
         PY, "-m", "toolproof", "serve", "toolproof.examples.wholesaler:toolset", *args],
        cwd=REPO_ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=90,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout, done.stderr


def _json(text: str) -> Any:
    return json.loads(text[text.index("{"):])


def test_the_inspector_lists_the_tools_with_their_schemas(inspector: Path) -> None:
    code, out, err = run_inspector(inspector, "--method", "tools/list")
    assert code == 0, err
    tools = {t["name"]: t for t in _json(out)["tools"]}
    assert set(tools) == {"get_today_price", "get_price_history", "check_stock", "place_order", "get_order_status",
                          "cancel_order"}
    assert tools["place_order"]["inputSchema"]["additionalProperties"] is False
    assert tools["place_order"]["annotations"]["destructiveHint"] is True


def test_the_inspector_calls_a_tool_and_gets_the_envelope(inspector: Path) -> None:
    code, out, err = run_inspector(inspector, "--method", "tools/call", "--tool-name", "get_today_price",
                                   "--tool-arg", "crop=onion")
    assert code == 0, err
    result = _json(out)
    assert result["isError"] is False
    assert result["structuredContent"]["ok"] is True
    assert result["structuredContent"]["result"]["crop"] == "onion"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_the_inspector_accepts_a_tool_error_envelope(inspector: Path) -> None:
    code, out, err = run_inspector(inspector, "--method", "tools/call", "--tool-name", "get_today_price",
                                   "--tool-arg", "crop=mango")
    assert code == 0, err
    result = _json(out)
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert (error["class"], error["field"], error["next_action"]) == ("invalid_argument", "crop", "repair")
