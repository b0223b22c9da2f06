"""HTML for the inbox: escaped text, one layout, tables and inline SVG bars. No template engine, no CDN."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any, Final

NAV: Final = (("/approvals", "Approvals"), ("/stops", "Stops & unknown outcomes"), ("/audit", "Audit trail"),
              ("/dashboard", "Dashboard"))

CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:10px 20px;display:flex;gap:18px;align-items:center}
header a{color:#cfd8ea;text-decoration:none}header a.on{color:#fff;font-weight:600}
header .who{margin-left:auto;font-size:12px;color:#cfd8ea}
main{padding:16px 20px;max-width:1200px}h1{font-size:20px;margin:6px 0 14px}h2{font-size:16px;margin:22px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff;margin-bottom:12px}
th,td{border-bottom:1px solid #e3e6ec;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#eef1f6;font-weight:600}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{margin:0;white-space:pre-wrap;word-break:break-all}
form.inline{display:inline-flex;gap:4px;margin:2px 0}input[type=text]{padding:3px 6px}
button{padding:3px 10px;border:1px solid #888;border-radius:4px;background:#fff;cursor:pointer}
button.ok{background:#1f7a3a;color:#fff;border-color:#1f7a3a}button.no{background:#a52a2a;color:#fff;border-color:#a52a2a}
.flash{padding:8px 12px;border-radius:4px;margin-bottom:12px;background:#e8f4ea}.flash.err{background:#fbe9e9}
.exception{border-left:3px solid #a52a2a;background:#fff;padding:4px 10px;margin:8px 0}
.muted{color:#6b7385}.pill{padding:1px 6px;border-radius:8px;background:#eef1f6;font-size:12px}
"""

# Polling: reload when the data behind the page changed and the operator is not typing.
POLL_JS: Final = """
(function(){var v=null;setInterval(function(){fetch('/api/version',{credentials:'same-origin'})
.then(function(r){return r.text()}).then(function(t){if(v===null){v=t;return}
var a=document.activeElement;var typing=a&&a.tagName==='INPUT'&&a.value;if(t!==v&&!typing){location.reload()}})
.catch(function(){})},2000)})();
"""


def e(value: Any) -> str:
    """Escaped text of any value (None shows as an empty cell)."""
    return "" if value is None else escape(str(value), quote=True)


def when(at: float | None) -> str:
    if at is None:
        return ""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def as_json(value: Any) -> str:
    """A value as indented JSON in a <pre>, escaped."""
    return f"<pre>{e(json.dumps(value, indent=1, ensure_ascii=False, default=str))}</pre>"


def page(title: str, path: str, body: str, *, operator: str, flash: str = "", error: bool = False) -> str:
    nav = "".join(f'<a href="{href}"{" class=on" if path.startswith(href) else ""}>{e(text)}</a>'
                  for href, text in NAV)
    note = f'<div class="flash{" err" if error else ""}" role="status">{e(flash)}</div>' if flash else ""
    who = f'<span class="who">operator: {e(operator) or "—"}</span>'
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(title)} · toolproof inbox</title>"
            f"<style>{CSS}</style></head><body><header><strong>toolproof inbox</strong>{nav}{who}</header>"
            f"<main><h1>{e(title)}</h1>{note}{body}</main><script>{POLL_JS}</script></body></html>")


def table(columns: Sequence[str], rows: Iterable[Sequence[str]], *, empty: str, test_id: str = "") -> str:
    """A table of cells that are already HTML (escape with `e`)."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="muted" data-testid="{e(test_id)}-empty">{e(empty)}</p>'
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    return f'<table data-testid="{e(test_id)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def form(action: str, csrf: str, fields: str, button: str, *, css: str = "", label: str = "") -> str:
    """A POST form carrying the CSRF token."""
    return (f'<form class="inline" method="post" action="{e(action)}"><input type="hidden" name="csrf" '
            f'value="{e(csrf)}">{fields}<button type="submit" class="{css}" aria-label="{e(label or button)}">'
            f"{e(button)}</button></form>")


def text_input(name: str, placeholder: str, *, value: str = "", required: bool = False) -> str:
    return (f'<input type="text" name="{e(name)}" placeholder="{e(placeholder)}" value="{e(value)}"'
            f'{" required" if required else ""}>')


def bars(title: str, counts: Sequence[tuple[str, int, int]]) -> str:
    """Inline SVG: one row per label, calls in grey and failures in red on top."""
    if not counts:
        return '<p class="muted">No calls recorded yet.</p>'
    top = max(total for _, total, _ in counts) or 1
    height, width, left = 22 * len(counts) + 10, 640, 180
    rows = []
    for i, (label, total, failed) in enumerate(counts):
        y = 5 + 22 * i
        w_all, w_bad = (width - left - 140) * total / top, (width - left - 140) * failed / top
        rows.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{e(label)}</text>'
                    f'<rect x="{left}" y="{y}" width="{w_all:.1f}" height="16" fill="#b8c2d6"/>'
                    f'<rect x="{left}" y="{y}" width="{w_bad:.1f}" height="16" fill="#c0392b"/>'
                    f'<text x="{left + w_all + 6:.1f}" y="{y + 13}">{total} / {failed} failed</text>')
    return (f'<svg role="img" aria-label="{e(title)}" width="{width}" height="{height}" '
            f'font-size="12" xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>')
