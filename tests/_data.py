"""Where the test data lives: `tests/data/` in this repository, the public corpora in `tests/data/corpora/`.

The one place that knows the layout, so tests and benchmarks work from any clone (nothing outside it is read).
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "tests" / "data"
CORPORA = DATA / "corpora"


def data(*parts: str) -> Path:
    """A file or folder under `tests/data/`; a missing one fails loudly (a broken checkout, not a skip)."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"test data missing: {path}")
    return path


def corpus(*parts: str) -> Path:
    """A file or folder of the public corpora (`tests/data/corpora/`, sources and licences in its README)."""
    return data("corpora", *parts)
