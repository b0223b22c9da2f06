"""ToolUniverse's tool catalogue (mims-harvard/ToolUniverse, March 2025) as lint toolsets: one per data file.

A catalogue no TP402/TP405 change was tuned on: 214 biomedical tools, 156 of them FDA drug-label look-ups
named both ways round (`get_abuse_info_by_drug_name` beside `get_drug_names_by_abuse_info`). Its files keep
`required: true` inside each property; it is lifted into a JSON Schema `required` list here.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from tests._data import corpus
from toolproof.lint import Finding, LintConfig, lint_tooldefs
from toolproof.lint._model import ToolDef

SOURCE = "tooluniverse"


def _schema(param: dict[str, Any]) -> dict[str, Any]:
    given = param.get("properties") or {}
    props = {k: {kk: vv for kk, vv in v.items() if kk != "required"} for k, v in given.items()}
    required = [k for k, v in given.items() if v.get("required") is True]
    return {"type": "object", "properties": props, "required": required}


@cache
def toolsets() -> dict[str, list[ToolDef]]:
    out: dict[str, list[ToolDef]] = {}
    for path in sorted(corpus(SOURCE).glob("*_tools.json")):
        rows = json.loads(path.read_text(encoding="utf-8"))
        out[path.stem] = [ToolDef(name=r["name"], description=r.get("description", ""),
                                  input_schema=_schema(r.get("parameter") or {}), toolset=path.stem,
                                  source=f"{SOURCE}/{path.name}") for r in rows]
    return out


def overlap_findings() -> list[Finding]:
    """TP402 and TP405 on every toolset of the catalogue."""
    config = LintConfig(select=("TP402", "TP405"))
    return [f for tools in toolsets().values() for f in lint_tooldefs(tools, config) if f.code in ("TP402", "TP405")]
