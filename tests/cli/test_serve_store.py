"""`toolproof serve` with a store it cannot open: one clear error line and exit 2, never a traceback."""

from __future__ import annotations

import socket

from tests.cli._run import toolproof_cli


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_with_an_unreachable_postgresql_store_says_so_and_exits_2() -> None:
    url = f"postgresql://toolproof:hunter2-secret@127.0.0.1:{closed_port()}/shop"
    proc = toolproof_cli("serve", "toolproof.examples.wholesaler:toolset", "--store", url, code=2)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert proc.stderr.startswith("error: cannot open store postgresql://toolproof:***@127.0.0.1")
    assert "OperationalError" in proc.stderr and "hunter2-secret" not in proc.stderr
