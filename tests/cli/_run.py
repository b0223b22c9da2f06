"""Run `toolproof` as a real subprocess, off a terminal (as in CI), isolated from the user's TOOLPROOF_* settings,
and fill real stores with real calls for it to read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import toolproof
from tests._data import REPO_ROOT
from toolproof.contract._errors import AuthFailed

SECRET = "tok-0123456789abcdef"


def toolproof_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                  code: int | None = 0) -> subprocess.CompletedProcess[str]:
    """`python -m toolproof ARGS`; asserts the exit code unless `code` is None."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_") and k != "COLUMNS"}
    base["PYTHONPATH"] = f"{REPO_ROOT / 'src'}{os.pathsep}{REPO_ROOT}"
    proc = subprocess.run([sys.executable, "-m", "toolproof", *args], capture_output=True, text=True,
                          cwd=cwd or REPO_ROOT, env={**base, **(env or {})}, timeout=120)
    if code is not None:
        assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def json_lines(text: str) -> list[Any]:
    """Every stdout line must be one JSON value."""
    return [json.loads(line) for line in text.splitlines()]


def bank() -> toolproof.Toolset:
    @toolproof.tool(effect="read")
    def get_account(user: str, api_token: Annotated[str, toolproof.Secret]) -> dict[str, Any]:
        """Get one account's balance from the bank.

        Use it when asked for a balance. Do not use it for payments. Returns the balance.

        Args:
            user: The user name.
            api_token: The bank token.
        """
        if user == "locked":
            raise AuthFailed("The bank refused the token [upstreams.bank].")
        return {"user": user, "balance": 10}

    @toolproof.tool(effect="write")
    def send_invoice(amount_rs: int) -> dict[str, int]:
        """Send one invoice; its reply is lost when the amount is odd.

        Args:
            amount_rs: Amount in rupees.
        """
        if amount_rs % 2:
            raise TimeoutError
        return {"invoice_id": amount_rs}

    return toolproof.Toolset([get_account, send_invoice])


def fill(url: str) -> dict[str, str]:
    """Real calls into the store at `url`: three reads (ok, auth failure -> stop, invalid), one done write and
    one write whose outcome is unknown. Returns their keys and ids."""
    runner = toolproof.Runner(bank(), store=url)
    ctx = toolproof.CallContext(conversation_id="c1")
    runner.call_sync("get_account", {"user": "a", "api_token": SECRET})
    runner.call_sync("get_account", {"user": "locked", "api_token": SECRET})
    runner.call_sync("get_account", {"user": 3, "api_token": SECRET})
    done = runner.call_sync("send_invoice", {"amount_rs": 4}, context=ctx)
    unknown = runner.call_sync("send_invoice", {"amount_rs": 5}, context=ctx)
    runner.close()
    assert done.ok and done.meta.idempotency_key is not None
    assert unknown.error is not None and unknown.error.idempotency_key is not None
    store = toolproof.open_store(url)
    try:
        auth = next(s for s in store.list_stops() if s.code == "AUTH_FAILED")
    finally:
        store.close()
    return {"done": done.meta.idempotency_key, "unknown": unknown.error.idempotency_key, "auth_stop": auth.id}
