"""Every Python and shell block in README.md and docs/ runs as written, so a doc that drifts from the code
fails CI.

Python blocks run as scripts in a subprocess; shell blocks (bash, sh, shell, console) run each `toolproof`
command as a subprocess. Both run in an empty temporary folder with only the package importable (not the
checkout's tests/ or benchmarks/), as a reader who installed it has: a doc that names a checkout path fails
(the files the docs run on come from `toolproof examples`). tests/e2e/test_wheel.py runs the same blocks
against the installed wheel. A block may carry an annotation on the line right above its fence:

- `<!-- doc-test: skip (reason) -->`: not run (a live model, a network install, a server that runs until
  stopped); the test prints every skipped block with its reason, and the list is kept short;
- `<!-- doc-test: expect "text" -->`: the block's output must contain the text (a number the prose quotes).

A command passes when it exits 0, or 1 for a command that reports findings (lint, compare), without a
traceback; exit 2 is the CLI's usage error and always fails.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._data import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_NOTE = re.compile(r"<!--\s*doc-test:\s*(skip|expect)\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    code: str
    skip: str | None = None
    expect: str | None = None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"


def blocks() -> list[Block]:
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            lang = m.group(1)
            if lang != "python" and lang not in SHELL:
                continue
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            note = _NOTE.search(before)
            skip = note.group(2).strip("() ") if note and note.group(1) == "skip" else None
            expect = note.group(2).strip('"') if note and note.group(1) == "expect" else None
            out.append(Block(path, text[: m.start()].count("\n") + 1, lang, m.group(2), skip, expect))
    return out


def commands(code: str) -> list[str]:
    """The commands of a shell block: continuations joined, `$ ` prompts and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    lines = [ln.strip().removeprefix("$ ") for ln in joined.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty folder, as a reader who installed the package has: nothing of the checkout is in it."""
    return tmp_path_factory.mktemp("docs")


def _env() -> dict[str, str]:
    """The package importable (from src/, as installed), the checkout's tests/ and benchmarks/ not."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src"), "COLUMNS": "200", "TOOLPROOF_STORE": "memory://"}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        env.pop(name, None)
    return env


def run_command(line: str, cwd: Path, python: Path | str = sys.executable,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One `toolproof ...` line of a shell block, run by `python -m toolproof` (this checkout's by default)."""
    words = shlex.split(line, comments=True)
    out = None
    if ">" in words:  # `cmd > FILE`: the one redirection the docs use
        at = words.index(">")
        words, out = words[:at], words[at + 1]
    assert words and words[0] == "toolproof", f"not a toolproof command (annotate the block): {line}"
    proc = subprocess.run([str(python), "-m", "toolproof", *words[1:]], capture_output=True, text=True,
                          cwd=cwd, env=env or _env(), timeout=300)
    if out is not None:
        (cwd / out).write_text(proc.stdout, encoding="utf-8")
    return proc


def _run(block: Block, cwd: Path) -> str:
    if block.lang == "python":
        proc = subprocess.run([sys.executable, "-c", block.code], capture_output=True, text=True, cwd=cwd,
                              env=_env(), timeout=300)
        assert proc.returncode == 0, f"{block.id}\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout + proc.stderr
    output = ""
    for line in commands(block.code):
        proc = run_command(line, cwd)
        text = proc.stdout + proc.stderr
        assert proc.returncode in (0, 1) and "Traceback" not in text, f"{block.id}: {line}\n{text}"
        output += text
    return output


RUNNABLE = [b for b in blocks() if b.skip is None]


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_block_runs_as_written(block: Block, workdir: Path) -> None:
    output = _run(block, workdir)
    if block.expect is not None:
        assert block.expect in " ".join(output.split()), f"{block.id}: expected {block.expect!r} in\n{output}"


STORED = [b for b in RUNNABLE if b.lang == "python" and "sqlite:///" in b.code]


@pytest.mark.parametrize("block", STORED, ids=[b.id for b in STORED])
def test_a_block_that_keeps_a_store_runs_twice_in_one_folder(block: Block, tmp_path: Path) -> None:
    """A reader runs an example again where they ran it: the file it left must not make it fail or print
    another result (a journal that replays the first run's call, say). Ids and times may differ."""
    def stdout() -> str:
        proc = subprocess.run([sys.executable, "-c", block.code], capture_output=True, text=True, cwd=tmp_path,
                              env=_env(), timeout=300)
        assert proc.returncode == 0, f"{block.id}\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def own(text: str) -> list[str]:  # a dev server the block starts (Temporal's) may print its banner, or not
        return [line for line in text.splitlines() if line.strip() and not line.startswith("Temporal ")]

    first, again = stdout(), stdout()
    if block.expect is not None:
        assert block.expect in " ".join(again.split()), f"{block.id}: expected {block.expect!r} in\n{again}"
    assert len(own(again)) == len(own(first)), (block.id, first, again)


def samples() -> list[Block]:
    """The `text` blocks that quote a command's output: their first line is `$ toolproof ...`."""
    return [Block(path, text[: m.start()].count("\n") + 1, "text", m.group(2))
            for path in DOCS for text in [path.read_text(encoding="utf-8")] for m in _FENCE.finditer(text)
            if m.group(1) == "text" and m.group(2).startswith("$ toolproof ")]


SAMPLES = samples()


@pytest.mark.parametrize("block", SAMPLES, ids=[b.id for b in SAMPLES])
def test_a_sample_output_is_what_its_command_prints(block: Block, tmp_path: Path) -> None:
    """A `text` block that starts with `$ toolproof ...` quotes that command's output, off a terminal, from a
    folder holding `toolproof examples` (where the docs run): regenerate it by running the command."""
    command, _, quoted = block.code.partition("\n")
    env = {k: v for k, v in _env().items() if k != "COLUMNS"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # `python` as printed
    assert run_command("toolproof examples", tmp_path, env=env).returncode == 0
    proc = run_command(command.removeprefix("$ "), tmp_path, env=env)
    printed = [line.rstrip() for line in (proc.stdout + proc.stderr).splitlines()]
    assert printed == [line.rstrip() for line in quoted.splitlines()], f"{block.id}: run `{command}`"


def test_skipped_blocks_are_few_and_say_why() -> None:
    skipped = [b for b in blocks() if b.skip is not None]
    for b in skipped:
        print(f"doc-test skip: {b.id} ({b.skip})")
    assert all(b.skip for b in skipped)  # a reason for each
    assert len(skipped) <= 12, [b.id for b in skipped]  # raise this only with a reason in the block
    assert len(RUNNABLE) >= 8


def test_measured_numbers_are_rendered_from_the_one_bench_run() -> None:
    """README and docs quote one `toolproof bench --out FILE` run: each region equals what the script renders."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("render_bench", REPO_ROOT / "scripts" / "render_bench.py")
    assert spec is not None and spec.loader is not None
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    results = json.loads(render.LATEST.read_text(encoding="utf-8"))
    regions = 0
    for path in render.documents():
        text = path.read_text(encoding="utf-8")
        regions += len(render.REGION.findall(text))
        assert render.update(text, results) == text, f"{path.name}: stale; run python scripts/render_bench.py"
    assert regions >= 6 and results["date"] in (REPO_ROOT / "README.md").read_text(encoding="utf-8")
