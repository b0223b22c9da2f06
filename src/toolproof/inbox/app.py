"""The inbox's routes: each page reads the store, each POST calls the library function the CLI calls."""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Final
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ..approvals import AlreadyDecided, ApprovalNotFound, approve_many, decide, list_requests
from ..contract.context import new_call_id
from ..contract.errors import ToolError
from ..contract.redaction import redact_text
from ..journal.journal import Journal
from ..stores.base import Store
from ..stores.records import AuditRecord, StopRecord
from .html import as_json, bars, e, form, page, table, text_input, when
from .security import OPERATOR_COOKIE, Guard, csrf_ok

AUDIT_WINDOW: Final = 5_000  # the newest audit rows the search and the dashboard look at


def create_app(store: Store, *, allowed_hosts: frozenset[str] = frozenset({"127.0.0.1", "localhost"}),
               token: str | None = None) -> Starlette:
    """The inbox over one store (closed by the caller)."""
    views = Views(store)
    routes = [
        Route("/", lambda r: RedirectResponse("/approvals", status_code=303)),
        Route("/approvals", views.approvals), Route("/approvals/bulk", views.bulk, methods=["POST"]),
        Route("/approvals/{rid}/{verdict}", views.decide, methods=["POST"]),
        Route("/operator", views.operator, methods=["POST"]),
        Route("/stops", views.stops), Route("/stops/{stop_id}/resolve", views.resolve, methods=["POST"]),
        Route("/journal/{key}/reconcile", views.reconcile, methods=["POST"]),
        Route("/audit", views.audit), Route("/audit/call/{call_id}", views.call),
        Route("/dashboard", views.dashboard), Route("/api/version", views.version),
    ]
    return Starlette(routes=routes, middleware=[Middleware(Guard, allowed_hosts=allowed_hosts, token=token)])


def operator_of(request: Request) -> str:
    return request.cookies.get(OPERATOR_COOKIE, "").strip()


class Views:
    """One method per page or action; the store is the only state."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def render(self, request: Request, title: str, body: str, *, flash: str = "", error: bool = False,
               status: int = 200) -> HTMLResponse:
        flash = flash or request.query_params.get("flash", "")
        error = error or request.query_params.get("err") == "1"
        html = page(title, request.url.path, body, operator=operator_of(request), flash=flash, error=error)
        return HTMLResponse(html, status_code=status)

    # --- approvals ----------------------------------------------------------------------------------------
    def approvals(self, request: Request, flash: str = "", status: int = 200) -> HTMLResponse:
        csrf, now = request.state.csrf, time.time()
        who = form("/operator", csrf, text_input("name", "your name", value=operator_of(request), required=True),
                   "Sign as", label="sign")
        pending = [(f'<input type="checkbox" name="rid" value="{e(r.id)}" form="bulk" aria-label="select {e(r.id)}">'
                    f" <code>{e(r.id)}</code>", e(r.tool), as_json(r.arguments), e(r.reason),
                    e(f"{r.principal or '-'} in {r.conversation_id or '-'}"), e(when(r.expires_at)),
                    form(f"/approvals/{r.id}/approve", csrf, text_input("note", "note (optional)"), "Approve",
                         css="ok", label=f"approve {r.id}")
                    + form(f"/approvals/{r.id}/deny", csrf, text_input("note", "why (required)", required=True),
                           "Deny", css="no", label=f"deny {r.id}"))
                   for r in list_requests(self.store, "pending", 200)]
        decided = [(f"<code>{e(r.id)}</code>", e(r.tool), f'<span class="pill">{e(r.status_at(now))}</span>',
                    e(r.decided_by), e(when(r.decided_at)), e(r.note))
                   for r in self.store.approval_list(limit=30) if r.status_at(now) != "pending"]
        bulk = ('<form id="bulk" class="inline" method="post" action="/approvals/bulk">'
                f'<input type="hidden" name="csrf" value="{e(csrf)}">{text_input("note", "note (optional)")}'
                '<button type="submit" class="ok" aria-label="approve selected">Approve selected</button></form>')
        body = (f"<p>{who}</p>" + (f"<p>{bulk}</p>" if pending else "")
                + table(("request", "tool", "arguments", "why gated", "asked by", "expires", "decide"), pending,
                        empty="Nothing waits for approval.", test_id="pending")
                + "<h2>Recently decided</h2>"
                + table(("request", "tool", "status", "by", "at", "note"), decided, empty="No decisions yet.",
                        test_id="decided"))
        return self.render(request, "Pending approvals", body, flash=flash, error=status != 200, status=status)

    async def operator(self, request: Request) -> Response:
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return PlainTextResponse("CSRF check failed", status_code=403)
        response = RedirectResponse("/approvals", status_code=303)
        response.set_cookie(OPERATOR_COOKIE, _field(data, "name")[:80], httponly=True, samesite="strict")
        return response

    async def decide(self, request: Request) -> Response:
        rid, verdict = request.path_params["rid"], request.path_params["verdict"]
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return PlainTextResponse("CSRF check failed", status_code=403)
        by, note = operator_of(request), _field(data, "note")
        if verdict not in ("approve", "deny"):
            return PlainTextResponse("unknown decision", status_code=404)
        if not by or (verdict == "deny" and not note):
            why = "Sign with your name first." if not by else "A denial needs a note saying why."
            return self.approvals(request, flash=why, status=422)
        try:
            done = await run_in_threadpool(decide, self.store, rid, approve=verdict == "approve", by=by, note=note)
        except AlreadyDecided as exc:
            return self.approvals(request, flash=f"Not applied: {exc}", status=409)
        except ApprovalNotFound as exc:
            return self.approvals(request, flash=str(exc), status=404)
        return _back("/approvals", f"{done.id}: {done.status} by {done.decided_by}")

    async def bulk(self, request: Request) -> Response:
        """Approve the ticked requests, each decided once and audited on its own (`approve_many`)."""
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return PlainTextResponse("CSRF check failed", status_code=403)
        by = operator_of(request)
        ids = [v.strip() for v in data.getlist("rid") if isinstance(v, str) and v.strip()]
        if not by or not ids:
            why = "Sign with your name first." if not by else "Tick the requests to approve."
            return self.approvals(request, flash=why, status=422)
        done = await run_in_threadpool(lambda: approve_many(self.store, ids, by=by, note=_field(data, "note")))
        applied = [d.id for d in done if not isinstance(d, Exception)]
        refused = [str(d) for d in done if isinstance(d, Exception)]
        said = f"approved by {by}: {', '.join(applied) or 'none'}" + "".join(f"; not applied: {r}" for r in refused)
        return _back("/approvals", said, error=bool(refused))

    # --- stops and unknown outcomes --------------------------------------------------------------------------
    def stops(self, request: Request) -> HTMLResponse:
        csrf = request.state.csrf
        stops = [(f'<a href="/audit/call/{quote(s.call_id)}"><code>{e(s.id)}</code></a>', e(when(s.at)), e(s.tool),
                  e(f"{s.error_class} / {s.code}"), e(s.message),
                  e(s.effect_status), as_json(s.arguments),
                  form(f"/stops/{s.id}/resolve", csrf, text_input("note", "what you found and did", required=True)
                       + _effect_select(), "Resolve", label=f"resolve {s.id}"))
                 for s in self.store.list_stops(resolved=False, limit=200)]
        unknown = [(f"<code>{e(i.key)}</code>", e(when(i.created_at)), e(i.tool), as_json(i.arguments),
                    e(f"{i.principal or '-'} in {i.conversation_id or '-'}"),
                    form(f"/journal/{i.key}/reconcile", csrf, '<input type="hidden" name="outcome" value="done">'
                         + text_input("evidence", "evidence (e.g. the order id)", required=True)
                         + text_input("note", "note"), "It happened", css="ok", label=f"done {i.key}")
                    + form(f"/journal/{i.key}/reconcile", csrf, '<input type="hidden" name="outcome" value="not_done">'
                           + text_input("note", "note", required=True), "It did not happen",
                           css="no", label=f"not done {i.key}"))
                   for i in Journal(self.store).list("unknown", 200)]
        body = (table(("stop", "at", "tool", "class / code", "message", "effect", "arguments", "resolve"), stops,
                      empty="No open stop records.", test_id="stops")
                + "<h2>Writes whose outcome is unknown</h2>"
                + table(("key", "since", "tool", "arguments", "asked by", "reconcile"), unknown,
                        empty="No write has an unknown outcome.", test_id="unknown"))
        return self.render(request, "Stop records and unknown outcomes", body)

    async def resolve(self, request: Request) -> Response:
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return PlainTextResponse("CSRF check failed", status_code=403)
        stop_id, note, effect = request.path_params["stop_id"], _field(data, "note"), _field(data, "effect") or None
        by = operator_of(request)
        if not by or not note or effect not in (None, "done", "not_done", "unknown"):
            return _back("/stops", "Sign with your name, say what you found, pick a known effect.", error=True)
        resolved = await run_in_threadpool(resolve_stop, self.store, stop_id, by, note, effect)
        return _back("/stops", f"{stop_id}: resolved" if resolved else f"no open stop {stop_id}", error=not resolved)

    async def reconcile(self, request: Request) -> Response:
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return PlainTextResponse("CSRF check failed", status_code=403)
        key, outcome, by = request.path_params["key"], _field(data, "outcome"), operator_of(request)
        if not by or outcome not in ("done", "not_done"):
            return _back("/stops", "Sign with your name first.", error=True)
        note = f"{_field(data, 'note') or 'reconciled'} (by {by} in the inbox)"
        evidence = _evidence(_field(data, "evidence"))
        try:
            done = outcome == "done"
            await run_in_threadpool(lambda: Journal(self.store).reconcile(
                key, "done" if done else "not_done", result=evidence if done else None, note=note))
        except ToolError as exc:
            return _back("/stops", exc.message, error=True)
        return _back("/stops", f"{key}: reconciled as {outcome.replace('_', ' ')}")

    # --- the audit trail and the dashboard -----------------------------------------------------------------------
    def audit(self, request: Request) -> HTMLResponse:
        q = {k: request.query_params.get(k, "").strip() for k in ("conversation", "tool", "error_class", "since")}
        rows = [r for r in self.store.list_audit(limit=AUDIT_WINDOW, tool=q["tool"] or None) if _matches(r, q)][:200]
        fields = "".join(text_input(k, k.replace("_", " "), value=v) for k, v in q.items())
        search = f'<form method="get" action="/audit" class="inline">{fields}<button>Search</button></form>'
        shown = [(e(when(r.at)), f'<a href="/audit/call/{quote(r.call_id)}">{e(r.call_id)}</a>', e(r.tool),
                  e(r.outcome), e(r.error_class), e(r.code), e(r.principal), e(r.conversation_id))
                 for r in rows]
        body = search + table(("at", "call", "tool", "outcome", "class", "code", "principal", "conversation"), shown,
                              empty="No audit record matches.", test_id="audit")
        return self.render(request, "Audit trail", body)

    def call(self, request: Request) -> HTMLResponse:
        """One call on one page: every attempt's audit record and any stop record, each with the tool's own
        exception and traceback (redacted when stored) for its developer."""
        call_id = request.path_params["call_id"]
        rows = [r for r in self.store.list_audit(limit=AUDIT_WINDOW) if r.call_id == call_id]
        attempts = "".join(f"<h2>attempt {r.attempt}: {e(r.outcome)}</h2>" + as_json(_record(r)) + exception_block(r)
                           for r in reversed(rows))
        stops = "".join(f"<h2>stop {e(s.id)}: {e(s.reason)}, effect {e(s.effect_status)}</h2>"
                        + as_json(_record(s)) + exception_block(s)
                        for s in self.store.list_stops(call_id=call_id, limit=20))
        body = attempts + stops
        return self.render(request, f"Call {call_id}", body or '<p class="muted">No record of this call.</p>')

    def dashboard(self, request: Request) -> HTMLResponse:
        records = self.store.list_audit(limit=AUDIT_WINDOW)
        by_tool, by_class = _counts(records, lambda r: r.tool), _counts(records, lambda r: r.error_class or "ok")
        fields = [(e(tool), e(field), f"<code>{e(version)}</code>", e(count))
                  for tool, field, version, count in self.store.field_failures()[:100]]
        body = (f'<p class="muted">The newest {len(records)} audit records.</p><h2>Calls and failures per tool</h2>'
                + bars("calls and failures per tool", by_tool) + "<h2>Outcomes per error class</h2>"
                + bars("outcomes per class", by_class) + "<h2>Validation failures per field and schema version</h2>"
                + table(("tool", "field", "schema version", "failures"), fields, empty="No validation failures.",
                        test_id="fields"))
        return self.render(request, "Dashboard", body)

    def version(self, request: Request) -> PlainTextResponse:
        """A digest of what the pages show; the pages poll it and reload when it changes."""
        parts = [(r.id, r.status) for r in self.store.approval_list(limit=200)]
        stops = [s.id for s in self.store.list_stops(resolved=False, limit=200)]
        latest = [r.at for r in self.store.list_audit(limit=1)]
        text = json.dumps([parts, stops, latest, len(Journal(self.store).list("unknown", 200))])
        return PlainTextResponse(hashlib.sha256(text.encode()).hexdigest()[:16])


def resolve_stop(store: Store, stop_id: str, by: str, note: str, effect: str | None) -> bool:
    """Resolve an open stop as `toolproof stops resolve` does, and audit who did it."""
    stop = store.get_stop(stop_id)
    if stop is None or stop.resolved_at is not None:
        return False
    text = redact_text(note)
    store.resolve_stop(stop_id, resolution=text, effect_status=effect)  # type: ignore[arg-type]
    store.append_audit([AuditRecord(
        at=time.time(), call_id=new_call_id(), tool=stop.tool, schema_version=None,
        arguments={"stop_id": stop_id, "note": text, "effect": effect}, validation="skipped", attempt=0,
        latency_ms=0.0, outcome="stop_resolved", conversation_id=stop.conversation_id, principal=by,
        code="STOP_RESOLVED", idempotency_key=stop.idempotency_key)])
    return True


def _field(data: Any, name: str) -> str:
    value = data.get(name)
    return value.strip() if isinstance(value, str) else ""


def _back(path: str, flash: str, *, error: bool = False) -> RedirectResponse:
    return RedirectResponse(f"{path}?flash={quote(flash)}{'&err=1' if error else ''}", status_code=303)


def _effect_select() -> str:
    options = "".join(f'<option value="{v}">{t}</option>' for v, t in (
        ("", "effect unchanged"), ("done", "effect done"), ("not_done", "effect not done"), ("unknown", "unknown")))
    return f'<select name="effect">{options}</select>'


def _evidence(text: str) -> Any:
    """What a person found (replayed to repeats of the write): JSON when it parses, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return {"evidence": text}


def _matches(r: AuditRecord, q: dict[str, str]) -> bool:
    if q["conversation"] and r.conversation_id != q["conversation"]:
        return False
    if q["error_class"] and (r.error_class or "") != q["error_class"]:
        return False
    return not q["since"] or when(r.at) >= q["since"]


def _record(r: AuditRecord | StopRecord) -> dict[str, Any]:
    """A record's fields as JSON, its time in RFC 3339; the exception is shown on its own (`exception_block`)."""
    row = {k: v for k, v in asdict(r).items() if k not in ("exception_type", "exception_message", "traceback")}
    row["at"] = when(r.at)
    if isinstance(r, StopRecord) and r.resolved_at is not None:
        row["resolved_at"] = when(r.resolved_at)
    return row


def exception_block(r: AuditRecord | StopRecord) -> str:
    """The tool's own exception as its developer reads it: type, message, the traceback as printed."""
    if r.exception_type is None:
        return ""
    return (f'<div class="exception" data-testid="exception"><p><strong>The tool raised</strong> '
            f"<code>{e(r.exception_type)}</code>: {e(r.exception_message)}</p>"
            f'<pre data-testid="traceback">{e(r.traceback)}</pre></div>')


def _counts(records: list[AuditRecord], key: Callable[[AuditRecord], str]) -> list[tuple[str, int, int]]:
    calls = [r for r in records if r.schema_version is not None]  # decisions and reconciliations are not calls
    total, failed = Counter(key(r) for r in calls), Counter(key(r) for r in calls if r.outcome != "ok")
    return [(name, n, failed[name]) for name, n in total.most_common(12)]
