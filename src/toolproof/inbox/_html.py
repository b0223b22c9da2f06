"""HTML for the inbox: escaped text, one layout, tables, argument tables, times and inline SVG bars. No template
engine, no CDN."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any, Final
from urllib.parse import urlencode

from ..contract._redaction import redact_text

NAV: Final = (("/approvals", "Approvals"), ("/stops", "Stops & unknown outcomes"), ("/audit", "Audit trail"),
              ("/dashboard", "Dashboard"))

CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:10px 20px;display:flex;gap:18px;align-items:center}
header a{color:#cfd8ea;text-decoration:none}header a.on{color:#fff;font-weight:600}
header .who{margin-left:auto;font-size:12px;color:#cfd8ea}
main{padding:16px 20px;max-width:1280px}h1{font-size:20px;margin:6px 0 14px}h2{font-size:16px;margin:22px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff;margin-bottom:12px}
th,td{border-bottom:1px solid #e3e6ec;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#eef1f6;font-weight:600}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{margin:0;white-space:pre-wrap;word-break:break-all}
table.args{width:auto;margin:0;background:transparent}table.args th,table.args td{padding:1px 6px;border:0;
background:transparent;font-weight:400}table.args th{color:#6b7385}.num,time{white-space:nowrap}
form.inline{display:inline-flex;gap:4px;margin:2px 0;flex-wrap:wrap}input[type=text]{padding:3px 6px}
button,.button{padding:3px 10px;border:1px solid #888;border-radius:4px;background:#fff;cursor:pointer;
color:inherit;text-decoration:none}
button.ok{background:#1f7a3a;color:#fff;border-color:#1f7a3a}button.no{background:#a52a2a;color:#fff;border-color:#a52a2a}
.flash{padding:8px 12px;border-radius:4px;margin-bottom:12px;background:#e8f4ea}.flash.err{background:#fbe9e9}
.exception{border-left:3px solid #a52a2a;background:#fff;padding:4px 10px;margin:8px 0}
.muted{color:#6b7385}.pill{padding:1px 6px;border-radius:8px;background:#eef1f6;font-size:12px;white-space:nowrap}
.pill.soon{background:#fbe9e9;color:#a52a2a}.count{margin:6px 0;color:#4a5163}.pager{margin:6px 0 16px}
#changed{display:none;position:fixed;bottom:12px;right:12px;background:#1d2330;color:#fff;padding:8px 12px;
border-radius:4px}#changed button{margin-left:8px}
"""

# Live pages: the page carries the version of the data it shows (so a change in its first seconds is seen);
# a poll compares, and reloads unless the operator is typing or has ticked boxes, who gets a banner instead.
# Times are shown in UTC by the server and in the reader's own zone by this script (`time[data-at]`).
LIVE_JS: Final = """
(function(){var m=document.querySelector('meta[name=toolproof-version]');var v=m?m.content:null;
function busy(){var a=document.activeElement;if(a&&a.tagName==='INPUT'&&a.type==='text'&&a.value)return true;
return document.querySelectorAll('input[type=checkbox]:checked').length>0}
function local(){document.querySelectorAll('time[data-at]').forEach(function(t){var d=new Date(1000*t.dataset.at);
t.title=t.textContent;var l=t.parentNode.querySelector('.local');if(l)l.textContent=d.toLocaleString()})}
local();if(v===null)return;setInterval(function(){fetch('/api/version',{credentials:'same-origin'})
.then(function(r){return r.text()}).then(function(t){if(t===v)return;if(busy()){document.getElementById('changed')
.style.display='block'}else{location.reload()}}).catch(function(){})},2000)})();
"""

#: What the bulk form asks before approving several requests at once.
CONFIRM_BULK: Final = ("var n=document.querySelectorAll('input[name=rid]:checked').length,"
                       "h=document.querySelectorAll('input[name=rid][data-risk=high]:checked').length;"
                       "return confirm('Approve '+n+' request(s) at once'+(h?', '+h+' of them high-risk':'')+'? "
                       "Each runs when its agent makes the call again.')")


def e(value: Any) -> str:
    """Escaped text of any value (None shows as an empty cell)."""
    return "" if value is None else escape(str(value), quote=True)


def when(at: float | None) -> str:
    """A unix time as RFC 3339 in UTC (seconds)."""
    if at is None:
        return ""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def moment(at: float | None) -> str:
    """A time for a person: UTC from the server, the reader's local time filled in by the page's script."""
    if at is None:
        return ""
    return (f'<time data-at="{at:.3f}" datetime="{when(at)}">{e(when(at))}</time>'
            '<br><span class="local muted"></span>')


def span(seconds: float) -> str:
    """A duration as a person reads it: 45 s, 12 min, 3 h 5 min, 2 d 4 h."""
    s = int(abs(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def shown(value: Any) -> Any:
    """A value as it may be shown: every string through the one redaction rule for free text (URL passwords,
    tokens), whatever the store holds."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown(v) for v in value]
    return value


def as_json(value: Any) -> str:
    """A value as indented JSON in a <pre>, redacted and escaped."""
    return f"<pre>{e(json.dumps(shown(value), indent=1, ensure_ascii=False, default=str))}</pre>"


def args_table(value: Any) -> str:
    """Arguments as a person checks them before approving: one row per field, a number never split across
    lines and large ones also grouped by thousands (22000 reads 22,000), nested values as JSON."""
    if not isinstance(value, Mapping) or not value:
        return as_json(value)
    rows = "".join(f"<tr><th>{e(k)}</th><td>{_arg(v)}</td></tr>" for k, v in value.items())
    return f'<table class="args" data-testid="args">{rows}</table>'


def _arg(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return f"<code>{e(json.dumps(v))}</code>"
    if isinstance(v, int | float):
        grouped = f' <span class="muted">({v:,})</span>' if abs(v) >= 10_000 else ""
        return f'<span class="num"><code class="num">{e(v)}</code>{grouped}</span>'
    if isinstance(v, str):
        return f"<code>{e(redact_text(v))}</code>"
    return as_json(v)


def page(title: str, path: str, body: str, *, operator: str, flash: str = "", error: bool = False,
         version: str | None = None) -> str:
    nav = "".join(f'<a href="{href}"{" class=on" if path.startswith(href) else ""}>{e(text)}</a>'
                  for href, text in NAV)
    note = f'<div class="flash{" err" if error else ""}" role="status">{e(flash)}</div>' if flash else ""
    who = f'<span class="who" data-testid="operator">operator: {e(operator) or "—"}</span>'
    meta = f'<meta name="toolproof-version" content="{e(version)}">' if version else ""
    changed = ('<div id="changed" role="status">This page has changed. '
               '<button type="button" onclick="location.reload()">Reload</button></div>')
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>{meta}<title>{e(title)} · toolproof inbox"
            f"</title><style>{CSS}</style></head><body><header><strong>toolproof inbox</strong>{nav}{who}</header>"
            f"<main><h1>{e(title)}</h1>{note}{body}</main>{changed}<script>{LIVE_JS}</script></body></html>")


def table(columns: Sequence[str], rows: Iterable[Sequence[str]], *, empty: str, test_id: str = "") -> str:
    """A table of cells that are already HTML (escape with `e`)."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="muted" data-testid="{e(test_id)}-empty">{e(empty)}</p>'
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    return f'<table data-testid="{e(test_id)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def counted(what: str, start: int, end: int, total: int, *, test_id: str, order: str = "") -> str:
    """'Showing 101–200 of 267 pending': a list that is cut says so, and where this page sits."""
    if total == 0:
        return ""
    where = f"{start + 1:,}–{end:,} of {total:,}" if (start, end) != (0, total) else f"all {total:,}"
    return f'<p class="count" data-testid="{e(test_id)}-count">Showing {where} {e(what)}{e(order)}.</p>'


def pager(path: str, params: Mapping[str, str], cursor_name: str, next_cursor: str | None, at_start: bool,
          *, test_id: str) -> str:
    """Links to the first page and to the next one (keyset: a page deep in the list costs what the first does)."""
    keep = {k: v for k, v in params.items() if v and k != cursor_name}
    links = []
    if not at_start:
        links.append(f'<a class="button" href="{e(path + _query(keep))}" data-testid="{e(test_id)}-first">« First</a>')
    if next_cursor is not None:
        url = path + _query({**keep, cursor_name: next_cursor})
        links.append(f'<a class="button" href="{e(url)}" data-testid="{e(test_id)}-next" rel="next">Next »</a>')
    return f'<p class="pager">{" ".join(links)}</p>' if links else ""


def _query(params: Mapping[str, str]) -> str:
    return "?" + urlencode(params) if params else ""


def form(action: str, csrf: str, fields: str, button: str, *, css: str = "", label: str = "",
         confirm: str = "") -> str:
    """A POST form carrying the CSRF token; `confirm` asks the operator first (a bulk or a high-risk decision)."""
    ask = f' onsubmit="return confirm({e(json.dumps(confirm))})"' if confirm else ""
    return (f'<form class="inline" method="post" action="{e(action)}"{ask}><input type="hidden" name="csrf" '
            f'value="{e(csrf)}">{fields}<button type="submit" class="{css}" aria-label="{e(label or button)}">'
            f"{e(button)}</button></form>")


def text_input(name: str, placeholder: str, *, value: str = "", required: bool = False, title: str = "") -> str:
    hint = f' title="{e(title)}"' if title else ""
    return (f'<input type="text" name="{e(name)}" placeholder="{e(placeholder)}" value="{e(value)}"'
            f' aria-label="{e(placeholder)}"{hint}{" required" if required else ""}>')


def bars(title: str, counts: Sequence[tuple[str, int, int]]) -> str:
    """Inline SVG: one row per label, calls in grey and failures in red on top."""
    if not counts:
        return '<p class="muted">No calls recorded yet.</p>'
    top = max(total for _, total, _ in counts) or 1
    height, width, left = 22 * len(counts) + 10, 680, 180
    rows = []
    for i, (label, total, failed) in enumerate(counts):
        y = 5 + 22 * i
        w_all, w_bad = (width - left - 180) * total / top, (width - left - 180) * failed / top
        rows.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{e(label)}</text>'
                    f'<rect x="{left}" y="{y}" width="{w_all:.1f}" height="16" fill="#b8c2d6"/>'
                    f'<rect x="{left}" y="{y}" width="{w_bad:.1f}" height="16" fill="#c0392b"/>'
                    f'<text x="{left + w_all + 6:.1f}" y="{y + 13}">{total:,} / {failed:,} failed</text>')
    return (f'<svg role="img" aria-label="{e(title)}" width="{width}" height="{height}" '
            f'font-size="12" xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>')
