"""`toolproof demo` end to end: a real subprocess, then its output and the SQLite files it left. The agent is the
demo's scripted model (no model can be reached from CI); everything else is real."""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from toolproof.stores._sqlite import SqliteStore

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)])
    env["COLUMNS"] = "200"  # no wrapped lines to match across
    env.pop("TOOLPROOF_STORE", None)
    env.update(extra)
    return env


def _demo(*args: str, cwd: Path = REPO_ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolproof", "demo", *args], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    folder = tmp_path_factory.mktemp("demo") / "run"
    return _demo("--dir", str(folder)), folder


def test_demo_prints_every_scene(demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, folder = demo_run
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert done.stderr == ""  # no log noise
    for n, title in enumerate(["Lint", "Wrong tool: the old nine tools against the new six",
                               "Wrong input: the quintal trap", "Repeated action: the double order",
                               "A flaky price feed", "A dead stock service", "A high-risk write that times out",
                               "Evals"], 1):
        assert f"{n}. {title}" in out
    # the three failures are named first, and each is caught in its scene
    assert "the wrong tool (scene 2), the wrong input (scene 3) and the repeated action (scene 4)" in out
    # 2. wrong tool: a look-alike of the old nine runs unnoticed; an old name against the new six is refused with
    # the tools that exist, and the model picks today's price tool
    assert 'model (step 1) → search {"query": "jeera rate today"}' in out and "Not caught: search exists" in out
    assert "invalid_argument UNKNOWN_TOOL: There is no tool called 'rates'." in out
    assert '"allowed_values": [' in out and 'model (step 2) → get_today_price {"crop": "jeera"}' in out
    assert re.search(r"│ wrong tool \(2\)\s+│ UNKNOWN_TOOL for rates, the real tools named\s+│ answered by "
                     r"get_today_price", out)
    assert re.search(r"│ repeated action \(4\)\s+│ .+│ 3 place_order calls -> 1 order row\(s\)", out)
    # 1. lint: the old toolset's findings, none for the new one
    total = re.search(r"│\s+│ total\s+│\s+│ (\d+)\s+│ (\d+)\s+│", out)
    assert total is not None and int(total.group(1)) > 20 and total.group(2) == "0"
    assert "TP302 order:" in out and "TP404 order_v2:" in out
    # 3. wrong input (quintal): 4 refused with a repairable envelope, then 400
    assert '"quantity_kg": 4,' in out and '"code": "OUT_OF_RANGE"' in out and '"next_action": "repair"' in out
    assert '"field": "quantity_kg"' in out and "1 quintal is 100 kg" in out
    assert '"quantity_kg": 400.0' in out and "#1 400 kg" in out
    # 4. repeated action (double order): the lost reply retried, the duplicate and the later retry replayed, one row
    assert "sent 2x: reply lost, retried with the same key → 'Already placed'" in out
    assert out.count("journal: same key, replayed the first order") == 2
    assert "│ 1       │ error   │ transient_upstream │ TIMEOUT │" in out
    assert "3 place_order call(s) → 1 order row(s)" in out
    # 5. flaky feed: 503, 503, 200 on the shortened clock, with the computed waits
    assert "shortened 100x" in out and "attempts=3" in out
    waits = re.findall(r"│ (\d)\s+│ (\d{3})\s+│ ([^│]+?)\s+│ ([\d.]*)\s+│ ([\d.]*)\s+│", out)
    assert [(w[0], w[1]) for w in waits] == [("1", "503"), ("2", "503"), ("3", "200")]
    first, second = float(waits[0][3]), float(waits[1][3])
    assert 0.5 <= first <= 1.0 and 1.0 <= second <= 2.0  # base 1 s, x2, half jitter
    assert float(waits[0][4]) == pytest.approx(first * 10, abs=0.06)  # slept 1/100 of it, in ms
    # 6. dead stock: the breaker opens after two failures; the fallback answers, then no more dispatches
    rows = re.findall(r"│ (stock-\d) │ check_stock │ (\d+)\s+│ (\w+)\s+│ get_stock_snapshot │ check_stock", out)
    assert rows == [("stock-1", "2", "open"), ("stock-2", "0", "open")]
    # 7. the high-risk cancel: escalated, a stop record, resolved through the CLI
    assert "next_action=escalate" in out and "│ reason          │ high_risk" in out
    assert "after the CLI (exit 0)" in out and "checked orders.sqlite3: order 1 is cancelled" in out
    # 8. evals, old against new
    assert re.search(r"│ old\s+│ \d+/120", out) and re.search(r"│ new\s+│ \d+/120", out)
    # the folder is named at the end
    assert f"Demo folder: {folder}" in out.strip().splitlines()[-1]


def test_demo_leaves_its_databases(demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, folder = demo_run
    assert done.returncode == 0, done.stderr
    store = SqliteStore(folder / "toolproof.sqlite3")
    try:
        intents = [i for i in store.journal_list(limit=100) if i.tool == "place_order"
                   and i.arguments.get("crop") == "groundnut"]
        stops = store.list_stops(limit=100)
        audit = store.list_audit(limit=1000)
    finally:
        store.close()
    assert len(intents) == 1 and intents[0].status == "done"
    key = intents[0].key

    db = sqlite3.connect(folder / "orders.sqlite3")
    try:
        assert db.execute("SELECT COUNT(*) FROM orders WHERE request_key = ?", (key,)).fetchone()[0] == 1
        assert db.execute("SELECT COUNT(*) FROM orders WHERE crop = 'groundnut'").fetchone()[0] == 1
        onion = db.execute("SELECT quantity_kg, status FROM orders WHERE crop = 'onion'").fetchall()
    finally:
        db.close()
    assert onion == [(400.0, "cancelled")]  # never 4 kg; cancelled in the database before the reply was lost

    assert len(stops) == 1
    stop = stops[0]
    assert stop.tool == "cancel_order" and stop.reason == "high_risk" and stop.code == "TIMEOUT"
    assert stop.resolved_at is not None and stop.effect_status == "done"
    assert stop.resolution == "checked orders.sqlite3: order 1 is cancelled"

    codes = [(a.tool, a.code) for a in audit]
    assert codes.count(("get_today_price", "HTTP_503")) == 2
    assert ("place_order", "TIMEOUT") in codes and ("cancel_order", "TIMEOUT") in codes
    assert sum(a.tool == "check_stock" and a.code == "CONNECTION_ERROR" for a in audit) == 2
    assert any(a.tool == "get_stock_snapshot" and a.outcome == "ok" for a in audit)


def test_demo_names_its_folder_first_and_prints_commands_that_work(
        demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, folder = demo_run
    lines = done.stdout.splitlines()
    assert any(f"Writing to {folder} " in line for line in lines[:3])
    store = f"sqlite:///{folder / 'toolproof.sqlite3'}"
    look = [line.split(":", 1)[1].strip() if line.startswith("Look around:") else line.strip()
            for line in lines if " --store " in line and (line.startswith("Look around:") or line.startswith(" "))
            and line.strip().endswith(store)]
    assert len(look) == 3, look
    for command in look:  # exactly as printed: `python -m toolproof ...` by its full path, no PATH needed
        assert command.startswith(f"{sys.executable} -m toolproof ")
        ran = subprocess.run(shlex.split(command), env=_env(PATH="/nonexistent"), cwd="/", capture_output=True,
                             text=True, timeout=60)
        assert ran.returncode == 0, (command, ran.stderr)
    assert "cancel_order" in subprocess.run(shlex.split(look[0]), env=_env(), capture_output=True, text=True,
                                            timeout=60).stdout


def test_a_second_run_in_one_folder_starts_fresh_and_says_so(tmp_path: Path) -> None:
    """Not the first run's journal replayed as this run's effects: the same facts again, and the screen says
    the earlier run's files were replaced. Databases the demo did not write are refused, never deleted."""
    first = _demo("--dir", str(tmp_path / "d"))
    again = _demo("--dir", str(tmp_path / "d"))
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert "Starting fresh" not in first.stdout
    assert "Starting fresh: this folder held an earlier demo run; removed its toolproof.sqlite3 and " \
           "orders.sqlite3" in again.stdout
    facts = re.compile(r"The shop's insert ran .*|\d+ audit rows, .*|.*journal: same key, replayed.*")
    assert facts.findall(again.stdout) == facts.findall(first.stdout)
    assert "The shop's insert ran 2 time(s)" in again.stdout and "ran 0 time(s)" not in again.stdout
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "toolproof.sqlite3").write_bytes(b"someone's store")
    refused = _demo("--dir", str(tmp_path / "mine"))
    assert refused.returncode == 2 and "did not write" in refused.stderr
    assert (tmp_path / "mine" / "toolproof.sqlite3").read_bytes() == b"someone's store"


def test_demo_runs_from_any_folder_with_its_default_folder(tmp_path: Path) -> None:
    """No checkout needed: the example ships in the package; the default folder is new, under the cwd."""
    env = _env()
    env["PYTHONPATH"] = str(REPO_ROOT / "src")  # the package only: nothing of the checkout beside it
    first = subprocess.run([sys.executable, "-m", "toolproof", "demo"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    made = sorted((tmp_path / ".toolproof").iterdir())
    assert len(made) == 1 and (made[0] / "toolproof.sqlite3").is_file() and (made[0] / "orders.sqlite3").is_file()
    assert f"Writing to {made[0]} " in "\n".join(first.stdout.splitlines()[:3])


def test_live_needs_a_model_and_a_reachable_endpoint(tmp_path: Path) -> None:
    bare = _demo("--live", "--dir", str(tmp_path / "a"))
    assert bare.returncode == 2 and "--live needs --model" in bare.stderr
    other = _demo("--live", "--model", "anthropic:claude", "--dir", str(tmp_path / "c"))
    assert other.returncode == 2 and "openai:MODEL" in other.stderr
    # Nothing listens on port 9 (discard): the connection is refused at once, as with no network at all.
    dead = _demo("--live", "--model", "openai:demo-model", "--dir", str(tmp_path / "b"),
                 OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="unused")
    assert dead.returncode == 1
    assert "the live model failed" in dead.stderr and "OPENAI_BASE_URL" in dead.stderr
    assert "Traceback" not in dead.stderr + dead.stdout


def test_scripted_agent_repairs_from_the_envelope_it_reads() -> None:
    """The scripted model reacts to what toolproof answered (not a fixed tape): without the hint, no repair."""
    from toolproof.evals._models import ModelRequest
    from toolproof.examples.wholesaler.demo import scripted_agent

    def ask(hint: str) -> object:
        envelope = {"ok": False, "error": {"field": "quantity_kg", "hint": hint, "next_action": "repair",
                                           "message": "too small"}}
        messages = ({"role": "system", "content": ""}, {"role": "user", "content": "4 quintal of onions"},
                    {"role": "assistant", "content": None, "tool_calls": []},
                    {"role": "tool", "tool_call_id": "c", "content": json.dumps(envelope)})
        return scripted_agent(ModelRequest("quintal", 0, messages, (), 1))

    repaired = ask("1 quintal is 100 kg")
    assert repaired.calls[0].arguments["quantity_kg"] == 400  # type: ignore[attr-defined,index]
    assert ask("at least 10").calls == ()  # type: ignore[attr-defined]


def test_default_folder_is_dated_under_dot_toolproof_and_new(tmp_path: Path) -> None:
    from toolproof.examples.wholesaler.demo import default_dir

    made = default_dir(tmp_path)
    assert made.parent == tmp_path / ".toolproof" and re.fullmatch(r"demo-\d{8}-\d{6}", made.name)
    made.mkdir(parents=True)
    again = default_dir(tmp_path)  # the same second: a new folder, never a used one
    assert again != made and not again.exists() and again.name.startswith(made.name)


def test_printed_command_is_the_running_script_by_its_full_path(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    from toolproof.examples.wholesaler.demo import toolproof_command

    script = tmp_path / "venv" / "bin" / "toolproof"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["venv/bin/toolproof", "demo"])
    assert toolproof_command() == str(script)
    monkeypatch.setattr(sys, "argv", ["/somewhere/toolproof/__main__.py", "demo"])
    assert toolproof_command() == f"{sys.executable} -m toolproof"
