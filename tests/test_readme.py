"""The README's quickstart runs as written and prints the envelope the README shows."""

from __future__ import annotations

import contextlib
import io
import json
import re

from tests._data import REPO_ROOT


def _blocks(lang: str) -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_quickstart_runs_and_matches_the_shown_envelope() -> None:
    code = _blocks("python")[0]
    shown = json.loads(_blocks("json")[0].replace('"…"', '"x"'))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    printed = json.loads(out.getvalue())
    assert printed["error"] == shown["error"]
    assert printed["ok"] is shown["ok"] is False
    assert printed["meta"]["tool"] == shown["meta"]["tool"]
    assert printed["meta"]["attempts"] == shown["meta"]["attempts"]
