"""Reports: rich terminal tables, the JSON result (schema in docs/evals.md), one self-contained HTML page
with inline SVG charts (no CDN, no script), and `compare` for CI gates on two JSON results.

Everything here reads the JSON form (`report.to_dict()`), so a saved result renders the same as a fresh one.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ._model_errors import ModelErrorTally

SCHEMA_VERSION: Final = "1"

# ------------------------------------------------------------------------------------------------ JSON


def write_json(reports: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """One file: `{"toolproof_eval": "1", "reports": [...]}`."""
    Path(path).write_text(json.dumps(bundle(reports), indent=2, ensure_ascii=False, default=str) + "\n",
                          encoding="utf-8")


def bundle(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"toolproof_eval": SCHEMA_VERSION, "reports": [dict(r) for r in reports]}


def read_json(path: str | Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, Mapping) and "reports" in data:
        return [dict(r) for r in data["reports"]]
    if isinstance(data, Mapping) and "kind" in data:
        return [dict(data)]
    raise ValueError(f"{path}: not a toolproof eval result")


# -------------------------------------------------------------------------------------------- terminal


def _pct(rate: Mapping[str, Any]) -> str:
    return f"{rate['passed']}/{rate['total']} ({100 * rate['rate']:.1f}%)" if rate["total"] else "-"


def partial_note(data: Mapping[str, Any]) -> str | None:
    """The line that marks a result holding model errors (its failed runs count as failures)."""
    if not data.get("partial") or not data.get("model_errors"):
        return None
    tally = ModelErrorTally.from_dict(data["model_errors"])
    return f"PARTIAL RESULT: {tally.describe()}; those runs are scored as failures"


def _print_partial(data: Mapping[str, Any], console: Console) -> None:
    note = partial_note(data)
    if note:
        console.print(Text(note, style="bold yellow"))


def _errors(d: Mapping[str, Any]) -> str:
    """A model-error cell: a Rate dict, a bare count, or nothing recorded (an older result)."""
    value = d.get("model_errors")
    if isinstance(value, Mapping):
        return str(value.get("passed", value.get("errors", 0)))
    return str(value) if value is not None else "-"


def print_selection(data: Mapping[str, Any], console: Console) -> None:
    _print_partial(data, console)
    s = data["summary"]
    t = Table(title=f"selection: {data['model']} on {data['toolset']} ({data['cases']} cases x {data['runs']} runs)")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for key, label in (("tool_accuracy", "tool choice"), ("argument_accuracy", "arguments (right tool)"),
                       ("pass_at_1", "pass@1"), ("pass_hat_k", f"pass^{data['runs']}"),
                       ("cases_passed", "cases passed (majority)"), ("model_errors", "model errors (no answer)")):
        t.add_row(label, _pct(s[key]) if key in s else "-")
    console.print(t)
    if data["per_tag"]:
        tags = Table(title="per tag")
        for col in ("tag", "tool", "pass@1", f"pass^{data['runs']}", "model errors"):
            tags.add_column(col, justify="right" if col != "tag" else "left")
        for tag, d in data["per_tag"].items():
            tags.add_row(Text(tag), _pct(d["tool"]), _pct(d["pass_at_1"]), _pct(d["pass_hat_k"]), _errors(d))
        console.print(tags)
    if data["field_failures"]:
        ff = Table(title="failures per tool and field")
        for col in ("tool", "field", "kind", "count"):
            ff.add_column(col)
        for row in data["field_failures"][:15]:
            ff.add_row(Text(row["tool"]), Text(row["field"]), Text(row["kind"]), str(row["count"]))
        console.print(ff)
    if data["shaky"]:
        console.print(Text("shaky (runs disagree): ", style="yellow") + Text(", ".join(data["shaky"])))


def print_schema(data: Mapping[str, Any], console: Console) -> None:
    _print_partial(data, console)
    t = Table(title=f"schema: {data['rejected']} of {data['checked']} generated calls rejected by the validator")
    for col in ("tool", "field", "rejections", "model errors"):
        t.add_column(col)
    for row in data["per_field"]:
        t.add_row(Text(row["tool"]), Text(row["field"]), str(row["count"]), "")
    tally = data.get("model_errors")
    t.add_row("(model)", "-", "", str(tally["errors"]) if tally else "-")
    console.print(t)
    for line in data["diagnosis"]:
        console.print(Text(f"  {line}"))


def print_recovery(data: Mapping[str, Any], console: Console) -> None:
    _print_partial(data, console)
    s = data["summary"]
    t = Table(title=f"recovery: {data['model']} ({data['error_format']} errors): {s['passed']}/{s['total']} right "
                    f"next steps, macro {100 * s['macro_accuracy']:.1f}%")
    for col in ("class", "right", "accuracy", "model errors"):
        t.add_column(col)
    for cls, d in data["per_class"].items():
        colour = "green" if d["accuracy"] >= 0.999 else ("yellow" if d["accuracy"] >= 0.5 else "red")
        t.add_row(cls, f"{d['passed']}/{d['total']}", f"[{colour}]{100 * d['accuracy']:.0f}%[/]", _errors(d))
    console.print(t)
    m = Table(title="confusion: expected next action (rows) x observed next step (columns)")
    labels = list(next(iter(data["confusion"].values())))
    m.add_column("expected")
    for o in labels:
        m.add_column(o, justify="right")
    for expected, row in data["confusion"].items():
        if sum(row.values()):
            m.add_row(Text(expected), *[str(row[o]) if row[o] else "." for o in labels])
    console.print(m)
    if s["followup"]["total"]:
        console.print(f"after a re-read: {s['followup']['passed']}/{s['followup']['total']} right follow-ups")


def print_bfcl(data: Mapping[str, Any], console: Console) -> None:
    _print_partial(data, console)
    t = Table(title=f"BFCL v4: {data.get('model', 'scored outputs')}")
    for col in ("category", "passed", "scored", "accuracy", "model errors"):
        t.add_column(col)
    for cat, d in data["per_category"].items():
        acc = f"{100 * d['accuracy']:.1f}%" if d["accuracy"] is not None else "-"
        t.add_row(cat, str(d["passed"]), str(d["scored"]), acc, _errors(d))
    console.print(t)
    unanswered = data.get("unanswered") or []
    if unanswered:
        console.print(Text(f"{len(unanswered)} entries got no answer from the model, e.g. {unanswered[0]}",
                           style="red"))


def print_report(data: Mapping[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    {"selection": print_selection, "schema": print_schema, "recovery": print_recovery, "bfcl": print_bfcl}[
        data["kind"]](data, console)


# ------------------------------------------------------------------------------------------------ HTML

_CSS: Final = """body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:right}
td:first-child,th:first-child{text-align:left}.muted{color:#777}svg text{font-size:11px;font-family:inherit}"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def bar_chart(title: str, rows: Sequence[tuple[str, float]], *, max_value: float | None = None,
              percent: bool = True) -> str:
    """A horizontal bar chart as inline SVG."""
    if not rows:
        return f"<p class='muted'>{_e(title)}: nothing to show</p>"
    top = max_value if max_value is not None else max((v for _, v in rows), default=1.0) or 1.0
    label_w, bar_w, row_h = 210, 360, 20
    height = row_h * len(rows) + 28
    parts = [f"<svg role='img' aria-label='{_e(title)}' width='{label_w + bar_w + 80}' height='{height}' "
             f"xmlns='http://www.w3.org/2000/svg'><title>{_e(title)}</title>",
             f"<text x='0' y='14' font-weight='bold'>{_e(title)}</text>"]
    for i, (label, value) in enumerate(rows):
        y = 24 + i * row_h
        w = 0 if top <= 0 else bar_w * min(value / top, 1.0)
        colour = "#2a9d8f" if not percent or value >= 0.9 else ("#e9c46a" if value >= 0.5 else "#e76f51")
        text = f"{100 * value:.0f}%" if percent else f"{value:g}"
        parts.append(f"<text x='{label_w - 6}' y='{y + 13}' text-anchor='end'>{_e(label)}</text>"
                     f"<rect x='{label_w}' y='{y + 2}' width='{w:.1f}' height='{row_h - 6}' fill='{colour}'/>"
                     f"<text x='{label_w + w + 4:.1f}' y='{y + 13}'>{_e(text)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def matrix_chart(title: str, matrix: Mapping[str, Mapping[str, int]]) -> str:
    """The confusion matrix as an SVG heat grid (rows: expected, columns: observed)."""
    rows = [r for r, cols in matrix.items() if sum(cols.values())]
    if not rows:
        return ""
    cols = list(next(iter(matrix.values())))
    cell, left, topm = 58, 110, 40
    peak = max(max(matrix[r].values()) for r in rows) or 1
    w, h = left + cell * len(cols) + 10, topm + cell * len(rows) + 10
    parts = [f"<svg role='img' aria-label='{_e(title)}' width='{w}' height='{h + 16}' "
             f"xmlns='http://www.w3.org/2000/svg'><title>{_e(title)}</title>",
             f"<text x='0' y='12' font-weight='bold'>{_e(title)}</text>"]
    for j, c in enumerate(cols):
        parts.append(f"<text x='{left + j * cell + cell / 2}' y='{topm - 6}' text-anchor='middle'>{_e(c)}</text>")
    for i, r in enumerate(rows):
        y = topm + i * cell
        parts.append(f"<text x='{left - 6}' y='{y + cell / 2 + 4}' text-anchor='end'>{_e(r)}</text>")
        for j, c in enumerate(cols):
            n = matrix[r][c]
            diagonal = r == c
            alpha = 0.1 + 0.9 * n / peak if n else 0.0
            colour = "42,157,143" if diagonal else "231,111,81"
            parts.append(f"<rect x='{left + j * cell}' y='{y}' width='{cell - 2}' height='{cell - 2}' "
                         f"fill='rgba({colour},{alpha:.2f})' stroke='#ddd'/>")
            if n:
                parts.append(f"<text x='{left + j * cell + cell / 2 - 1}' y='{y + cell / 2 + 4}' "
                             f"text-anchor='middle'>{n}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _rate(rate: Mapping[str, Any]) -> float:
    return float(rate["rate"]) if rate["total"] else 0.0


def _selection_html(d: Mapping[str, Any]) -> str:
    s = d["summary"]
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(_pct(v))}</td></tr>" for k, v in s.items())
    out = [f"<h2>Selection: {_e(d['model'])} on {_e(d['toolset'])}</h2><table>{rows}</table>",
           bar_chart("pass@1 per tag", [(t, _rate(v["pass_at_1"])) for t, v in d["per_tag"].items()], max_value=1),
           bar_chart("failures per tool and field",
                     [(f"{r['tool']}.{r['field']} ({r['kind']})", r["count"]) for r in d["field_failures"][:12]],
                     percent=False)]
    if d["shaky"]:
        out.append(f"<p>Shaky cases (runs disagree): {_e(', '.join(d['shaky']))}</p>")
    fails = [r for r in d["results"] if not r["ok"]][:40]
    if fails:
        items = "".join(
            f"<tr><td>{_e(r['case'])}#{r['run']}</td><td>{_e(', '.join(c['name'] for c in r['calls']) or '-')}</td>"
            f"<td>{_e(_why(r))}</td></tr>" for r in fails)
        out.append(f"<details><summary>failures</summary><table><tr><th>case</th><th>calls</th><th>why</th></tr>"
                   f"{items}</table></details>")
    return "".join(out)


def _why(result: Mapping[str, Any]) -> str:
    reasons = [" ".join(str(x) for x in (e["kind"], e["field"]) if x) for e in result["errors"]]
    return "; ".join(reasons) or str(result["model_error"] or "")


def _schema_html(d: Mapping[str, Any]) -> str:
    lines = "".join(f"<li>{_e(x)}</li>" for x in d["diagnosis"])
    return (f"<h2>Schema: {d['rejected']} of {d['checked']} calls rejected</h2>"
            + bar_chart("validator rejections per field", [(f"{r['tool']}.{r['field']}", r["count"])
                                                           for r in d["per_field"][:12]], percent=False)
            + f"<ul>{lines}</ul>")


def _recovery_html(d: Mapping[str, Any]) -> str:
    s = d["summary"]
    return (f"<h2>Recovery: {_e(d['model'])} ({_e(d['error_format'])} errors): {s['passed']}/{s['total']}, "
            f"macro {100 * s['macro_accuracy']:.1f}%</h2>"
            + bar_chart("accuracy per error class", [(c, v["accuracy"]) for c, v in d["per_class"].items()],
                        max_value=1)
            + matrix_chart("confusion: expected (rows) x observed (columns)", d["confusion"]))


def _bfcl_html(d: Mapping[str, Any]) -> str:
    return "<h2>BFCL v4</h2>" + bar_chart(
        "accuracy per category", [(c, v["accuracy"] or 0.0) for c, v in d["per_category"].items()], max_value=1)


def _partial_html(report: Mapping[str, Any]) -> str:
    note = partial_note(report)
    return f"<p class='partial'><strong>{_e(note)}</strong></p>" if note else ""


def render_html(reports: Iterable[Mapping[str, Any]], title: str = "toolproof eval") -> str:
    """One self-contained page: inline CSS and SVG, no scripts, no external resources."""
    sections = {"selection": _selection_html, "schema": _schema_html, "recovery": _recovery_html, "bfcl": _bfcl_html}
    return html_page(title, "".join(_partial_html(r) + sections[r["kind"]](r) for r in reports))


def html_page(title: str, body: str) -> str:
    """The report page around `body` (HTML already escaped): the one style every toolproof report uses."""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
            f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>{body}</body></html>\n")


# --------------------------------------------------------------------------------------------- compare


@dataclass(frozen=True, slots=True)
class Delta:
    metric: str
    base: float
    new: float
    higher_is_better: bool = True

    @property
    def change(self) -> float:
        return self.new - self.base

    def regressed(self, threshold: float) -> bool:
        worse = -self.change if self.higher_is_better else self.change
        return worse > threshold


def metrics(report: Mapping[str, Any]) -> dict[str, tuple[float, bool]]:
    """The comparable numbers of one report: name -> (value, higher is better)."""
    kind = report["kind"]
    out: dict[str, tuple[float, bool]] = {}
    if kind == "selection":
        for k, v in report["summary"].items():
            out[f"selection.{k}"] = (_rate(v), k != "model_errors")
        for tag, v in report["per_tag"].items():
            out[f"selection.tag.{tag}.pass_at_1"] = (_rate(v["pass_at_1"]), True)
    elif kind == "recovery":
        out["recovery.accuracy"] = (report["summary"]["accuracy"], True)
        out["recovery.macro_accuracy"] = (report["summary"]["macro_accuracy"], True)
        for c, v in report["per_class"].items():
            out[f"recovery.class.{c}"] = (v["accuracy"], True)
    elif kind == "schema":
        out["schema.rejection_rate"] = (report["rejected"] / report["checked"] if report["checked"] else 0.0, False)
    elif kind == "bfcl":
        for c, v in report["per_category"].items():
            if v["accuracy"] is not None:
                out[f"bfcl.{c}"] = (v["accuracy"], True)
    return out


def compare(base: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[Delta]:
    """Deltas for every metric present in both results (matched by kind, in order)."""
    b: dict[str, tuple[float, bool]] = {}
    n: dict[str, tuple[float, bool]] = {}
    for r in base:
        b.update(metrics(r))
    for r in new:
        n.update(metrics(r))
    return [Delta(k, b[k][0], n[k][0], b[k][1]) for k in b if k in n]


def print_compare(deltas: Sequence[Delta], threshold: float, console: Console | None = None) -> bool:
    """Print the deltas; True when any metric regressed by more than `threshold` (absolute)."""
    console = console or Console()
    t = Table(title=f"compare (regression: worse by more than {threshold:g})")
    for col in ("metric", "base", "new", "change"):
        t.add_column(col, justify="right" if col != "metric" else "left")
    regressed = False
    for d in deltas:
        bad = d.regressed(threshold)
        regressed |= bad
        style = "red" if bad else ("green" if (d.change > 0) == d.higher_is_better and d.change else "")
        change = f"{d.change:+.3f}"
        t.add_row(d.metric, f"{d.base:.3f}", f"{d.new:.3f}", f"[{style}]{change}[/]" if style else change)
    console.print(t)
    return regressed
