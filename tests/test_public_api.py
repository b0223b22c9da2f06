"""The package root re-exports a small, complete public surface."""

from __future__ import annotations

from typing import Any

import pytest

import toolproof


def test_every_name_in_all_resolves() -> None:
    for name in toolproof.__all__:
        assert getattr(toolproof, name) is not None, name


def test_subpackages_stay_namespaced() -> None:
    import toolproof.evals
    import toolproof.lint
    import toolproof.mcp
    import toolproof.retrieval

    assert callable(toolproof.lint.lint)
    assert callable(toolproof.mcp.import_tools)
    assert callable(toolproof.evals.run_selection)
    assert toolproof.retrieval.ToolIndex is not None


def test_the_values_are_immutable_and_built_by_their_own_class() -> None:
    """Frozen, slotted dataclasses whose `__init__` is the one `dataclasses` wrote: none is hand-written."""
    import dataclasses

    for cls in (toolproof.CallContext, toolproof.Meta, toolproof.Envelope, toolproof.ErrorInfo, toolproof.AuditRecord,
                toolproof.StopRecord, toolproof.Tool):
        assert cls.__dataclass_params__.frozen and "__slots__" in cls.__dict__, cls  # type: ignore[attr-defined]
        assert cls.__init__.__code__.co_filename == "<string>", cls  # type: ignore[misc]  # dataclasses' own, not a file's
    ctx = toolproof.CallContext("c", "p")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.principal = "someone else"  # type: ignore[misc]
    assert ctx.with_updates(occurrence=1) == toolproof.CallContext("c", "p", occurrence=1)
    meta = toolproof.Meta("t", "c")
    assert dict(meta.extra) == {} and meta == toolproof.Meta("t", "c", extra={})


def _public_classes() -> list[tuple[str, type]]:
    """Every class the root and each subpackage list in `__all__` (Runner included)."""
    import importlib
    import pkgutil

    found: list[tuple[str, type]] = []
    modules = ["toolproof"] + [f"toolproof.{m.name}" for m in pkgutil.iter_modules(toolproof.__path__) if m.ispkg]
    for name in modules:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            value = getattr(module, attr)
            if isinstance(value, type):
                found.append((f"{name}.{attr}", value))
    return found


PUBLIC_CLASSES = _public_classes()


def test_the_scan_finds_the_public_classes() -> None:
    names = {name for name, _ in PUBLIC_CLASSES}
    assert {"toolproof.Runner", "toolproof.Envelope", "toolproof.Tool", "toolproof.mcp.Gateway"} <= names


@pytest.mark.parametrize("cls", [c for _, c in PUBLIC_CLASSES], ids=[n for n, _ in PUBLIC_CLASSES])
def test_every_public_class_survives_get_type_hints(cls: type) -> None:
    """What introspects annotations (cattrs, typer, a user's code) works on every public class."""
    import typing

    typing.get_type_hints(cls, include_extras=True)


@pytest.mark.parametrize("name", [
    m.name for m in sorted(__import__("pkgutil").iter_modules(toolproof.__path__), key=lambda m: m.name) if m.ispkg])
def test_every_subpackage_declares_its_surface(name: str) -> None:
    """Each subpackage says what is public (`__all__`, maybe empty: then its modules are imported by name)."""
    import importlib

    module = importlib.import_module(f"toolproof.{name}")
    assert isinstance(module.__dict__.get("__all__"), list), name
    assert all(hasattr(module, attr) for attr in module.__all__), name


def test_values_print_under_their_public_names() -> None:
    assert repr(toolproof.Runner) == "<class 'toolproof.Runner'>"
    assert repr(toolproof.Envelope) == "<class 'toolproof.Envelope'>"
    assert repr(toolproof.PostgresStore) == "<class 'toolproof.PostgresStore'>"
    from toolproof.mcp import Gateway

    assert repr(Gateway) == "<class 'toolproof.mcp.Gateway'>"


def test_every_exported_value_prints_where_it_is_imported_from() -> None:
    """Each class and function of a subpackage's `__all__` prints under a public home (its package, or the root
    that re-exports it), never an underscore module, and that home hands back the very object (so pickle finds it)."""
    import importlib
    import inspect
    import pkgutil

    checked = 0
    for sub in [m.name for m in pkgutil.iter_modules(toolproof.__path__) if m.ispkg]:
        module = importlib.import_module(f"toolproof.{sub}")
        for attr in getattr(module, "__all__", ()):
            value = getattr(module, attr)
            ours = inspect.isclass(value) or inspect.isfunction(value)
            if not ours or not value.__module__.startswith("toolproof"):
                continue
            home = value.__module__
            assert not any(part.startswith("_") for part in home.split(".")), f"toolproof.{sub}.{attr} prints as {home}"
            assert getattr(importlib.import_module(home), value.__qualname__) is value, (home, attr)
            checked += 1
    assert checked > 150


def test_no_object_changes_its_class_in_the_source() -> None:
    """Every value is built by its own class: nothing assigns `__class__` (a twin's layout taking on another)."""
    import ast
    from pathlib import Path

    src = Path(toolproof.__file__).parent
    found = []
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AugAssign | ast.AnnAssign) else []
            found += [f"{path.name}:{node.lineno}" for t in targets
                      if isinstance(t, ast.Attribute) and t.attr == "__class__"]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and any(
                    isinstance(a, ast.Constant) and a.value == "__class__" for a in node.args):
                found.append(f"{path.name}:{node.lineno}")
    assert not found


def _privatize() -> Any:
    """scripts/privatize.py, whose `KEEP` and `KEEP_TREES` declare the public modules below the subpackages."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "privatize.py"
    spec = importlib.util.spec_from_file_location("privatize", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _modules_below_subpackages() -> list[str]:
    """Every module and package under a subpackage (`toolproof.pipeline._stages`, `toolproof.lint._rules`),
    read off the files, so an extra that is not installed hides nothing."""
    from pathlib import Path

    src = Path(toolproof.__file__).parent
    found = []
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 2 and parts[-1] != "__main__":
            found.append(".".join(parts))
    return found


def test_every_module_below_a_subpackage_is_private_or_declared_public() -> None:
    """A module that is not underscore-private (nor below one that is) is in the declared public list."""
    import importlib.util

    privatize = _privatize()
    modules = _modules_below_subpackages()
    assert "toolproof.pipeline._stages" in modules and "toolproof.lint._rules._base" in modules
    undeclared = [m for m in modules if not any(part.startswith("_") for part in m.split(".")[2:])
                  and not privatize.public(m)]
    assert not undeclared, "public by name, but declared nowhere (privatize.KEEP, or run scripts/privatize.py):\n" \
        + "\n".join(undeclared)
    assert set(privatize.KEEP) <= set(modules), "KEEP names a module that is gone"
    assert all(importlib.util.find_spec(tree) for tree in privatize.KEEP_TREES), "KEEP_TREES names what is gone"


def test_no_reference_uses_an_old_module_name() -> None:
    """Nothing (code, tests, docs, pyproject) still names a module by its name before it became private:
    `scripts/privatize.py --check` would change nothing."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = _privatize().main(["--check"])
    assert code == 0, out.getvalue()


def test_what_is_public_in_the_architecture_page_is_each_subpackages_all() -> None:
    """docs/architecture.md's "What is public" table lists each subpackage's `__all__` and its public modules."""
    import importlib
    import pkgutil
    import re
    from pathlib import Path

    privatize = _privatize()
    page = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(toolproof\.\w+)` \| (.*) \|$", page, re.MULTILINE))
    packages = sorted(f"toolproof.{m.name}" for m in pkgutil.iter_modules(toolproof.__path__) if m.ispkg)
    assert sorted(rows) == packages
    for name in packages:
        shown_all, _, shown_modules = rows[name].partition(" | ")
        assert re.findall(r"`(\w+)`", shown_all) == list(importlib.import_module(name).__all__), name
        declared = sorted(k.removeprefix(f"{name}.") for k in privatize.KEEP if k.startswith(f"{name}."))
        expected = "every module" if name in privatize.KEEP_TREES else ", ".join(f"`{m}`" for m in declared)
        assert shown_modules.strip() == expected, name
