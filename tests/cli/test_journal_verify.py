"""`toolproof journal verify` as a real subprocess: unknown entries a Runner left in a real SQLite journal are
settled by the tools' verify hooks, read off the shop's real SQLite file."""

from __future__ import annotations

import time
from pathlib import Path

from tests.cli._run import json_lines, toolproof_cli
from tests.pipeline.test_verify import ORDER, Shop, toolset
from toolproof import CallContext, Runner
from toolproof.stores import SqliteStore


def _unknowns(shop: Shop, journal: Path) -> tuple[str, str]:
    """Two writes left unknown (their verify could not tell): one that committed, one that never did."""
    shop.after_s, shop.verify_raises = 0.3, True
    with Runner(toolset(shop), store=SqliteStore(journal), lease_s=0.5) as runner:
        committed = runner.call_sync("place_order", ORDER, context=CallContext(conversation_id="c1"))
        shop.commit = False
        lost = runner.call_sync("place_order", ORDER, context=CallContext(conversation_id="c2"))
    keys = committed.error and committed.error.idempotency_key, lost.error and lost.error.idempotency_key
    assert keys[0] and keys[1], (committed.to_dict(), lost.to_dict())
    time.sleep(0.6)  # both attempts have ended, and so have their leases
    return keys[0], keys[1]


def test_verify_all_settles_done_and_not_done(tmp_path: Path) -> None:
    shop, journal = Shop(tmp_path / "shop.db"), tmp_path / "j.db"
    done_key, lost_key = _unknowns(shop, journal)
    url, env = f"sqlite:///{journal}", {"VERIFY_SHOP": str(shop.path)}
    rows = json_lines(toolproof_cli("journal", "verify", "--all", "--toolset", "tests.cli.verify_shop:tools",
                                    "--json", "--store", url, env=env).stdout)
    assert {r["key"]: r["said"] for r in rows} == {done_key: "done", lost_key: "not_done"}
    (entry,) = json_lines(toolproof_cli("journal", "show", done_key, "--json", "--store", url).stdout)
    assert entry["status"] == "done" and entry["outcome"]["result"]["sku"] == "A-1"
    assert entry["resolution"].startswith("verified")
    toolproof_cli("journal", "show", lost_key, "--store", url, code=1)  # released: the next call sends it
    assert len(shop.rows()) == 1
    again = toolproof_cli("journal", "verify", done_key, "--toolset", "tests.cli.verify_shop:tools", "--store",
                          url, env=env, code=1)
    assert "is done, not unknown" in again.stderr
    text = toolproof_cli("journal", "verify", "--all", "--toolset", "tests.cli.verify_shop:tools", "--store", url,
                         env=env).stdout
    assert "0 unknown entries verified" in text


def test_bad_input_is_exit_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}"
    SqliteStore(tmp_path / "j.db").close()
    for args in (["verify", "--toolset", "tests.cli.verify_shop:tools"], ["verify", "k", "--all", "--toolset", "x:y"],
                 ["verify", "--all"]):
        proc = toolproof_cli("journal", *args, "--store", url, env={"VERIFY_SHOP": str(tmp_path / "s.db")}, code=2)
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


def test_list_says_which_unknown_entries_verify_can_ask(tmp_path: Path) -> None:
    shop, journal = Shop(tmp_path / "shop.db"), tmp_path / "j.db"
    done_key, lost_key = _unknowns(shop, journal)
    url, env = f"sqlite:///{journal}", {"VERIFY_SHOP": str(shop.path)}
    rows = json_lines(toolproof_cli("journal", "list", "--status", "unknown", "--toolset",
                                    "tests.cli.verify_shop:tools", "--json", "--store", url, env=env).stdout)
    assert {r["key"]: r["verify"] for r in rows} == {done_key: "available", lost_key: "available"}
    table = toolproof_cli("journal", "list", "--toolset", "tests.cli.verify_shop:tools", "--store", url,
                          env=env).stdout
    assert "verify" in table.splitlines()[1] and table.count("available") == 2
    plain = json_lines(toolproof_cli("journal", "list", "--json", "--store", url).stdout)
    assert len(plain) == 2 and all("verify" not in r for r in plain)  # without --toolset: as before
    other = json_lines(toolproof_cli("journal", "list", "--json", "--toolset", "tests.inbox._toolset:payments_desk",
                                     "--store", url).stdout)
    assert all(r["verify"] == "the toolset has no tool 'place_order'" for r in other)
