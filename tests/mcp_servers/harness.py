"""How the MCP tests start real servers: `python -m toolproof ...` and the test servers as subprocesses.

Subprocesses get `PYTHONPATH` with this checkout's `src` and root and run from the repo root, so the tests
work from any clone without installing the package. The MCP SDK's stdio client passes only a minimal
environment to children, so everything a child needs is passed explicitly.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters

from toolproof.mcp import Upstream

REPO_ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
TIME_SERVER = (PY, "-m", "mcp_server_time", "--local-timezone", "UTC")


def child_env(**extra: str) -> dict[str, str]:
    paths = [str(REPO_ROOT / "src"), str(REPO_ROOT)]
    old = os.environ.get("PYTHONPATH")
    if old:
        paths.append(old)
    # Children keep their journal in memory unless a test says otherwise (the CLI default is a file in the repo).
    return {"PYTHONPATH": os.pathsep.join(paths), "PYTHONUNBUFFERED": "1", "TOOLPROOF_STORE": "memory://", **extra}


def misbehaving_command(name: str = "odd") -> tuple[str, ...]:
    return (PY, "-m", "tests.mcp_servers.misbehaving", "--name", name)


def misbehaving(name: str = "odd", log: Path | None = None, **options: Any) -> Upstream:
    env = child_env(**({"MISBEHAVE_LOG": str(log)} if log is not None else {}))
    return Upstream(name=name, command=misbehaving_command(name), env=env, cwd=str(REPO_ROOT), **options)


def toolproof_stdio(*args: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(command=PY, args=["-m", "toolproof", *args], env=child_env(**env), cwd=str(REPO_ROOT))


def dispatches(log: Path, tool: str | None = None) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if tool is None or r["tool"] == tool]


@asynccontextmanager
async def http_server(*args: str, timeout_s: float = 30.0, env: dict[str, str] | None = None) -> AsyncIterator[str]:
    """Run `python -m toolproof ARGS --http --port 0`, yield its URL, terminate it afterwards."""
    proc = await asyncio.create_subprocess_exec(
        PY, "-m", "toolproof", *args, "--http", "--host", "127.0.0.1", "--port", "0",
        cwd=REPO_ROOT, env={**os.environ, **child_env(), **(env or {})},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        url = None
        async with asyncio.timeout(timeout_s):
            while url is None:
                line = (await proc.stderr.readline()).decode(errors="replace")
                if not line:
                    raise RuntimeError(f"server exited early: {''.join(seen)}")
                seen.append(line)
                found = re.search(r"serving MCP on (\S+)", line)
                url = found.group(1) if found else None
        drain = asyncio.create_task(proc.stderr.read())
        yield url
        drain.cancel()
    finally:
        await terminate(proc)


async def terminate(proc: asyncio.subprocess.Process) -> None:
    """Stop a child: SIGTERM, then SIGKILL after 10 s."""
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
