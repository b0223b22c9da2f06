"""The inbox's routes: each page reads the store, each POST calls the library function the CLI calls, then
redirects (POST-redirect-GET) with a signed flash message."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any, Final, TypeVar
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ..approvals import AlreadyDecided, ApprovalNotFound, approve_many, decide
from ..catalog._toolset import Toolset
from ..contract._context import new_call_id
from ..contract._errors import ACTION_DESCRIPTIONS, CLASS_SPECS, ErrorClass, ToolError
from ..contract._redaction import redact_text
from ..contract._tool import Tool
from ..fleet import SharedState
from ..journal._journal import Journal
from ..orchestration.breaker import BreakerConfig
from ..pipeline._verify import Verdict, bound_for, settling, unverifiable
from ..stores._approval import ApprovalRequest
from ..stores._base import Store
from ..stores._intent import Intent
from ..stores._query import Page, StopGroup
from ..stores._records import AuditRecord, StopRecord
from ..stores._steps import drive, perform_io
from ._html import (
    CONFIRM_BULK,
    args_table,
    as_json,
    bars,
    counted,
    e,
    form,
    moment,
    page,
    pager,
    span,
    table,
    text_input,
    when,
)
from ._search import FIELDS, BadSearch, Search
from ._security import FLASH_COOKIE, OPERATOR_COOKIE, Guard, Signer, csrf_ok

__all__ = ["PAGE", "create_app", "outcome_kind", "resolve_stop"]

PAGE: Final = 100  # rows per page of every list (every page links the next: nothing is cut silently)
DECIDED_PAGE: Final = 30
RECOUNT_S: Final = 600.0  # the dashboard adds new records to its tally, and counts everything again this often
_T = TypeVar("_T")


def create_app(store: Store, *, allowed_hosts: frozenset[str] = frozenset({"127.0.0.1", "localhost"}),
               token: str | None = None, signer: Signer | None = None, tools: Toolset | None = None,
               shared_state: SharedState | None = None) -> Starlette:
    """The inbox over one store (closed by the caller). `signer` signs the operator and flash cookies (a new
    key per start unless given); `tools`, the agents' toolset, puts each tool's description, effect and risk
    beside its requests (a high-risk approval then asks for confirmation) and offers its verify hook for
    writes whose outcome is unknown; `shared_state`, the fleet's (closed by the caller), puts its breakers'
    states on the dashboard."""
    views = Views(store, signer or Signer(), tools, shared_state)
    routes = [
        Route("/", lambda r: RedirectResponse("/approvals", status_code=303)),
        Route("/approvals", views.approvals), Route("/approvals/bulk", views.bulk, methods=["POST"]),
        Route("/approvals/{rid}/{verdict}", views.decide, methods=["POST"]),
        Route("/operator", views.operator, methods=["POST"]),
        Route("/stops", views.stops), Route("/stops/{stop_id}/resolve", views.resolve, methods=["POST"]),
        Route("/stops/group/resolve", views.resolve_group, methods=["POST"]),
        Route("/journal/{key}/reconcile", views.reconcile, methods=["POST"]),
        Route("/journal/{key}/verify", views.verify, methods=["POST"]),
        Route("/audit", views.audit), Route("/audit/call/{call_id}", views.call), Route("/trail/{key}", views.trail),
        Route("/dashboard", views.dashboard), Route("/api/version", views.version),
    ]
    return Starlette(routes=routes, middleware=[Middleware(Guard, allowed_hosts=allowed_hosts, token=token)],
                     exception_handlers={HTTPException: views.http_error})


class Views:
    """One method per page or action; the store is the only state (the dashboard keeps a tally it extends)."""

    def __init__(self, store: Store, signer: Signer, tools: Toolset | None = None,
                 shared_state: SharedState | None = None) -> None:
        self.store, self.signer, self.shared_state = store, signer, shared_state
        self.tools = {t.name: t for t in tools} if tools is not None else {}
        self._tally: tuple[Counter[tuple[str, str | None, str | None, str]], int, float] = (Counter(), 0, 0.0)
        self._tally_lock = threading.Lock()

    # --- layout, identity, flash, errors --------------------------------------------------------------------
    def operator_of(self, request: Request) -> str:
        """Who is signed in: the name in the operator cookie, only when this server signed it."""
        return self.signer.unsign("operator", request.cookies.get(OPERATOR_COOKIE)) or ""

    def render(self, request: Request, title: str, body: str, *, flash: str = "", error: bool = False,
               status: int = 200, live: bool = True) -> HTMLResponse:
        """A page; the flash comes from the signed cookie the last action set (never from the URL)."""
        said = self._flash(request)
        if said is not None and not flash:
            flash, error = said
        version = self._version() if live else None
        html = page(title, request.url.path, body, operator=self.operator_of(request), flash=flash, error=error,
                    version=version)
        response = HTMLResponse(html, status_code=status)
        if said is not None:
            response.delete_cookie(FLASH_COOKIE)
        return response

    def _flash(self, request: Request) -> tuple[str, bool] | None:
        text = self.signer.unsign("flash", request.cookies.get(FLASH_COOKIE))
        if text is None:
            return None
        said, error = json.loads(text)
        return str(said), bool(error)

    def back(self, path: str, flash: str, *, error: bool = False) -> RedirectResponse:
        """303 to a page, which shows `flash` once (POST-redirect-GET: a reload does not resubmit)."""
        response = RedirectResponse(path, status_code=303)
        response.set_cookie(FLASH_COOKIE, self.signer.sign("flash", json.dumps([flash, error])), httponly=True,
                            samesite="strict")
        return response

    def refused(self, request: Request, title: str, text: str, status: int) -> HTMLResponse:
        """An error page in the inbox's layout, saying what happened and what was not done."""
        body = f'<p data-testid="error">{e(text)}</p><p><a href="/approvals">Back to the approvals</a></p>'
        return self.render(request, title, body, flash=text, error=True, status=status, live=False)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        if status == 404:
            return self.refused(request, "Not found", f"Nothing is at {request.url.path}.", 404)
        if status == 405:
            return self.refused(request, "Not allowed", f"{request.method} is not used at {request.url.path}.", 405)
        return self.refused(request, "Error", str(getattr(exc, "detail", "")) or "The request failed.", status)

    def forged(self, request: Request) -> HTMLResponse:
        return self.refused(request, "Refused", "Not applied: this form did not come from this inbox's own page "
                            "(CSRF check failed). Reload the page and try again.", 403)

    async def applying(self, request: Request, fn: Callable[[], _T]) -> _T | HTMLResponse:
        """Run an action on a worker thread; a store that does not answer (a write lock held by another
        process, a database away) gets a page saying it was not applied, after the store's bounded wait."""
        try:
            return await run_in_threadpool(fn)
        except Exception as exc:
            if not self.store.unreachable(exc):
                raise
            return self.refused(request, "Not applied", f"Not applied: the store did not answer ({exc}). Nothing "
                                "was changed; try again in a moment.", 503)

    # --- approvals ----------------------------------------------------------------------------------------
    def approvals(self, request: Request) -> HTMLResponse:
        """Waiting requests, the one expiring first at the top, each with the facts to decide it; then the
        decided ones, the last decided first. Both lists page on to their last row."""
        csrf, now, q = request.state.csrf, time.time(), request.query_params
        who = form("/operator", csrf, text_input("name", "your name", value=self.operator_of(request),
                                                 required=True), "Sign as", label="sign")
        waiting = self.store.approval_page(pending=True, now=now, limit=PAGE, cursor=q.get("after"))
        decided = self.store.approval_page(pending=False, now=now, limit=DECIDED_PAGE, cursor=q.get("decided"))
        rows = [_pending_row(r, csrf, now, self.tools.get(r.tool)) for r in waiting.rows]
        done = [(f'<a href="/trail/{quote(r.idempotency_key)}"><code>{e(r.id)}</code></a>', e(r.tool),
                 f'<span class="pill">{e(r.status_at(now))}</span>', e(r.decided_by),
                 moment(r.decided_at if r.decided_at is not None else r.expires_at), e(r.note))
                for r in decided.rows]
        bulk = ('<form id="bulk" class="inline" method="post" action="/approvals/bulk" '
                f'onsubmit="{e(CONFIRM_BULK)}"><input type="hidden" name="csrf" value="{e(csrf)}">'
                f'{text_input("note", "note (optional)")}<button type="submit" class="ok" '
                'aria-label="approve selected">Approve selected</button></form>')
        params = dict(q)
        body = (f"<p>{who}</p>" + (f"<p>{bulk}</p>" if rows else "")
                + counted("waiting", waiting.start, waiting.end, waiting.total, test_id="pending",
                          order=", the one expiring first at the top")
                + table(("request", "tool", "what will run", "why gated", "asked by", "asked", "expires",
                         "decide"), rows, empty="Nothing waits for approval.", test_id="pending")
                + pager("/approvals", params, "after", waiting.next, waiting.start == 0, test_id="pending")
                + "<h2>Decided and expired</h2>"
                + counted("decided or expired", decided.start, decided.end, decided.total, test_id="decided",
                          order=", the last decided first")
                + table(("request", "tool", "status", "by", "at", "note"), done, empty="No decisions yet.",
                        test_id="decided")
                + pager("/approvals", params, "decided", decided.next, decided.start == 0, test_id="decided"))
        return self.render(request, "Pending approvals", body)

    async def operator(self, request: Request) -> Response:
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return self.forged(request)
        name = _field(data, "name")[:80]
        if not name:
            return self.back("/approvals", "Sign with your name.", error=True)
        response = self.back("/approvals", f"Signed in as {name}.")
        response.set_cookie(OPERATOR_COOKIE, self.signer.sign("operator", name), httponly=True, samesite="strict")
        return response

    async def decide(self, request: Request) -> Response:
        rid, verdict = request.path_params["rid"], request.path_params["verdict"]
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return self.forged(request)
        by, note = self.operator_of(request), _field(data, "note")
        if verdict not in ("approve", "deny"):
            return self.refused(request, "Not found", f"{verdict!r} is not a decision (approve or deny).", 404)
        if not by or (verdict == "deny" and not note):
            why = "Not applied: sign with your name first." if not by else "Not applied: a denial needs a note."
            return self.back("/approvals", why, error=True)
        try:
            done = await self.applying(request, lambda: decide(self.store, rid, approve=verdict == "approve",
                                                                by=by, note=note))
        except (AlreadyDecided, ApprovalNotFound) as exc:
            return self.back("/approvals", f"Not applied: {exc}", error=True)
        if isinstance(done, HTMLResponse):
            return done
        return self.back("/approvals", f"{done.id}: {done.status} by {done.decided_by}")

    async def bulk(self, request: Request) -> Response:
        """Approve the ticked requests, each decided once and audited on its own (`approve_many`)."""
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return self.forged(request)
        by = self.operator_of(request)
        ids = [v.strip() for v in data.getlist("rid") if isinstance(v, str) and v.strip()]
        if not by or not ids:
            why = "Not applied: sign with your name first." if not by else "Tick the requests to approve."
            return self.back("/approvals", why, error=True)
        done = await self.applying(request, lambda: approve_many(self.store, ids, by=by, note=_field(data, "note")))
        if isinstance(done, HTMLResponse):
            return done
        applied = [d.id for d in done if not isinstance(d, Exception)]
        refused = [str(d) for d in done if isinstance(d, Exception)]
        said = f"approved by {by}: {', '.join(applied) or 'none'}" + "".join(f"; not applied: {r}" for r in refused)
        return self.back("/approvals", said, error=bool(refused))

    # --- stops and unknown outcomes --------------------------------------------------------------------------
    def stops(self, request: Request) -> HTMLResponse:
        """Open stops grouped when alike (one resolve for the group), then each open stop with its reason,
        attempts, who and where, and what its class means; then the writes whose outcome is unknown."""
        csrf, q = request.state.csrf, request.query_params
        groups = [g for g in self.store.stop_groups() if g.count > 1]
        listed = self.store.stop_page(limit=PAGE, cursor=q.get("after"))
        stops = [(f'<a href="/audit/call/{quote(s.call_id)}"><code>{e(s.id)}</code></a>', moment(s.at), e(s.tool),
                  f'<span class="pill">{e(s.reason)}</span>', _explained(s.error_class, s.code), e(s.attempts),
                  e(f"{s.extra.get('principal') or '-'} in {s.conversation_id or '-'}"), e(s.effect_status),
                  e(redact_text(s.message)), args_table(s.arguments) + _trail_link(s.idempotency_key),
                  form(f"/stops/{s.id}/resolve", csrf, text_input("note", "what you found and did", required=True)
                       + _effect_select(), "Resolve", label=f"resolve {s.id}"))
                 for s in listed.rows]
        unknown = _unknown_page(Journal(self.store), q.get("unknown"))
        rows = [(f'<a href="/trail/{quote(i.key)}"><code>{e(i.key)}</code></a>', moment(i.created_at), e(i.tool),
                 args_table(i.arguments), e(f"{i.principal or '-'} in {i.conversation_id or '-'}"),
                 self._verify_cell(i, csrf),
                 form(f"/journal/{i.key}/reconcile", csrf, '<input type="hidden" name="outcome" value="done">'
                      + text_input("evidence", "evidence (e.g. the order id)", required=True)
                      + text_input("note", "note"), "It happened", css="ok", label=f"done {i.key}")
                 + form(f"/journal/{i.key}/reconcile", csrf, '<input type="hidden" name="outcome" value="not_done">'
                        + text_input("note", "note", required=True), "It did not happen",
                        css="no", label=f"not done {i.key}"))
                for i in unknown.rows]
        body = ((_groups_table(groups, csrf) if groups else "")
                + "<h2>Open stop records</h2>"
                + counted("open stops", listed.start, listed.end, listed.total, test_id="stops", order=", newest first")
                + table(("stop", "at", "tool", "reason", "class / code", "attempts", "asked by", "effect", "message",
                         "arguments", "resolve"), stops, empty="No open stop records.", test_id="stops")
                + pager("/stops", dict(q), "after", listed.next, listed.start == 0, test_id="stops")
                + "<h2>Writes whose outcome is unknown</h2>"
                + counted("writes whose outcome is unknown", unknown.start, unknown.end, unknown.total,
                          test_id="unknown", order=", newest first")
                + table(("key", "since", "tool", "arguments", "asked by", "verify", "reconcile"), rows,
                        empty="No write has an unknown outcome.", test_id="unknown")
                + pager("/stops", dict(q), "unknown", unknown.next, unknown.start == 0, test_id="unknown"))
        return self.render(request, "Stop records and unknown outcomes", body)

    async def resolve(self, request: Request) -> Response:
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return self.forged(request)
        stop_id, note, effect = request.path_params["stop_id"], _field(data, "note"), _field(data, "effect") or None
        by = self.operator_of(request)
        if not by or not note or effect not in (None, "done", "not_done", "unknown"):
            return self.back("/stops", "Not applied: sign with your name, say what you found, pick a known effect.",
                             error=True)
        resolved = await self.applying(request, lambda: resolve_stop(self.store, stop_id, by, note, effect))
        if isinstance(resolved, HTMLResponse):
            return resolved
        return self.back("/stops", f"{stop_id}: resolved" if resolved else f"no open stop {stop_id}",
                         error=not resolved)

    async def resolve_group(self, request: Request) -> Response:
        """Resolve every open stop alike (tool, class, code, reason) with one note, each audited on its own."""
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return self.forged(request)
        key = (_field(data, "tool"), _field(data, "error_class"), _field(data, "code"), _field(data, "reason"))
        note, effect, by = _field(data, "note"), _field(data, "effect") or None, self.operator_of(request)
        if not by or not note or effect not in (None, "done", "not_done", "unknown"):
            return self.back("/stops", "Not applied: sign with your name, say what you found, pick a known effect.",
                             error=True)

        def resolve_all() -> int:
            count = 0
            while batch := self.store.stop_page(limit=500, group=key).rows:
                count += sum(resolve_stop(self.store, s.id, by, note, effect) for s in batch)
            return count

        count = await self.applying(request, resolve_all)
        if isinstance(count, HTMLResponse):
            return count
        return self.back("/stops", f"{count} stops of {key[0]} ({key[2]}, {key[3]}): resolved")

    async def reconcile(self, request: Request) -> Response:
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return self.forged(request)
        key, outcome, by = request.path_params["key"], _field(data, "outcome"), self.operator_of(request)
        if not by or outcome not in ("done", "not_done"):
            return self.back("/stops", "Not applied: sign with your name first.", error=True)
        note = f"{_field(data, 'note') or 'reconciled'} (by {by} in the inbox)"
        evidence = _evidence(_field(data, "evidence"))
        done = outcome == "done"
        try:
            applied = await self.applying(request, lambda: Journal(self.store).reconcile(
                key, "done" if done else "not_done", result=evidence if done else None, note=note))
        except ToolError as exc:
            return self.back("/stops", exc.message, error=True)
        if isinstance(applied, HTMLResponse):
            return applied
        return self.back("/stops", f"{key}: reconciled as {outcome.replace('_', ' ')}")

    async def verify(self, request: Request) -> Response:
        """Ask the entry's tool's verify hook, as `toolproof journal verify` does: done or not done settles the
        entry (the journal's reconcile: stop records resolved, audited); cannot tell leaves it unknown. Who
        asked and what verify said is an audit row of its own; the flash says it right away."""
        data = await request.form()
        if not csrf_ok(request, _field(data, "csrf")):
            return self.forged(request)
        key, by = request.path_params["key"], self.operator_of(request)
        if not by:
            return self.back("/stops", "Not applied: sign with your name first.", error=True)
        found = await self.applying(request, lambda: self._verified(key, by))
        if isinstance(found, HTMLResponse):
            return found
        if isinstance(found, str):
            return self.back("/stops", f"Not applied: {found}", error=True)
        said = {"done": "settled as done: repeats get the verified result",
                "not_done": "released: the next identical call is sent again",
                "unknown": "still unknown: check its system, then reconcile it below"}[found.said]
        return self.back("/stops", f"{key}: verify said {_said(found.said)} ({redact_text(found.evidence)}); {said}",
                         error=found.said == "unknown")

    def _verified(self, key: str, by: str) -> Verdict | str:
        """What verify said of one unknown entry (audited), or why it was not asked."""
        journal = Journal(self.store)
        entry = journal.show(key)
        if entry is not None and entry.status == "in_flight" and entry.lease_until < journal.now():
            journal.expire()
            entry = journal.show(key)
        if entry is None:
            return f"no journal entry has the key {key}"
        if entry.status != "unknown":
            return f"the entry {key} is {entry.status}, not unknown: nothing to verify"
        tool, why = self._hook(entry)
        if tool is None:
            return why
        try:
            found: Verdict = drive(settling(journal, tool, entry, bound_for(tool, entry)), perform_io)
        except ToolError as exc:  # arguments that no longer validate, or settled by someone else meanwhile
            found = Verdict("unknown", f"verify was not applied: {exc.message}")
        evidence = redact_text(found.evidence)
        self.store.append_audit([AuditRecord(
            at=time.time(), call_id=new_call_id(), tool=entry.tool, schema_version=None,
            arguments={"verify_said": found.said, "evidence": evidence,
                       "note": f"verify said {_said(found.said)}: {evidence}"},
            validation="skipped", attempt=0, latency_ms=0.0, outcome="verify_asked",
            conversation_id=entry.conversation_id, principal=by, code=f"VERIFY_{found.said.upper()}",
            idempotency_key=key)])
        return found

    def _hook(self, entry: Intent) -> tuple[Tool | None, str]:
        """The entry's tool when its verify hook can be asked, else why not (in the operator's words)."""
        if not self.tools:
            return None, "the inbox was started without the agents' toolset (toolproof ui --toolset MODULE:ATTR)"
        tool = self.tools.get(entry.tool)
        why = unverifiable(tool, entry)
        return (None, why) if why else (tool, "")

    def _verify_cell(self, entry: Intent, csrf: str) -> str:
        """'verify available' and its button, or why not; and what verify last said of this write."""
        tool, why = self._hook(entry)
        last = _last_verdict(entry, self.store.audit_for_key(entry.key) if tool is not None else ())
        said = (f'<br><span class="muted" data-testid="verify-said">last said: {e(_said(last[0]))} '
                f"({e(redact_text(last[1]))})</span>" if last else "")
        if tool is None:
            return f'<span class="muted" data-testid="verify-none">{e(why)}</span>{said}'
        return ('<span class="pill" data-testid="verify-available">verify available</span>'
                + form(f"/journal/{quote(entry.key)}/verify", csrf, "", "Verify", label=f"verify {entry.key}")
                + said)

    # --- the audit trail, one call, one operation --------------------------------------------------------------
    def audit(self, request: Request) -> HTMLResponse:
        """Search every audit record (not a window of the newest): ids by prefix, fields ignoring case, a time
        range with zones; counted, paged to the last row, newest or oldest first."""
        try:
            search = Search.read(request.query_params)
        except BadSearch as exc:
            body = _search_form(dict(request.query_params)) + f'<p data-testid="search-error">{e(exc)}</p>'
            return self.render(request, "Audit trail", body, flash=str(exc), error=True, status=400, live=False)
        found = self.store.audit_page(search.query, order=search.order, limit=PAGE, cursor=search.cursor)
        total = self.store.audit_total()
        rows = [(moment(r.at), f'<a href="/audit/call/{quote(r.call_id)}"><code>{e(r.call_id)}</code></a>',
                 e(r.tool), e(r.outcome), e(r.error_class), e(r.code), e(r.principal), e(r.conversation_id),
                 _trail_link(r.idempotency_key)) for r in found.rows]
        params = {**search.values, "order": search.order}
        what = "records" if found.total == total else f"matching records ({total:,} in the store)"
        body = (_search_form(params)
                + counted(what, found.start, found.end, found.total, test_id="audit", order=f", {search.order} first")
                + table(("at", "call", "tool", "outcome", "class", "code", "principal", "conversation", "operation"),
                        rows, empty="No audit record matches.", test_id="audit")
                + pager("/audit", params, "after", found.next, found.start == 0, test_id="audit"))
        return self.render(request, "Audit trail", body)

    def call(self, request: Request) -> HTMLResponse:
        """One call on one page: every attempt's audit record and any stop record, each with the tool's own
        exception and traceback (redacted when stored) for its developer; a link to its operation's trail."""
        call_id = request.path_params["call_id"]
        rows = self.store.audit_for_call(call_id)
        stops = self.store.list_stops(call_id=call_id, limit=PAGE)
        if not rows and not stops:
            return self.refused(request, "No such call", f"No record of call {call_id} among all "
                                f"{self.store.audit_total():,} audit records.", 404)
        keys = {r.idempotency_key for r in rows if r.idempotency_key} | {s.idempotency_key for s in stops
                                                                         if s.idempotency_key}
        links = "".join(f"<p>Operation: {_trail_link(k, text=f'the whole trail of {k}')}</p>" for k in sorted(keys))
        attempts = "".join(f"<h2>attempt {r.attempt}: {e(r.outcome)}</h2>" + as_json(_record(r)) + exception_block(r)
                           for r in rows)
        stopped = "".join(f"<h2>stop {e(s.id)}: {e(s.reason)}, effect {e(s.effect_status)}</h2>"
                          + _explained(s.error_class, s.code) + as_json(_record(s)) + exception_block(s)
                          for s in stops)
        return self.render(request, f"Call {call_id}", links + attempts + stopped)

    def trail(self, request: Request) -> HTMLResponse:
        """One operation (idempotency key), in time order: the asking call, the approval request and its
        decision, the executed call, replays, stops, and the journal's entry as it stands."""
        key = request.path_params["key"]
        events = _trail_events(self.store.approvals_for_key(key), self.store.audit_for_key(key),
                               self.store.stops_for_key(key))
        intent = self.store.journal_get(key)
        if not events and intent is None:
            return self.refused(request, "No such operation", f"No record of operation {key}.", 404)
        state = ("" if intent is None else
                 f'<p data-testid="intent">Journal: <span class="pill">{e(intent.status)}</span> since '
                 f"{moment(intent.updated_at)} (call <code>{e(intent.call_id)}</code>)</p>")
        rows = [(moment(at), f'<span class="pill">{e(what)}</span>', link, detail) for at, what, link, detail in events]
        body = state + table(("at", "what", "call / record", "detail"), rows, empty="No record.", test_id="trail")
        return self.render(request, f"Operation {key}", body)

    # --- the dashboard and the live version ---------------------------------------------------------------------
    def dashboard(self, request: Request) -> HTMLResponse:
        """Calls over the whole store: ok, failed, and waiting for a person (gated calls are not failures)."""
        tally = self._tallied()
        kinds: Counter[str] = Counter()
        by_tool: dict[str, list[int]] = {}
        by_class: dict[str, list[int]] = {}
        for (tool, cls, code, outcome), n in tally.items():
            kind = outcome_kind(outcome, code)
            kinds[kind] += n
            label = cls or ("ok" if kind == "ok" else "no class recorded")
            for bucket, name in ((by_tool, tool), (by_class, label)):
                counts = bucket.setdefault(name, [0, 0])
                counts[0] += n
                counts[1] += n if kind == "failed" else 0
        fields = [(e(tool), e(field), f"<code>{e(version)}</code>", e(count))
                  for tool, field, version, count in self.store.field_failures()[:PAGE]]
        calls = sum(kinds.values())
        summary = (f'<p class="count" data-testid="summary">{calls:,} calls in all {self.store.audit_total():,} '
                   f"audit records: {kinds['ok']:,} ok, {kinds['failed']:,} failed, {kinds['gated']:,} waited "
                   "for a person (not failures).</p>")
        paused = [(e(g.tool), f"<strong>{g.count:,}</strong>", moment(g.first_at), moment(g.last_at),
                   '<a href="/stops">resolve on the stops page</a>')
                  for g in self.store.stop_groups() if g.reason == "circuit_open"]
        breakers = ("<h2>Breakers that refused calls</h2>"
                    '<p class="muted">From the open stop records whose reason is circuit_open: the tool\'s breaker '
                    "was open when a call came, and the call was not sent.</p>"
                    + table(("tool", "calls refused", "first", "last", ""), paused,
                            empty="No open stop says a breaker refused a call.", test_id="breakers"))
        if self.shared_state is not None:
            breakers = self._breaker_states(set(by_tool) | {g.tool for g in self.store.stop_groups()}) + breakers
        body = (summary + breakers + "<h2>Calls and failures per tool</h2>"
                + bars("calls and failures per tool", _top(by_tool))
                + "<h2>Outcomes per error class</h2>" + bars("outcomes per class", _top(by_class))
                + "<h2>Validation failures per field and schema version</h2>"
                + table(("tool", "field", "schema version", "failures"), fields, empty="No validation failures.",
                        test_id="fields"))
        return self.render(request, "Dashboard", body)

    def _breaker_states(self, seen: set[str]) -> str:
        """Each breaker's state as the fleet's shared state holds it now: the toolset's tools (by upstream, as
        the runner names its breakers) and every tool the store has seen. A state store that does not answer
        is said, never shown as closed breakers."""
        assert self.shared_state is not None and self.shared_state.backend is not None
        backend = self.shared_state.backend
        named = {t.name: t.upstream or t.name for t in self.tools.values()}
        names = sorted(set(named.values()) | {named.get(tool, tool) for tool in seen})[:PAGE]
        config = BreakerConfig()  # its recovery window tells open from half-open; the runner's default
        rows, away = [], ""
        for name in names:
            try:
                state = backend.state(name, config).value
            except backend.errors as exc:
                away = f"{type(exc).__name__}: {redact_text(str(exc))}"
                break
            rows.append((e(name), f'<span class="pill{"" if state == "closed" else " soon"}">'
                                  f"{e(state.replace('_', '-'))}</span>"))
        said = (f'<p data-testid="breaker-states-away">The shared state at {e(backend.label)} '
                f"did not answer ({e(away)}): breaker states unknown.</p>" if away else
                f'<p class="muted">From the fleet\'s shared state at {e(backend.label)}, as the next call would '
                "find it (open turns half-open after the default 30 s recovery window).</p>")
        return ("<h2>Breaker states</h2>" + said
                + ("" if away else table(("breaker (tool or upstream)", "state"), rows,
                                         empty="No tool known yet.", test_id="breaker-states")))

    def _tallied(self) -> Counter[tuple[str, str | None, str | None, str]]:
        """The calls' tally, extended by the records written since the last one (and counted again in full
        every `RECOUNT_S`, so a row committed late under an earlier id is not missed for long)."""
        with self._tally_lock:
            counts, upto, at = self._tally
            if time.monotonic() - at > RECOUNT_S:
                counts, upto, at = Counter(), 0, time.monotonic()
            more, upto = self.store.audit_tally(upto)
            counts = counts + Counter({(t.tool, t.error_class, t.code, t.outcome): t.count for t in more})
            self._tally = (counts, upto, at)
            return counts

    def _version(self) -> str:
        """A digest of what the pages show (counts and the newest rows of each list)."""
        now = time.time()
        waiting = self.store.approval_page(pending=True, now=now, limit=1)
        decided = self.store.approval_page(pending=False, now=now, limit=1)
        stops = self.store.stop_page(limit=1)
        latest = [r.at for r in self.store.list_audit(limit=1)]
        unknown = [i.key for i in self.store.journal_list(status="unknown", limit=1)]
        text = json.dumps([waiting.total, [r.id for r in waiting.rows], decided.total,
                           [(r.id, r.status) for r in decided.rows], stops.total, [s.id for s in stops.rows],
                           latest, unknown])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def version(self, request: Request) -> PlainTextResponse:
        """What the pages poll: they carry the version they were rendered with and compare."""
        return PlainTextResponse(self._version())


def outcome_kind(outcome: str, code: str | None) -> str:
    """ok (ran, or replayed what ran), gated (waiting for a person: not a failure), or failed."""
    if outcome in ("ok", "replayed"):
        return "ok"
    if outcome.startswith("approval_") or (code or "").startswith("APPROVAL_"):
        return "gated"
    return "failed"


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


def _unknown_page(journal: Journal, cursor: str | None) -> Page[Intent]:
    """The writes whose outcome is unknown, newest first, PAGE at a time after the cursor `created_at~key` of
    the last row seen (a keyset: rows settled meanwhile do not shift the next page). Ended leases are expired
    first, as the CLI does. The journal holds few unknown entries, so they are read whole and cut here."""
    every = sorted(journal.list("unknown", limit=1_000_000), key=lambda i: (i.created_at, i.key), reverse=True)
    start = 0
    at, _, key = (cursor or "").partition("~")
    try:
        after = (float(at), key) if cursor else None
    except ValueError:
        after = None
    if after is not None:
        start = sum(1 for i in every if (i.created_at, i.key) >= after)
    rows = every[start:start + PAGE]
    more = start + PAGE < len(every)
    return Page(rows, len(every), start, f"{rows[-1].created_at!r}~{rows[-1].key}" if more else None)


def _last_verdict(entry: Intent, audit: Sequence[AuditRecord]) -> tuple[str, str] | None:
    """What verify last said of an unknown write: an operator's ask (audited), else the runner's own ask
    (kept in the entry's outcome with the error)."""
    for r in reversed(audit):
        if r.outcome == "verify_asked" and isinstance(r.arguments, dict):
            return str(r.arguments.get("verify_said")), str(r.arguments.get("evidence"))
    error = entry.outcome.get("error") if isinstance(entry.outcome, dict) else None
    state = error.get("state") if isinstance(error, dict) else None
    said = state.get("verify") if isinstance(state, dict) else None
    if isinstance(said, dict) and "said" in said:
        return str(said["said"]), str(said.get("evidence", ""))
    return None


def _said(said: str) -> str:
    return {"done": "done", "not_done": "not done", "unknown": "cannot tell"}.get(said, said)


def _pending_row(r: ApprovalRequest, csrf: str, now: float, tool: Tool | None) -> tuple[str, ...]:
    left = r.expires_at - now
    soon = " soon" if left < 3600 else ""
    risk = tool.risk if tool is not None else ""
    ask = f"Approve {r.tool} ({risk} risk) for {r.principal or 'an unnamed principal'}?" if risk == "high" else ""
    return (f'<input type="checkbox" name="rid" value="{e(r.id)}" form="bulk" data-risk="{e(risk)}" '
            f'aria-label="select {e(r.id)}"> <code>{e(r.id)}</code><br>'
            f'{_trail_link(r.idempotency_key, text="trail")}', _tool_facts(r.tool, tool),
            args_table(r.arguments) + f'<span class="muted">call <code>{e(r.call_id)}</code></span>', e(r.reason),
            e(f"{r.principal or '-'} in {r.conversation_id or '-'}") + (f"<br>run {e(r.run_id)}" if r.run_id else ""),
            f'<span class="pill" data-testid="age">{e(span(now - r.at))} ago</span><br>{moment(r.at)}',
            f'<span class="pill{soon}" data-testid="countdown">in {e(span(left))}</span><br>{moment(r.expires_at)}',
            form(f"/approvals/{r.id}/approve", csrf, text_input("note", "note (optional)"), "Approve",
                 css="ok", label=f"approve {r.id}", confirm=ask)
            + form(f"/approvals/{r.id}/deny", csrf, text_input("note", "why (required)", required=True),
                   "Deny", css="no", label=f"deny {r.id}"))


def _tool_facts(name: str, tool: Tool | None) -> str:
    """The tool's name, and when the toolset is known its risk, effect and the first line of its description."""
    if tool is None:
        return e(name)
    first = tool.description.strip().split("\n", 1)[0]
    badge = f'<span class="pill{" soon" if tool.risk == "high" else ""}" data-testid="risk">{e(tool.risk)} risk</span>'
    return (f"{e(name)}<br>{badge} <span class=\"pill\">{e(tool.effect)}</span>"
            f'<br><span class="muted" data-testid="description">{e(first)}</span>')


def _trail_events(approvals: Sequence[ApprovalRequest], audit: Sequence[AuditRecord],
                  stops: Sequence[StopRecord]) -> list[tuple[float, str, str, str]]:
    """(at, what, link, detail) of every record of one operation, in time order."""
    events = []
    for a in approvals:
        events.append((a.at, "approval requested", f"<code>{e(a.id)}</code>",
                       e(f"{a.reason}; asked by {a.principal or '-'}") + args_table(a.arguments)))
    for r in audit:
        detail = " / ".join(x for x in (r.error_class, r.code) if x)
        if r.schema_version is None:
            detail = (f"by {r.principal or '-'}" + (f": {r.arguments.get('note')}" if isinstance(r.arguments, dict)
                                                    and r.arguments.get("note") else ""))
        events.append((r.at, r.outcome.replace("_", " "),
                       f'<a href="/audit/call/{quote(r.call_id)}"><code>{e(r.call_id)}</code></a>', e(detail)))
    for s in stops:
        state = f"resolved: {s.resolution}" if s.resolved_at is not None else "open"
        events.append((s.at, f"stopped ({s.reason})",
                       f'<a href="/audit/call/{quote(s.call_id)}"><code>{e(s.id)}</code></a>',
                       e(f"{s.error_class} / {s.code}, effect {s.effect_status}, {state}")))
    return sorted(events, key=lambda ev: ev[0])


def _groups_table(groups: Sequence[StopGroup], csrf: str) -> str:
    rows = []
    for g in groups:
        hidden = "".join(f'<input type="hidden" name="{n}" value="{e(v)}">'
                         for n, v in zip(("tool", "error_class", "code", "reason"), g.key, strict=True))
        rows.append((e(g.tool), _explained(g.error_class, g.code), f'<span class="pill">{e(g.reason)}</span>',
                     f"<strong>{g.count:,}</strong>", moment(g.first_at), moment(g.last_at),
                     form("/stops/group/resolve", csrf, hidden + text_input("note", "what you found and did",
                                                                            required=True) + _effect_select(),
                          f"Resolve all {g.count:,}", label=f"resolve group {g.tool} {g.code} {g.reason}",
                          confirm=f"Resolve all {g.count} open stops of {g.tool} ({g.code}, {g.reason})?")))
    return ("<h2>Alike stops</h2>"
            + table(("tool", "class / code", "reason", "open", "first", "last", "resolve them all"), rows,
                    empty="", test_id="groups"))


def _explained(error_class: str | None, code: str | None) -> str:
    """A class and code with what the class means and what to do, from the envelope's own descriptions."""
    label = e(" / ".join(x for x in (error_class, code) if x) or "no class recorded")
    try:
        spec = CLASS_SPECS[ErrorClass(error_class or "")]
    except ValueError:
        return f"<code>{label}</code>"
    return (f'<code title="{e(spec.description)}">{label}</code><br><span class="muted">{e(spec.description)} '
            f"Next: {e(ACTION_DESCRIPTIONS[spec.next_action])}</span>")


def _trail_link(key: str | None, *, text: str = "") -> str:
    if not key:
        return ""
    shown = text or (key if len(key) <= 16 else key[:14] + "…")
    return f'<a href="/trail/{quote(key)}" title="{e(key)}" data-testid="trail-link">{e(shown)}</a>'


def _search_form(values: dict[str, str]) -> str:
    fields = "".join(text_input(name, hint, value=values.get(name, ""), title=tip) for name, hint, tip in FIELDS)
    order = values.get("order", "newest")
    pick = "".join(f'<option value="{v}"{" selected" if v == order else ""}>{v} first</option>'
                   for v in ("newest", "oldest"))
    return (f'<form method="get" action="/audit" class="inline" data-testid="search">{fields}'
            f'<select name="order" aria-label="order">{pick}</select><button>Search</button></form>')


def _top(counts: dict[str, list[int]]) -> list[tuple[str, int, int]]:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1][0])
    return [(name, total, failed) for name, (total, failed) in ranked[:12]]


def _field(data: Any, name: str) -> str:
    value = data.get(name)
    return value.strip() if isinstance(value, str) else ""


def _effect_select() -> str:
    options = "".join(f'<option value="{v}">{t}</option>' for v, t in (
        ("", "effect unchanged"), ("done", "effect done"), ("not_done", "effect not done"), ("unknown", "unknown")))
    return f'<select name="effect" aria-label="effect">{options}</select>'


def _evidence(text: str) -> Any:
    """What a person found (replayed to repeats of the write): JSON when it parses, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return {"evidence": text}


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
            f"<code>{e(r.exception_type)}</code>: {e(redact_text(r.exception_message or ''))}</p>"
            f'<pre data-testid="traceback">{e(redact_text(r.traceback or ""))}</pre></div>')

