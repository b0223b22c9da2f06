"""The package root re-exports a small, complete public surface."""

from __future__ import annotations

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
