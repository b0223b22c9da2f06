"""The public corpora for the retrieval tests (`tests/data/corpora/`, located by `tests._data`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._data import corpus


@pytest.fixture(scope="session")
def corpora() -> Path:
    return corpus("retrieval").parent
