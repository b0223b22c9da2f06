"""docs/versions.md's rules table and corpus counts are what scripts/render_versions.py renders now."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests._data import REPO_ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("render_versions", REPO_ROOT / "scripts" / "render_versions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_regions_of_the_versions_doc_are_current() -> None:
    script = _script()
    text = script.DOC.read_text(encoding="utf-8")
    assert all(script._region(name).search(text) for name in script.REGIONS)
    assert script.update(text) == text, "stale: run python scripts/render_versions.py"


def test_the_github_corpus_diff_counts_every_snapshot() -> None:
    """Every historical snapshot is either a removed tool or compared field by field with head."""
    n_old, n_head, changes = _script().corpus_changes()
    assert (n_old, n_head) == (46, 117)
    removed = {c.tool for c in changes if c.kind == "tool-removed"}
    assert len(removed) == 36 and "get_pull_request" in removed
    assert {c.tool for c in changes if c.part != "tools"} == {"issue_write", "list_issues", "search_issues"}
    assert all(c.change_class == "breaking" for c in changes if c.kind == "tool-removed")
