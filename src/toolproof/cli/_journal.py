"""`toolproof journal list | show KEY | resolve KEY --done|--not-done | verify KEY|--all --toolset M:T |
prune --older-than 24h`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..catalog._toolset import Toolset
from ..contract._errors import ToolError
from ..contract._redaction import redact
from ..journal._journal import Journal, parse_duration
from ..pipeline._verify import Verdict, bound_for, settling, unverifiable
from ..stores._intent import INTENT_STATUSES, Intent
from ..stores._steps import drive, perform_io
from ._load import load_toolset
from ._options import (
    DEFAULT_LIMIT,
    ForceOpt,
    JsonOpt,
    LimitOpt,
    NoteOpt,
    StoreOpt,
    command_group,
    fail,
    open_existing,
    plural,
    print_json_lines,
    print_record,
    print_table,
    say,
    shown_store,
    timestamp,
)

journal_app = command_group("Inspect and reconcile the write journal (exactly-once writes).")

KeyArg = Annotated[str, typer.Argument(help="The idempotency key.")]


def _journal(store: str | None) -> Journal:
    return Journal(open_existing(store))


def _row(intent: Intent) -> dict[str, Any]:
    row: dict[str, Any] = redact(intent.to_dict())  # stored redacted; again here for rows older versions wrote
    return row


@journal_app.command("list")
def list_cmd(
    status: Annotated[str | None, typer.Option("--status", help=f"Only this: {', '.join(INTENT_STATUSES)}.")] = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    toolset: Annotated[str | None, typer.Option(
        "--toolset", help="MODULE:ATTR of the Toolset: says whether `journal verify` can ask each entry's tool.",
    )] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """List journal entries, newest first (expired leases are turned into `unknown` first).

    With --toolset, a `verify` column says whether `journal verify` can ask the entry's tool (in --json:
    "available", or why not)."""
    if status is not None and status not in INTENT_STATUSES:
        raise fail(f"--status must be one of {', '.join(INTENT_STATUSES)}, got {status!r}")
    tools = load_toolset(toolset) if toolset else None
    journal = _journal(store)
    try:
        rows = journal.list(status, limit)
    finally:
        journal.store.close()
    hooks = [_why_not(tools, r) or "available" if tools is not None else "" for r in rows]
    if as_json:
        print_json_lines({**_row(r), "verify": hook} if tools is not None else _row(r)
                         for r, hook in zip(rows, hooks, strict=True))
        return
    columns = ("key", "status", "tool", "conversation", "created", "resolution")
    print_table(columns + (("verify",) if tools is not None else ()),
                ((r.key, r.status, r.tool, r.conversation_id, timestamp(r.created_at), r.resolution)
                 + ((hook if hook == "available" else "not available",) if tools is not None else ())
                 for r, hook in zip(rows, hooks, strict=True)))
    say(f"{plural(len(rows), 'entry', 'entries')} in {shown_store(store)}")


@journal_app.command("show")
def show_cmd(key: KeyArg, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """Print one journal entry."""
    journal = _journal(store)
    try:
        row = journal.show(key)
    finally:
        journal.store.close()
    if row is None:
        raise fail(f"no journal entry has the key {key!r} in {shown_store(store)}", code=1)
    if as_json:
        print_json_lines([_row(row)])
    else:
        print_record(_row(row))


@journal_app.command("resolve")
def resolve_cmd(
    key: KeyArg,
    done: Annotated[bool | None, typer.Option("--done/--not-done", help="Whether the effect happened.")] = None,
    result: Annotated[str | None, typer.Option("--result", help="With --done: the result (JSON) to replay.")] = None,
    note: NoteOpt = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Reconcile an `unknown` entry after checking the effect's own system; resolves its stop records too.

    Entries in another state are refused unless --force with --note (recorded in the audit trail).
    Prints the entry as the store now holds it."""
    if done is None:
        raise fail("say --done or --not-done")
    if force and not (note and note.strip()):
        raise fail("--force needs --note saying what was found")
    value = _result_value(result, done)
    journal = _journal(store)
    try:
        before = journal.show(key)
        journal.reconcile(key, "done" if done else "not_done", result=value, note=note, force=force)
        after = journal.show(key)
    except ToolError as exc:
        raise fail(f"{exc.message} {exc.hint or ''}".strip(), code=1) from None
    finally:
        journal.store.close()
    _print_left(key, before.status if before else None, _row(after) if after else None, as_json, store)


def _result_value(result: str | None, done: bool) -> Any:
    if result is None:
        return None
    if not done:
        raise fail("--result goes with --done")
    try:
        return json.loads(result)
    except ValueError as exc:
        raise fail(f"--result is not JSON: {exc}") from None


def _print_left(key: str, was: str | None, entry: dict[str, Any] | None, as_json: bool, store: str | None) -> None:
    """What a reconciliation left, read back from the store: the entry, or none (released: may run again)."""
    if as_json:
        print_json_lines([{"key": key, "was": was, "entry": entry}])
        return
    if entry is None:
        say(f"{key}: was {was}, now released (no entry: the next identical call is dispatched again) "
            f"in {shown_store(store)}")
        return
    say(f"{key}: was {was}, now {entry['status']} in {shown_store(store)}")
    print_record(entry)


@journal_app.command("prune")
def prune_cmd(
    older_than: Annotated[str, typer.Option(
        "--older-than", help="Forget finished entries older than this (90s, 30m, 24h, 7d, 2w: a unit is required).",
    )] = "24h",
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Delete finished entries older than the given age; unknown and in-flight entries are never pruned."""
    if older_than.strip().replace(".", "", 1).isdigit():  # `3` would be 3 seconds: everything, at once
        raise fail(f"--older-than needs a unit: {older_than.strip()}s, {older_than.strip()}m, "
                   f"{older_than.strip()}h or {older_than.strip()}d")
    try:
        seconds = parse_duration(older_than)
    except ValueError as exc:
        raise fail(str(exc)) from None
    journal = _journal(store)
    try:
        count = journal.prune(seconds)
    finally:
        journal.store.close()
    if as_json:
        print_json_lines([{"pruned": count}])
    else:
        say(f"pruned {plural(count, 'entry', 'entries')} from {shown_store(store)}")


@journal_app.command("verify")
def verify_cmd(
    key: Annotated[str | None, typer.Argument(help="The idempotency key of an unknown entry (or --all).")] = None,
    toolset: Annotated[str | None, typer.Option(
        "--toolset", help="MODULE:ATTR of the Toolset whose tools' verify hooks are asked.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Every unknown entry (expired leases count).")] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Ask the tools' `verify` hooks what happened to unknown entries, and settle each by the answer: done (its
    result replayed from now on) or not done (released); one that cannot be told stays unknown. Stop records
    are resolved and the settlement audited, as by `resolve`."""
    if (key is None) == (not every):
        raise fail("give one KEY or --all")
    if toolset is None:
        raise fail("--toolset is required: the verify hooks live on the tools (MODULE:ATTR)")
    tools = load_toolset(toolset)
    journal = _journal(store)
    try:
        if key is not None:
            entry = journal.show(key)
            if entry is not None and entry.status == "in_flight" and entry.lease_until < journal.now():
                journal.expire()
                entry = journal.show(key)
            if entry is None:
                raise fail(f"no journal entry has the key {key!r} in {shown_store(store)}", code=1)
            if entry.status != "unknown":
                raise fail(f"the entry {key!r} is {entry.status}, not unknown: nothing to verify", code=1)
            entries = [entry]
        else:
            entries = journal.list("unknown", limit=1_000_000)
        rows = [_verified(journal, tools, entry) for entry in entries]
    finally:
        journal.store.close()
    if as_json:
        print_json_lines(rows)
        return
    print_table(("key", "tool", "verify said", "evidence"),
                ((r["key"], r["tool"], r["said"], r["evidence"]) for r in rows))
    settled = sum(r["said"] in ("done", "not_done") for r in rows)
    say(f"{plural(len(rows), 'unknown entry', 'unknown entries')} verified, {settled} settled, in {shown_store(store)}")


def _verified(journal: Journal, tools: Toolset, entry: Intent) -> dict[str, Any]:
    """One entry's verification: what verify said, or why it was not asked (no such tool, no hook, arguments
    stored redacted, arguments that no longer validate)."""
    found = _verdict(journal, tools, entry)
    return {"key": entry.key, "tool": entry.tool, "said": found.said if found else "skipped",
            "evidence": found.evidence if found else _why_not(tools, entry)}


def _verdict(journal: Journal, tools: Toolset, entry: Intent) -> Verdict | None:
    if _why_not(tools, entry):
        return None
    tool = tools.get(entry.tool)
    try:
        bound = bound_for(tool, entry)
    except ToolError as exc:
        return Verdict("unknown", f"its stored arguments no longer validate ({exc.code}: {exc.message})")
    try:
        verdict: Verdict = drive(settling(journal, tool, entry, bound), perform_io)
    except ToolError as exc:  # settled by someone else meanwhile
        return Verdict("unknown", f"verify answered, but the entry could not be settled: {exc.message}")
    return verdict


def _why_not(tools: Toolset, entry: Intent) -> str:
    return unverifiable(tools.get(entry.tool) if entry.tool in tools else None, entry)


def register(app: typer.Typer) -> None:
    app.add_typer(journal_app, name="journal")
