"""Make every internal module of every subpackage underscore-private, and rewrite every reference to it.

    .venv/bin/python scripts/privatize.py            # rename and rewrite; prints what it changed
    .venv/bin/python scripts/privatize.py --check    # change nothing; exit 1 if anything would change

A module under a subpackage (`toolproof.pipeline.stages`) is public only when it is in `KEEP` or under a
`KEEP_TREES` package: the docs present it as an API to import, or it is run or named by its path. Every other
`x.py` (or sub-subpackage `x/`) is moved to `_x.py` with `git mv`, and every reference in the repository's
text files is rewritten: dotted names (`toolproof.pipeline.stages`, also inside strings, `python -m`
commands and `module:attribute` targets), paths (`src/toolproof/pipeline/stages.py`, `pipeline/stages.py`),
and relative imports (`from .stages import run`; `from . import names` becomes `from . import _names as
names`). Logger names that happen to spell a module (`getLogger("toolproof.mcp.gateway")`) are names users
configure, so a quoted one is left alone.

Idempotent, and safe to run again after a merge: the old name of every underscore module is known from the
tree itself (`_stages.py` answers for `stages`), so files that still use old names are rewritten too.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "toolproof"

#: Modules under a subpackage that stay public, each with the reason (what in the docs makes it an API).
KEEP: dict[str, str] = {
    "toolproof.lint.report": "docs/lint.md: render_text, to_json, to_sarif, summary, what the CLI calls",
    "toolproof.orchestration.breaker": "docs/orchestration.md imports BreakerConfig from it, a section each",
    "toolproof.orchestration.guard": "docs/orchestration.md imports LoopGuard from it",
    "toolproof.orchestration.policy": "docs/orchestration.md imports RetryPolicy, RunBudget, RetryTokenBucket",
    "toolproof.retrieval.static": "run by path: `python -m toolproof.retrieval.static fetch` (README, Makefile)",
    "toolproof.retrieval.models": "run by path: `python -m toolproof.retrieval.models fetch all-mpnet-base-v2` "
                                  "(docs/retrieval.md, Makefile)",
}
#: Packages whose every module is public.
KEEP_TREES: dict[str, str] = {
    "toolproof.integrations": "one module per framework, each imported by name behind its extra",
    "toolproof.examples": "example code to read, named by path on the command line (`...old_tools:old_toolset`)",
}
#: Files never rewritten: this script (its lists name the public modules by their own names).
SKIP_FILES = {"scripts/privatize.py"}
#: Folders of data no module path appears in (public corpora): not read.
SKIP_DIRS = ("tests/data/corpora/",)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt", ".json", ".jsonl", ".html",
                 ".sh", ".in", ".j2", ".css", ".js"}
TEXT_NAMES = {"Makefile", "Dockerfile", "run", ".gitignore"}

_IDENT = r"[A-Za-z_]\w*"
#: `toolproof.a.b` not inside another dotted name (`dev.toolproof/principal` is a key, not a module).
_DOTTED = re.compile(rf"(?<![\w.]){'toolproof'}((?:\.{_IDENT})+)")
#: `toolproof/a/b.py` or `toolproof/a/b/`, as in `src/toolproof/pipeline/stages.py`.
_PATH = re.compile(rf"(?<![\w.-])toolproof((?:/{_IDENT})+)(\.py)?")
_LOGGER = re.compile(r"getLogger\(\s*[\"'](toolproof(?:\.\w+)+)[\"']")


def public(dotted: str) -> bool:
    return dotted in KEEP or any(dotted == tree or dotted.startswith(tree + ".") for tree in KEEP_TREES)


class Names:
    """The private name of every internal module, keyed by (its package's current dotted name, its old name)."""

    def __init__(self) -> None:
        self.private: dict[tuple[str, str], str] = {}

    def walk(self, dotted: str, sep: str = ".") -> str:
        """`dotted` with each component that names an internal module by its old name given its private one."""
        parts = dotted.split(sep)
        out = [parts[0]]
        prefix = parts[0]
        for part in parts[1:]:
            part = self.private.get((prefix, part), part)
            out.append(part)
            prefix = f"{prefix}.{part}"
        return sep.join(out)


def _children(directory: Path) -> Iterator[tuple[str, Path, bool]]:
    """(name, path, is a package) of the modules in a package folder, sorted."""
    for path in sorted(directory.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            yield path.name, path, True
        elif path.suffix == ".py" and path.is_file():
            yield path.stem, path, False


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def plan_and_move(names: Names, *, apply: bool) -> list[tuple[Path, Path]]:
    """Walk the subpackages top-down, record every private name and (with `apply`) move each internal module."""
    moves: list[tuple[Path, Path]] = []

    def visit(directory: Path, dotted: str) -> None:
        for name, path, is_pkg in _children(directory):
            if name.startswith("__"):
                continue
            if name.startswith("_"):
                if (directory / name[1:]).exists() or (directory / f"{name[1:]}.py").exists():
                    raise SystemExit(f"both {name[1:]} and {name} exist in {directory.relative_to(ROOT)}: merge them")
                names.private[(dotted, name[1:])] = name
            elif not public(f"{dotted}.{name}"):
                target = path.with_name(f"_{path.name}")
                names.private[(dotted, name)] = f"_{name}"
                moves.append((path, target))
                if apply:
                    if target.is_dir() and all(p.name == "__pycache__" for p in target.iterdir()):
                        shutil.rmtree(target)  # left by a run that was reset: git mv would nest the package in it
                    _git("mv", str(path.relative_to(ROOT)), str(target.relative_to(ROOT)))
                    path = target
                name = f"_{name}"
            if is_pkg:
                visit(path, f"{dotted}.{name}")

    for name, path, is_pkg in _children(PACKAGE):
        if is_pkg:  # the subpackages themselves are public; the root's own modules are not walked
            visit(path, f"toolproof.{name}")
    return moves


def _dotted_of(path: Path) -> str | None:
    """The module a file under src/ is (`toolproof.pipeline._stages`), else None."""
    try:
        rel = path.relative_to(ROOT / "src")
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _byte_offsets(source: bytes) -> list[int]:
    starts = [0]
    for i, b in enumerate(source):
        if b == 0x0A:
            starts.append(i + 1)
    return starts


_FROM = re.compile(rb"from(\s+)(\.*\s*[\w.]*)(\s+)import")


def rewrite_imports(text: str, path: Path, names: Names) -> str:
    """Rewrite the `from X import Y` statements whose X, or a Y that is a module, was renamed (relative ones
    included, which the dotted pass cannot see)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    module = _dotted_of(path)
    package = None
    if module is not None:  # what a relative import is relative to: a package itself, a module's package
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    source = text.encode("utf-8")
    starts = _byte_offsets(source)
    edits: list[tuple[int, int, bytes]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if package is None:
                continue
            up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join(up)
            full = f"{base}.{node.module}" if node.module else base
        elif node.module and (node.module == "toolproof" or node.module.startswith("toolproof.")):
            base, full = "", node.module
        else:
            continue
        new_full = names.walk(full)
        start = starts[node.lineno - 1] + node.col_offset
        if new_full != full:
            match = _FROM.match(source, start)
            assert match, (path, node.lineno)
            if node.level:
                tail = new_full[len(base) + 1:] if node.module else ""
                spelled = b"." * node.level + tail.encode()
            else:
                spelled = new_full.encode()
            edits.append((match.start(2), match.end(2), spelled))
        for alias in node.names:
            private = names.private.get((new_full, alias.name))
            if private is None:
                continue
            a_start = starts[alias.lineno - 1] + alias.col_offset
            a_end = starts[alias.end_lineno - 1] + alias.end_col_offset
            edits.append((a_start, a_end, f"{private} as {alias.asname or alias.name}".encode()))
    for a, b, new in sorted(edits, reverse=True):
        source = source[:a] + new + source[b:]
    return source.decode("utf-8")


def rewrite_text(text: str, names: Names, loggers: set[str], *, bare_packages: set[str]) -> str:
    def dotted(m: re.Match[str]) -> str:
        name = m.group(0)
        before = text[m.start() - 1] if m.start() else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if name in loggers and before in "\"'" and before and after == before:
            return name  # a logger's name, which users configure, not a module path
        return names.walk(name)

    def path_(m: re.Match[str]) -> str:
        return names.walk("toolproof" + m.group(1), "/") + (m.group(2) or "")

    text = _DOTTED.sub(dotted, text)
    text = _PATH.sub(path_, text)
    if bare_packages:
        bare = re.compile(rf"(?<![\w./-])((?:{'|'.join(sorted(bare_packages))})(?:/{_IDENT})+)\.py\b")
        text = bare.sub(lambda m: names.walk("toolproof/" + m.group(1), "/").removeprefix("toolproof/") + ".py",
                        text)
    return text


def _files() -> Iterator[Path]:
    for rel in _git("ls-files", "-co", "--exclude-standard").splitlines():
        if rel in SKIP_FILES or rel.startswith(SKIP_DIRS):
            continue
        path = ROOT / rel
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES):
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything would change")
    args = parser.parse_args(argv)

    names = Names()
    moves = plan_and_move(names, apply=not args.check)
    for old, new in moves:
        print(f"{'would move' if args.check else 'moved'} {old.relative_to(ROOT)} -> {new.name}")
    loggers = {m.group(1) for p in PACKAGE.rglob("*.py") for m in _LOGGER.finditer(p.read_text(encoding="utf-8"))}
    bare = {name for name, _, is_pkg in _children(PACKAGE) if is_pkg}

    changed: list[Path] = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        new = rewrite_imports(text, path, names) if path.suffix == ".py" else text
        new = rewrite_text(new, names, loggers, bare_packages=bare)
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8", errors="surrogateescape")
    for path in changed:
        print(f"{'would rewrite' if args.check else 'rewrote'} {path.relative_to(ROOT)}")
    python_files = [str(p) for p in changed if p.suffix == ".py"]
    if python_files and not args.check:  # `_x` sorts elsewhere than `x`: put the imports back in order
        ruff = Path(sys.executable).with_name("ruff")
        subprocess.run([str(ruff), "check", "--fix", "--quiet", "--select", "I001", *python_files], cwd=ROOT,
                       check=False)
    if args.check:
        return 1 if moves or changed else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
