"""The package root re-exports a small, complete public surface."""

from __future__ import annotations

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
