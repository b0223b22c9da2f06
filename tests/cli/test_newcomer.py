"""What a newcomer meets after a plain `pip install toolproof`: a part whose extra is missing answers in one
line with the `pip install` to run (exit 2), a mistyped path says "no such file", and `toolproof examples`
puts the files the docs run on in a folder.

Here an extra's absence is made by blocking its modules (`sys.modules[name] = None`, which makes the import
fail as an uninstalled one does) in a real `toolproof` subprocess; tests/e2e/test_wheel.py meets the real
absence, in a fresh venv holding the wheel alone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from importlib.resources import files
from pathlib import Path

import pytest

from tests._data import REPO_ROOT
from tests.cli._run import toolproof_cli
from toolproof._extras import EXTRA_OF_MODULE

#: The extras a part of toolproof needs (not the sets of extras nor the peers' pins; pydantic-ai-mcp is
#: pydantic-ai's MCP client beside `toolproof[mcp]`, known by its fastmcp).
PART_EXTRAS = ("mcp", "postgres", "fleet", "openai", "otel", "retrieval", "embeddings", "ui", "pydantic-ai",
               "openai-agents", "langchain", "anthropic", "temporal", "dbos")


def _without(modules: list[str], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a subprocess in which importing any of `modules` fails as if it were not installed."""
    block = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPROOF_")}
    env["PYTHONPATH"] = str(REPO_ROOT / "src")
    return subprocess.run([sys.executable, "-c", block + code], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)


def _cli_without(modules: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return _without(modules, f"sys.argv = ['toolproof', *{args!r}]\nfrom toolproof.cli import main\nmain()\n", cwd)


def _requirement_name(spec: str) -> str:
    return re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0]


def test_every_dependency_of_an_extra_is_mapped_to_that_extra() -> None:
    """A dependency added to an extra without its import name here would fall back to a bare traceback."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_OF_MODULE.values()) <= set(extras)
    modules_of: dict[str, set[str]] = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            modules_of.setdefault(dist.lower().replace("_", "-"), set()).add(module)
    for extra in PART_EXTRAS:
        for spec in extras[extra]:
            name = _requirement_name(spec).lower().replace("_", "-")
            if name == "toolproof":
                continue
            modules = {m for m in modules_of[name] if not m.startswith("_")}
            assert modules, (extra, name)
            for module in modules:
                assert EXTRA_OF_MODULE.get(module) == extra, (extra, name, module)


@pytest.mark.parametrize(("args", "blocked", "extra"), [
    (["serve", "toolproof.examples.wholesaler:toolset"], ["mcp"], "mcp"),
    (["gateway", "--upstream", "time=python -m mcp_server_time", "--check"], ["mcp"], "mcp"),
    (["lint", "--mcp-command", "python -m mcp_server_time"], ["mcp", "anyio"], "mcp"),
    (["lock", "--mcp-command", "python -m mcp_server_time"], ["mcp", "anyio"], "mcp"),
    (["diff", "stdio:python -m mcp_server_time", "toolproof.examples.wholesaler:toolset"], ["mcp", "anyio"], "mcp"),
    (["ui"], ["uvicorn", "starlette"], "ui"),
])
def test_a_command_that_needs_a_missing_extra_says_which_in_one_line(
        args: list[str], blocked: list[str], extra: str, tmp_path: Path) -> None:
    proc = _cli_without(blocked, args, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"error: toolproof {args[0]} ") or args[0] == "ui", proc.stderr
    assert f"pip install 'toolproof[{extra}]'" in proc.stderr
    assert not (tmp_path / ".toolproof").exists()  # nothing created on the way out


def test_toolset_search_without_the_retrieval_extra_names_it() -> None:
    code = ("from toolproof.examples.wholesaler import toolset\n"
            "try:\n    toolset.search('cancel order 42')\n"
            "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    proc = _without(["numpy", "bm25s", "Stemmer"], code, REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MissingExtra Toolset.search() needs the retrieval extra: "
                                  "pip install 'toolproof[retrieval]' (No module named "), proc.stdout


def test_a_users_own_missing_dependency_is_not_blamed_on_an_extra(tmp_path: Path) -> None:
    """A user's module that imports numpy without having it gets the plain import error, not our extra."""
    (tmp_path / "mytools.py").write_text("import numpy\nTOOLS = []\n")
    proc = _cli_without(["numpy"], ["lint", "mytools:TOOLS"], tmp_path)
    assert proc.returncode == 2 and "cannot import 'mytools'" in proc.stderr, proc.stderr
    assert "toolproof[" not in proc.stderr


@pytest.mark.parametrize("args", [
    ["diff", "tests/data/versions/orders_v1.json", "tests/data/versions/orders_v2.json"],
    ["lock", "./nowhere/tools.json"],
    ["lint", "tools.json"],
])
def test_a_missing_path_says_no_such_file(args: list[str], tmp_path: Path) -> None:
    proc = toolproof_cli(*args, cwd=tmp_path, code=2)
    assert proc.stderr.strip() == f"error: no such file: {args[1]}", proc.stderr


def test_examples_copies_the_shipped_files_and_keeps_edited_ones(tmp_path: Path) -> None:
    proc = toolproof_cli("examples", cwd=tmp_path)
    folder = tmp_path / "toolproof-examples"
    shipped = {f.name: f.read_bytes() for pkg in ("toolproof.examples.wholesaler.cases", "toolproof.examples.versions")
               for f in files(pkg).iterdir() if f.name.endswith((".yaml", ".jsonl", ".json"))}
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == shipped
    assert {"selection.yaml", "recorded_selection_new.jsonl", "orders_v1.json"} <= set(shipped)
    assert proc.stdout == "" and f"copied {len(shipped)} files to toolproof-examples" in proc.stderr
    (folder / "selection.yaml").write_text("# mine\n")
    again = toolproof_cli("examples", cwd=tmp_path)
    assert (folder / "selection.yaml").read_text() == "# mine\n"
    assert f"kept {len(shipped)} files already in toolproof-examples" in again.stderr
    diff = toolproof_cli("diff", "toolproof-examples/orders_v1.json", "toolproof-examples/orders_v2.json",
                         cwd=tmp_path, code=1)
    assert "1 breaking" in diff.stdout


def test_a_named_store_that_is_not_there_is_not_told_to_give_store(tmp_path: Path) -> None:
    named = toolproof_cli("stops", "list", "--store", f"sqlite:///{tmp_path}/none.sqlite3", cwd=tmp_path, code=2)
    assert "give --store" not in named.stderr and "none.sqlite3" in named.stderr
    default = toolproof_cli("stops", "list", cwd=tmp_path, code=2)
    assert "(give --store or set $TOOLPROOF_STORE)" in default.stderr


@pytest.mark.parametrize("age", ["3", "0.5"])
def test_journal_prune_refuses_a_bare_number(age: str, tmp_path: Path) -> None:
    """`--older-than 3` would be three seconds: every finished entry, at once. A unit is required."""
    proc = toolproof_cli("journal", "prune", "--older-than", age, "--store", f"sqlite:///{tmp_path}/j.sqlite3",
                         cwd=tmp_path, code=2)
    assert f"--older-than needs a unit: {age}s, {age}m, {age}h or {age}d" in proc.stderr
    assert not (tmp_path / "j.sqlite3").exists()
