"""The layers contract of pyproject.toml holds, and it would catch a module that imports a floor above its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._data import REPO_ROOT

pytestmark = pytest.mark.e2e  # runs lint-imports in a subprocess

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(REPO_ROOT / "pyproject.toml"), "--no-cache"],
                          capture_output=True, text=True, env=env, cwd=src, timeout=120)


def test_the_layers_contract_is_kept() -> None:
    proc = lint_imports(REPO_ROOT / "src")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 kept, 0 broken" in proc.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(REPO_ROOT / "src" / "toolproof", tmp_path / "toolproof")
    errors = tmp_path / "toolproof" / "contract" / "_errors.py"
    errors.write_text(errors.read_text() + "\nfrom ..pipeline import _runner  # upward: contract -> pipeline\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0
    assert "toolproof.contract._errors -> toolproof.pipeline._runner" in proc.stdout
