"""The package as a stranger gets it: the sdist and wheel built from this checkout, the wheel installed in a
fresh venv outside the checkout with no extra, then `toolproof --version`, `toolproof demo` in an empty folder,
the README's quickstart there, every command that needs an extra (one line naming it, exit 2), and every
block of the docs (each works or answers in one line which extra it needs). Nothing of the checkout is
importable in those runs (checked).

About a minute: a build and a pip install (pip fetches the runtime dependencies from the package index, or
its cache). `TOOLPROOF_WHEEL=path/to/toolproof-*.whl` installs that wheel instead of building one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

from tests._data import REPO_ROOT
from tests.test_docs import RUNNABLE, Block, commands, run_command
from toolproof._extras import EXTRA_OF_MODULE

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Installed:
    venv: Path
    toolproof: Path  # the venv's console script
    python: Path
    empty: Path  # a folder with nothing in it, outside the checkout


def _run(cmd: list[str | Path], *, cwd: Path | str | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _clean_env() -> dict[str, str]:
    """What a new shell has: no PYTHONPATH, no activated venv, no toolproof store, a PATH without the venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TOOLPROOF_STORE", "TOOLPROOF_CORPORA", "PYTHONHOME")}
    env["PATH"] = "/usr/bin:/bin"
    env["COLUMNS"] = "200"
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    given = os.environ.get("TOOLPROOF_WHEEL")
    if given:
        wheel = Path(given).resolve()
        (out / wheel.name).symlink_to(wheel)
        return out
    # The default build: an sdist, then the wheel built from that sdist (so the sdist is complete too).
    done = _run([sys.executable, "-m", "build", "--outdir", out, REPO_ROOT], cwd=out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "deprecat" not in (done.stdout + done.stderr).lower(), done.stdout + done.stderr  # setuptools warnings
    return out


def _wheel(dist: Path) -> Path:
    wheels = sorted(dist.glob("toolproof-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("stranger")
    assert REPO_ROOT not in root.parents
    venv = root / "venv"
    # A venv without pip (no ensurepip needed); this interpreter's pip installs into it.
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    done = _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
                 "--disable-pip-version-check", _wheel(dist)], cwd=root, env=_clean_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    empty = root / "elsewhere"
    empty.mkdir()
    return Installed(venv, venv / "bin" / "toolproof", python, empty)


def test_sdist_and_wheel_pass_the_registry_checks(dist: Path) -> None:
    files = sorted(dist.glob("toolproof-*"))
    if not os.environ.get("TOOLPROOF_WHEEL"):
        assert sorted(f.suffix for f in files) == [".gz", ".whl"], files
    twine = _run([sys.executable, "-m", "twine", "check", "--strict", *files])
    assert twine.returncode == 0, twine.stdout + twine.stderr
    contents = _run([sys.executable, "-m", "check_wheel_contents", _wheel(dist)])
    assert contents.returncode == 0, contents.stdout + contents.stderr


def test_wheel_holds_the_package_the_example_and_the_licence_and_no_test_data(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        names = set(wheel.namelist())
        metadata = next(wheel.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    cases = "toolproof/examples/wholesaler/cases/"
    for needed in ("toolproof/py.typed", "toolproof/examples/wholesaler/demo.py", f"{cases}selection.yaml",
                   f"{cases}recorded_selection_new.jsonl", f"{cases}recorded_recovery_old.jsonl"):
        assert needed in names, needed
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert {n.split("/")[0] for n in names} == {"toolproof", f"toolproof-{version('toolproof')}.dist-info"}
    versions = "toolproof/examples/versions/"
    assert {f"{versions}orders_v1.json", f"{versions}orders_v2.json"} <= names  # `toolproof examples` copies them
    data = [n for n in names if n.endswith((".json", ".jsonl", ".yaml")) and not n.startswith((cases, versions))]
    assert not data and not [n for n in names if "/data/" in n or "BFCL" in n]
    assert "License-Expression: MIT" in metadata
    assert "Requires-Python: >=3.11" in metadata


def test_installed_toolproof_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    where = _run([installed.python, "-c", "import toolproof; print(toolproof.__file__)"], cwd=installed.empty,
                 env=_clean_env())
    assert where.returncode == 0, where.stderr
    path = Path(where.stdout.strip()).resolve()
    assert installed.venv.resolve() in path.parents and REPO_ROOT not in path.parents
    done = _run([installed.toolproof, "--version"], cwd=installed.empty, env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"toolproof {version('toolproof')}"


def test_demo_runs_in_an_empty_folder_and_its_printed_commands_work(installed: Installed) -> None:
    done = _run([installed.toolproof, "demo"], cwd=installed.empty, env=_clean_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    folders = list((installed.empty / ".toolproof").iterdir())
    assert len(folders) == 1 and (folders[0] / "toolproof.sqlite3").is_file()
    assert f"Writing to {folders[0]} " in "\n".join(done.stdout.splitlines()[:3])
    assert f"Demo folder: {folders[0]}" in done.stdout.strip().splitlines()[-1]
    first = next(line for line in done.stdout.splitlines() if line.startswith("Look around:"))
    command = first.split(":", 1)[1].strip()
    assert command.startswith(f"{installed.toolproof} stops list")  # the full path: works without PATH
    listed = _run(shlex.split(command), cwd="/", env=_clean_env())
    assert listed.returncode == 0 and "cancel_order" in listed.stdout, listed.stdout + listed.stderr


def test_readme_quickstart_runs_there(installed: Installed) -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    code = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    (installed.empty / "quickstart.py").write_text(code)
    done = _run([installed.python, "quickstart.py"], cwd=installed.empty, env=_clean_env())
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is False and envelope["error"]["code"] == "OUT_OF_RANGE"


def test_bench_says_it_needs_a_checkout(installed: Installed) -> None:
    done = _run([installed.toolproof, "bench", "--quick"], cwd=installed.empty, env=_clean_env())
    assert done.returncode == 2
    assert "needs a toolproof source checkout" in " ".join(done.stderr.split())


#: Commands of the docs that need an extra, each with the extra it must name (the wheel alone has none).
NEEDS_EXTRA = [
    (["serve", "toolproof.examples.wholesaler:toolset"], "mcp"),
    (["serve", "toolproof.examples.wholesaler:toolset", "--http", "--port", "0"], "mcp"),
    (["gateway", "--upstream", "time=python -m mcp_server_time", "--check"], "mcp"),
    (["gateway", "--config", "gateway.toml"], "mcp"),
    (["lint", "--mcp-command", "python -m mcp_server_time"], "mcp"),
    (["lock", "--mcp-command", "python -m mcp_server_time"], "mcp"),
    (["diff", "stdio:python -m mcp_server_time", "toolproof.examples.wholesaler:toolset"], "mcp"),
    (["ui"], "ui"),
]
INSTALL_LINE = re.compile(r"pip install 'toolproof\[(\w[\w-]*)\]'")


def _one_line_naming_an_extra(proc: subprocess.CompletedProcess[str]) -> str | None:
    """The extra a failed command names, when it said so in one line with exit 2 (else None)."""
    lines = proc.stderr.strip().splitlines()
    found = INSTALL_LINE.search(proc.stderr)
    if proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr and found:
        return found.group(1)
    return None


@pytest.mark.parametrize(("args", "extra"), NEEDS_EXTRA, ids=[" ".join(a[:2]) for a, _ in NEEDS_EXTRA])
def test_a_command_that_needs_an_extra_names_it_in_one_line(installed: Installed, args: list[str],
                                                             extra: str) -> None:
    done = _run([installed.toolproof, *args], cwd=installed.empty, env=_clean_env())
    assert _one_line_naming_an_extra(done) == extra, (done.returncode, done.stdout[-2000:], done.stderr[-3000:])


def test_toolset_search_names_the_retrieval_extra(installed: Installed) -> None:
    code = "from toolproof.examples.wholesaler import toolset\ntoolset.search('cancel order 42')\n"
    done = _run([installed.python, "-c", code], cwd=installed.empty, env=_clean_env())
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last == (
        "toolproof._extras.MissingExtra: Toolset.search() needs the retrieval extra: "
        "pip install 'toolproof[retrieval]' (No module named 'numpy')"), done.stderr


def _extra_of_import_error(last: str) -> str | None:
    """The extra a Python block's failure asks for: its import error names the install line, or a module
    one of toolproof's extras installs (a framework the block itself imports)."""
    if (found := INSTALL_LINE.search(last)) and re.match(r"[\w.]*(ImportError|MissingExtra): ", last):
        return found.group(1)
    missing = re.fullmatch(r"ModuleNotFoundError: No module named '([\w.]+)'", last)
    return EXTRA_OF_MODULE.get(missing.group(1).partition(".")[0]) if missing else None


def _block_from_the_wheel(block: Block, installed: Installed, cwd: Path) -> tuple[str, str]:
    """Run one docs block with the wheel's interpreter: ("ran", output) or ("needs EXTRA", output)."""
    env = {**_clean_env(), "TOOLPROOF_STORE": "memory://"}
    if block.lang == "python":
        done = _run([installed.python, "-c", block.code], cwd=cwd, env=env)
        if done.returncode == 0:
            return "ran", done.stdout + done.stderr
        extra = _extra_of_import_error((done.stderr.strip().splitlines() or [""])[-1])
        assert extra is not None, f"{block.id}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        page = block.path.read_text(encoding="utf-8").splitlines()[: block.line]
        assert re.search(rf"toolproof\[([\w-]+,)*{extra}\b", "\n".join(page)), f"{block.id}: says not {extra}"
        return f"needs {extra}", done.stderr
    output = ""
    for line in commands(block.code):
        proc = run_command(line, cwd, python=installed.python, env=env)
        extra = _one_line_naming_an_extra(proc)
        if extra is not None:
            return f"needs {extra}", proc.stderr
        text = proc.stdout + proc.stderr
        assert proc.returncode in (0, 1) and "Traceback" not in text, f"{block.id}: {line}\n{text[-3000:]}"
        output += text
    return "ran", output


def test_the_docs_blocks_work_from_the_wheel_or_name_their_extra(installed: Installed,
                                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every runnable block of README.md and docs/, in an empty folder, against the wheel with no extra:
    it runs as written (its expected text printed), or a command of it answers in one line which extra it
    needs, or (Python) it ends in an import error of that extra's which its page names before it. The
    blocks on the files `toolproof examples` copies out need no extra and no checkout: they run."""
    cwd = tmp_path_factory.mktemp("docs-from-the-wheel")
    outcomes: dict[str, str] = {}
    for block in RUNNABLE:
        outcome, output = _block_from_the_wheel(block, installed, cwd)
        outcomes[block.id] = outcome
        if outcome == "ran" and block.expect is not None:
            assert block.expect in " ".join(output.split()), f"{block.id}: expected {block.expect!r} in\n{output}"
    print("\n".join(f"{k}: {v}" for k, v in outcomes.items()))
    on_examples = {b.id: outcomes[b.id] for b in RUNNABLE if "toolproof examples" in b.code}
    assert len(on_examples) >= 5 and set(on_examples.values()) == {"ran"}, on_examples
    assert sum(v == "ran" for v in outcomes.values()) >= len(outcomes) // 3, outcomes
