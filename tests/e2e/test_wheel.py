"""The package as a stranger gets it: the sdist and wheel built from this checkout, the wheel installed in a
fresh venv outside the checkout, then `toolproof --version`, `toolproof demo` in an empty folder and the
README's quickstart there. Nothing of the checkout is importable in those runs (checked).

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
    data = [n for n in names if n.endswith((".json", ".jsonl", ".yaml")) and not n.startswith(cases)]
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
