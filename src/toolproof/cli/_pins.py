"""`toolproof gateway pins list|show|approve|import`: review the upstream tool definitions the gateway pinned, and the
changes it holds back (registered under `gateway` by cli/_gateway.py, the file of that group)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer

from ..stores import open_store
from ..stores._pins import Pin
from ._options import (
    JsonOpt,
    NoteOpt,
    StoreOpt,
    chosen_store,
    command_group,
    fail,
    open_existing,
    print_json,
    print_json_lines,
    print_record,
    print_table,
    say,
    shown_store,
    timestamp,
)

pins_app = command_group("Pinned upstream tool definitions and the changes waiting for review.")
UpstreamArg = Annotated[str, typer.Argument(help="The upstream's name in the gateway config.")]
ToolArg = Annotated[str, typer.Argument(help="The tool's name upstream.")]


def pin_dict(pin: Pin) -> dict[str, Any]:
    row = dataclasses.asdict(pin)
    row["status"] = "pending" if pin.pending is not None else "pinned"
    return row


def _summary(pin: Pin) -> dict[str, Any]:
    """A pin as a list prints it: without the definitions (`pins show` has them)."""
    return {k: v for k, v in pin_dict(pin).items() if k not in ("definition", "pending")}


def _pins(store: str | None, upstream: str | None = None) -> list[Pin]:
    db = open_existing(store)
    try:
        return db.pin_list(upstream=upstream)
    finally:
        db.close()


def _one(store: str | None, upstream: str, tool: str) -> Pin:
    found = [p for p in _pins(store, upstream) if p.tool == tool]
    if not found:
        raise fail(f"no pin for {upstream}/{tool} in {shown_store(store)}")
    return found[0]


@pins_app.command("list")
def list_cmd(upstream: Annotated[str | None, typer.Option("--upstream", help="Only this upstream.")] = None,
             as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """Every pin; `pending` ones hold a change the gateway did not accept."""
    pins = _pins(store, upstream)
    if as_json:
        print_json_lines(_summary(p) for p in pins)
        return
    if not pins:
        say(f"no pins in {shown_store(store)}")
        return
    print_table(("upstream", "tool", "status", "fingerprint", "pending", "changes", "pinned at"), (
        (p.upstream, p.tool, pin_dict(p)["status"], p.fingerprint, p.pending_fingerprint or "",
         _classes(p), timestamp(p.pinned_at)) for p in pins))


def _classes(pin: Pin) -> str:
    by: dict[str, int] = {}
    for c in pin.changes:
        by[c["change_class"]] = by.get(c["change_class"], 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(by.items()))


@pins_app.command("show")
def show_cmd(upstream: UpstreamArg, tool: ToolArg, as_json: JsonOpt = False, store: StoreOpt = None) -> None:
    """One pin: the pinned definition, and the pending one with every change classified."""
    pin = _one(store, upstream, tool)
    if as_json:
        print_json(pin_dict(pin), True)
        return
    print_record({k: v for k, v in pin_dict(pin).items() if k != "changes"})
    for c in pin.changes:
        say(f"  {c['change_class']:<11} {c['kind']}  {c['part']} {c['pointer'] or '/'}")


@pins_app.command("approve")
def approve_cmd(upstream: UpstreamArg, tool: ToolArg, note: NoteOpt = None, as_json: JsonOpt = False,
                store: StoreOpt = None) -> None:
    """Make the pending definition the pin: the gateway serves it from its next start. --json prints the pin
    as it is left."""
    import time

    pin = _one(store, upstream, tool)
    if pin.pending is None or pin.pending_fingerprint is None:
        raise fail(f"{upstream}/{tool} has no pending change to approve")
    if not note:
        raise fail("approving a changed tool definition needs --note (what you reviewed)")
    approved = dataclasses.replace(pin, definition=pin.pending, fingerprint=pin.pending_fingerprint,
                                   pinned_at=time.time(), pending=None, pending_fingerprint=None, changes=[],
                                   note=note)
    db = open_existing(store)
    try:
        db.pin_put(approved)
    finally:
        db.close()
    if as_json:
        print_json_lines([_summary(approved)])
        return
    say(f"approved {upstream}/{tool}: pinned {approved.fingerprint}")


@pins_app.command("import")
def import_cmd(
    upstream: UpstreamArg,
    lock_file: Annotated[Path, typer.Argument(help="A `toolproof lock` file of that upstream's tools.")],
    note: NoteOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Pin an upstream's tools from a reviewed lock file (instead of on first sight); replaces their pins.
    --json prints each pin as it is left, one a line."""
    import json
    import time

    from ..contract._errors import DefinitionError
    from ..versions import loads_lock

    try:
        lock = loads_lock(json.loads(lock_file.read_text(encoding="utf-8")))
    except (OSError, ValueError, DefinitionError) as exc:
        raise fail(f"{lock_file}: {exc}") from None
    now = time.time()
    try:  # pinning before the first gateway start is the point: the store may not exist yet
        db = open_store(chosen_store(store))
    except (ValueError, ImportError, OSError) as exc:
        raise fail(str(exc)) from None
    pins = [Pin(upstream, entry.name, entry.version, entry.to_dict(), now, note=note or f"pinned from {lock_file.name}")
            for entry in lock.tools.values()]
    try:
        for pin in pins:
            db.pin_put(pin)
    finally:
        db.close()
    if as_json:
        print_json_lines(_summary(pin) for pin in pins)
        return
    say(f"pinned {len(lock.tools)} tool(s) of {upstream} from {lock_file}")
