"""A long-lived worker for the replaced-file tests: one Runner on a SQLite store, driven by stdin.

    python sqlite_file_worker.py STORE_PATH EFFECTS_PATH

Each stdin line is a conversation id; the worker sends one `send_invoice` write in it (the effect: one row in
EFFECTS_PATH, a file of its own) and prints the envelope as one JSON line.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import Any

import toolproof


def main(store_path: str, effects_path: str) -> None:
    effects = sqlite3.connect(effects_path, isolation_level=None, timeout=30)
    effects.execute("CREATE TABLE IF NOT EXISTS invoices (conversation TEXT)")

    @toolproof.tool(effect="write", idempotent=False)
    def send_invoice(amount_rs: int, ctx: toolproof.CallContext) -> dict[str, Any]:
        """Send one invoice (no unique key of its own: a second send bills twice).

        Args:
            amount_rs: Amount in rupees.
        """
        effects.execute("INSERT INTO invoices VALUES (?)", (ctx.conversation_id,))
        return {"amount_rs": amount_rs}

    runner = toolproof.Runner(toolproof.Toolset([send_invoice]), store=f"sqlite:///{store_path}")
    for line in sys.stdin:
        context = toolproof.CallContext(conversation_id=line.strip(), principal="B-17")
        print(runner.call_sync("send_invoice", {"amount_rs": 100}, context=context).to_json(), flush=True)
    runner.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
