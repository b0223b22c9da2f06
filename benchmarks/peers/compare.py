"""Run the same `place_order` tool and the same faults through toolproof and its peers; print what happened.

    python -m benchmarks.peers.compare [--json FILE] [--markdown] [--update-doc docs/peers.md]
                                       [--update-readme README.md]

Nothing is installed here: each peer is imported if present (`pip install -e '.[peers]'`), else its column
says "not installed". Every cell is computed from a run of the scenario, never written by hand.

The tool: `place_order(crop: Literal[onion, groundnut, jeera, cotton_seed], quantity_kg: float in 10..5000,
delivery_date: date)`, one plain `def` whose body inserts and commits a row in a real SQLite `orders` table
(a fresh file per peer and scenario). The scripted model (no network anywhere) sends the scenario's
arguments, reads the reply the way that library delivers it to a model, and follows the scenario's policy:
`once` (read the reply and stop), `obedient` (resend the same call once only if told to try again), `eager`
(resend once after any error reply that does not say not to), `stubborn` (resend once after any error).

How each library is driven, as its own agent loop drives it:
- toolproof: `toolproof.tool(effect="write")` on the function, `toolproof.Toolset`, `await Runner.call(...)`
  with a `CallContext(conversation_id=...)`; `Runner(toolset, store="sqlite:///...")` where this checkout
  supports it (else in memory, and the table says so). Scenario 5 also runs `Runner.call_sync`.
- pydantic-ai: `Agent(FunctionModel(script), tools=[Tool(place_order)])`, `await agent.run(...)`; the script
  sends a `ToolCallPart` and reads the `ToolReturnPart` the agent graph sends back (`outcome`,
  `model_response_str()`). Scenario 5: `Tool(..., timeout=0.1)`.
- openai-agents: `Runner.run(Agent(model=ScriptedModel([...]), tools=[function_tool(place_order)]))` with
  the SDK's own scripted model from `agents.testing`; responders read the `function_call_output` item.
  Tracing disabled. Scenario 5: `function_tool(..., timeout=0.1)` (default `timeout_behavior`).
- pydantic-ai / openai-agents / langgraph "with toolproof": the same loop and scripted model, the tool served
  by the framework's adapter from `toolproof.integrations` over a Runner with its own SQLite journal; the
  conversation comes from the framework (`conversation_id=`, the run's `context=`, `thread_id`).
- mcp: `MCPServer` + `@server.tool()`, called through `mcp.Client(InMemoryTransport(server))` (a real client
  session, JSON-RPC over memory streams); the reply is the `CallToolResult`. MCPServer has no server-side
  tool timeout, so scenario 5 uses the client's `read_timeout_seconds=0.1`; the client's exception text is
  what a host would show the model.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import importlib
import json
import logging
import re
import sys
import tempfile
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.peers._common import (
    CROPS,
    EFFECT_SCENARIOS,
    NOT_STAGED,
    POLICY_TEXT,
    SCENARIOS,
    Observation,
    OrderBook,
    Reply,
    Scenario,
)

DRIVERS = ("_toolproof", "_pydantic_ai", "_pydantic_ai_toolproof", "_openai_agents", "_openai_agents_toolproof",
           "_langgraph_toolproof", "_mcp")
#: The double-effect table's rows: every framework's defaults and the once-only libraries, with and without
#: toolproof (a `module:attribute` names a driver object inside a module).
EFFECT_DRIVERS = ("_once_libraries:bare", "_toolproof", "_toolproof_verify", "_pydantic_ai", "_pydantic_ai_toolproof",
                  "_openai_agents", "_openai_agents_toolproof", "_langgraph", "_langgraph_toolproof",
                  "_langchain_retry", "_langchain_retry_toolproof", "_fastmcp_retry", "_mcp", "_mcp_toolproof",
                  "_once_libraries:call4agents", "_once_libraries:idemkit", "_once_libraries:agent_once",
                  "_once_libraries:agent_outbox", "_once_libraries:deduplex", "_once_libraries:governance")
#: The versions the `peers` extra pins (pyproject.toml), and so the ones the published tables were measured on.
PINNED = {"pydantic-ai-slim": "2.68.0", "openai-agents": "0.24.0", "mcp": "2.3.0", "langgraph": "1.2.24",
          "langchain": "1.5.2", "fastmcp-slim": "4.2.3", "call4agents": "0.5.0", "idemkit": "1.0.2",
          "agent-once": "0.1.0", "agent-outbox": "0.1.1", "deduplex": "0.1.0", "agent-runtime-governance": "0.9.1"}
DOC_START = "<!-- peers-table:start -->"
DOC_END = "<!-- peers-table:end -->"
SUMMARY_START = "<!-- peers-summary:start -->"  # the README's short table: one fault per row, short cells
SUMMARY_END = "<!-- peers-summary:end -->"
EFFECTS_START = "<!-- peers-effects:start -->"  # docs/peers.md's double-effect table
EFFECTS_END = "<!-- peers-effects:end -->"
EFFECTS_SUMMARY_START = "<!-- peers-effects-summary:start -->"  # the README's: double effects per row
EFFECTS_SUMMARY_END = "<!-- peers-effects-summary:end -->"
REPEATS = ("reply_lost", "timeout_after_commit", "racing_resends", "rate_limited", "new_request_id")
REGENERATE = "python -m benchmarks.peers.compare --update-doc docs/peers.md --update-readme README.md"
SUMMARY_ROWS = {"1": "unknown extra argument", "2": "enum violation", "3a": '`"100"` for a number',
                "3b": "a midnight datetime for a date",
                "4c": "write committed, reply lost (`TimeoutError`); a model that resends anyway",
                "5b": "the tool timeout (0.1 s), body commits anyway; a model that resends unless told not to"}


def drivers(names: tuple[str, ...] = DRIVERS) -> list[Any]:
    """The driver modules (or, for `module:attribute`, the driver objects inside one)."""
    found: list[Any] = []
    for name in names:
        module, _, attr = name.partition(":")
        loaded: ModuleType = importlib.import_module(f"benchmarks.peers.{module}")
        found.append(getattr(loaded, attr) if attr else loaded)
    return found


def dist_version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def column_title(driver: Any) -> str:
    v = dist_version(driver.DIST)
    if driver.DIST == "toolproof":  # "toolproof with verify=": the variant after the version
        return f"toolproof {v or '(source tree)'}{driver.NAME.removeprefix('toolproof')}"
    suffix = getattr(driver, "SUFFIX", "")  # "with toolproof": the framework driven through its adapter
    base = driver.NAME.removesuffix(suffix)
    return f"{base} {v}{suffix}" if v else driver.NAME


async def run_one(driver: Any, scenario: Scenario, tmp: Path) -> Observation:
    slug = re.sub(r"\W+", "-", driver.NAME)  # one orders table per column (two columns share a DIST)
    book = OrderBook(tmp / f"orders-{slug}-{scenario.key}.sqlite3", scenario.body)
    try:
        obs: Observation = await driver.run(scenario, book, tmp)
        book.wait_idle()
        obs.bodies = len(book.seen)
        obs.seen = list(book.seen)
        obs.rows = book.rows()
    finally:
        book.close()
    return obs


async def run_all() -> dict[str, Any]:
    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "pinned": PINNED,
        "policies": POLICY_TEXT,
        "scenarios": [{"key": s.key, "title": s.title, "kind": s.kind, "args": s.args, "body": s.body,
                       "policy": s.policy, "timeout": s.timeout} for s in SCENARIOS],
        "peers": {},
        "effect_scenarios": [{"key": s.key, "title": s.title} for s in EFFECT_SCENARIOS],
        "not_staged": NOT_STAGED,
        "effects": {},
    }
    for name in ("toolproof", "once", "call4agents", "deduplex", "idemkit", "agent_runtime_governance"):
        logging.getLogger(name).addHandler(logging.NullHandler())  # staged faults are logged as real ones
        logging.getLogger(name).propagate = False
    with tempfile.TemporaryDirectory(prefix="toolproof-peers-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for driver in drivers(EFFECT_DRIVERS):
            entry = {"title": column_title(driver), "version": dist_version(driver.DIST),
                     "installed": driver.available(), "observations": {}}
            results["effects"][driver.NAME] = entry
            for scenario in EFFECT_SCENARIOS if entry["installed"] else ():
                try:
                    obs = await run_one(driver, scenario, Path(tmp))
                    entry["observations"][scenario.key] = {"cell": effect_cell(scenario, obs), **obs.to_dict()}
                except Exception as exc:
                    entry["observations"][scenario.key] = {"cell": f"driver failed: {type(exc).__name__}: {exc}",
                                                           "rows": None}
        for driver in drivers():
            entry: dict[str, Any] = {"title": column_title(driver), "version": dist_version(driver.DIST)}
            results["peers"][driver.NAME] = entry
            if not driver.available():
                entry["installed"] = False
                continue
            entry["installed"] = True
            entry["observations"] = {}
            for scenario in SCENARIOS:
                try:
                    obs = await run_one(driver, scenario, Path(tmp))
                    entry["observations"][scenario.key] = {"cell": describe(scenario, obs), **obs.to_dict()}
                except Exception as exc:  # a driver that broke is reported in its cell, the others still run
                    entry["observations"][scenario.key] = {"cell": f"driver failed: {type(exc).__name__}: {exc}"}
    return results


# --- turning observations into cells -----------------------------------------------------------------------


def _short(text: str, n: int = 70) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= n else text[: n - 1] + "…"


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


def _rejection(reply: Reply, field: str, allowed: tuple[str, ...] = ()) -> str:
    names = []
    if re.search(rf"\b{re.escape(field)}\b", reply.text):
        names.append("field")
    if allowed and all(v in reply.text for v in allowed):
        names.append("allowed values")
    what = "+".join(names) if names else f'no field: "{_short(reply.text, 60)}"'
    shape = "structured" if reply.structured else "text only"
    return f"rejected: {what} ({shape})"


def describe(scenario: Scenario, obs: Observation) -> str:
    """One cell: what the model got back and what happened to the orders table, from the observation."""
    first = obs.replies[0] if obs.replies else None
    if scenario.kind != "effect":
        if obs.bodies == 0:
            if first is None:
                return f"no reply; {obs.escaped or 'nothing ran'}"
            field = {"extra": "discount", "enum": "crop", "coerce": "quantity_kg"}.get(scenario.kind, "delivery_date")
            return _rejection(first, field, CROPS if scenario.kind == "enum" else ())
        seen = obs.seen[0]
        if scenario.kind == "extra":
            closed = " (its schema says additionalProperties: false)" if obs.schema_closed else ""
            return f"dropped silently, body ran{closed}"
        if scenario.kind == "coerce":
            return f'coerced "100" to {seen["quantity_kg"]}, body ran'
        if scenario.kind == "datetime":
            return f"accepted as {seen['delivery_date']}, body ran"
        return "accepted, body ran"
    parts: list[str] = []
    if first is not None:
        said = first.summary or f'"{_short(first.text, 64)}"'
        parts.append(f"{first.channel}: {said}")
    if obs.calls_sent > 1:
        parts.append("model resent")
    if obs.escaped:
        parts.append(f"{obs.escaped.split(':')[0]} escaped the run")
    orders = f"{obs.rows} order" + ("" if obs.rows == 1 else "s")
    parts.append(f"body ran {_times(obs.bodies)} ({orders})")
    sync = obs.extra.get("call_sync")
    if sync:
        parts.append(f"call_sync: {sync['reply']}, {sync['rows']} order (timeout not enforced)"
                     if sync["reply"] == "ok" else f"call_sync: {sync['reply']}, {sync['rows']} order")
    if obs.extra.get("store", "").startswith("memory"):
        parts.append("store: memory")
    parts += [n for n in obs.notes if not n.startswith("store:")]
    return "; ".join(parts)


def _told(reply: Reply) -> str:
    if reply.summary:
        return reply.summary.split(", idempotency_key=")[0]
    if not reply.error:
        return "ok"
    if reply.channel == "raised":  # a library's exception: its class says it
        return reply.text.split(":")[0]
    return f"{reply.channel}: {_short(reply.text, 48)}"


def effect_cell(scenario: Scenario, obs: Observation) -> str:
    """One cell of the double-effect table: the orders the one operation made (the effects), marked DOUBLE
    when more than one, then what the model was told in order, and what escaped."""
    orders = f"**{obs.rows} DOUBLE**" if obs.rows > 1 else str(obs.rows)
    if obs.rows == 0 and scenario.body != "nothing_once":
        orders = "0 (never done)"
    told = " → ".join(_told(r) for r in obs.replies)
    parts = [orders, told] if told else [orders]
    if obs.escaped:
        parts.append(f"{obs.escaped.split(':')[0]} escaped the run")
    if scenario.body == "nothing_once":
        verdict = obs.extra.get("verify")
        parts.append("caught by verify" if verdict == "caught" else "missed by verify" if verdict == "missed"
                     else "not caught (nothing asks the shop)")
    parts += [n for n in obs.notes if not n.startswith("store:")]
    return "; ".join(parts)


def to_effects_markdown(results: dict[str, Any]) -> str:
    """docs/peers.md's double-effect table: one row per framework or library, one column per scenario."""
    scenarios = results["effect_scenarios"]
    lines = ["| | " + " | ".join(f"`{s['key']}`" for s in scenarios) + " |", "|---" * (len(scenarios) + 1) + "|"]
    for peer in results["effects"].values():
        if not peer["installed"]:
            cells = ["not installed"] * len(scenarios)
        else:
            cells = [peer["observations"][s["key"]]["cell"] for s in scenarios]
        lines.append(f"| {peer['title']} | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", *(f"`{k}`: not staged here, it {why}." for k, why in results["not_staged"].items()), "",
              f"Measured {results['date']} on Python {results['python']} by `{REGENERATE}`."]
    return "\n".join(lines)


def to_effects_summary(results: dict[str, Any]) -> str:
    """The README's short form: per row, how many of the repeat scenarios took effect more than once, and in
    which the order was never placed at all."""
    lines = ["| | double effects | in | never done in |", "|---|---|---|---|"]
    for peer in results["effects"].values():
        if not peer["installed"]:
            lines.append(f"| {peer['title']} | not installed | | |")
            continue
        obs = peer["observations"]
        doubles = [k for k in REPEATS if (obs[k].get("rows") or 0) > 1]
        never = [k for k in REPEATS if obs[k].get("rows") == 0]
        lines.append(f"| {peer['title']} | {len(doubles)} of {len(REPEATS)} | {', '.join(doubles) or '-'} | "
                     f"{', '.join(never) or '-'} |")
    lines += ["", f"Measured {results['date']} on Python {results['python']} by `{REGENERATE}`."]
    return "\n".join(lines)


def brief(scenario: dict[str, Any], cell: dict[str, Any]) -> str:
    """The README's short form of one observation (the same facts as `describe`, fewer words)."""
    if "replies" not in cell:
        return cell["cell"]
    first = cell["replies"][0] if cell["replies"] else None
    if scenario["kind"] != "effect":
        if cell["bodies"]:
            return {"extra": "dropped silently, body ran", "coerce": "coerced to 100.0, body ran",
                    "datetime": "accepted as a date, body ran"}.get(scenario["kind"], "accepted, body ran")
        rejected: str = cell["cell"].replace("rejected: ", "rejected, ")
        return rejected.replace("field+allowed values", "field + allowed values")
    if first is None:
        said = "the exception escapes the run" if cell["escaped"] else "no reply"
    elif first["summary"]:
        said = ", ".join(f"`{part.split('=')[-1]}`" for part in first["summary"].split(", ")[:2])
        said += ", the key attached" if "idempotency_key" in first["summary"] else ""
    else:
        said = f'"{_short(first["text"], 64)}"'
    if first is not None and cell["escaped"]:
        said += f"; then {cell['escaped'].split(':')[0]} escaped"
    resent = "resent" if cell["calls_sent"] > 1 else "not resent"
    if cell["calls_sent"] > 1 and cell["bodies"] == 1:
        resent = "resent, not dispatched"
    return f"{said}; {resent}: {cell['rows']} order" + ("" if cell["rows"] == 1 else "s")


def to_summary(results: dict[str, Any]) -> str:
    """The README's table: the faults of SUMMARY_ROWS, every column, short cells, from the same run."""
    peers = results["peers"]
    lines = ["| fault | " + " | ".join(p["title"] for p in peers.values()) + " |", "|---" * (len(peers) + 1) + "|"]
    for s in results["scenarios"]:
        if s["key"] not in SUMMARY_ROWS:
            continue
        cells = [brief(s, p["observations"][s["key"]]) if p["installed"] else "not installed" for p in peers.values()]
        lines.append(f"| {SUMMARY_ROWS[s['key']]} | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", f"Measured {results['date']} on Python {results['python']} by `{REGENERATE}`."]
    return "\n".join(lines)


# --- output ------------------------------------------------------------------------------------------------


def _cells(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    peers = results["peers"]
    header = ["scenario", *(p["title"] for p in peers.values())]
    body = []
    for s in results["scenarios"]:
        row = [f"{s['key']}. {s['title']}"]
        for p in peers.values():
            row.append(p["observations"][s["key"]]["cell"] if p["installed"] else "not installed")
        body.append(row)
    return header, body


def to_markdown(results: dict[str, Any]) -> str:
    header, body = _cells(results)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    lines.append("")
    lines.append(f"Measured {results['date']} on Python {results['python']} by "
                 f"`{REGENERATE}`.")
    return "\n".join(lines)


def print_table(results: dict[str, Any], console: Console) -> None:
    header, body = _cells(results)
    table = Table(title=f"toolproof and its peers, same tool, same faults ({results['date']})",
                  title_justify="left", show_lines=True)
    for i, name in enumerate(header):
        table.add_column(name, ratio=1 if i == 0 else 2, overflow="fold")
    for row in body:
        table.add_row(*row)
    console.print(table)
    for key, text in results["policies"].items():
        console.print(f"[dim]{key}: {text}[/]")


def update_doc(path: Path, markdown: str, markers: tuple[str, str] = (DOC_START, DOC_END)) -> None:
    text = path.read_text()
    start, end = text.index(markers[0]) + len(markers[0]), text.index(markers[1])
    path.write_text(text[:start] + "\n" + markdown + "\n" + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers.compare", description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="also write every observation as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--update-doc", type=Path, help="replace the table between the markers in this file")
    parser.add_argument("--update-readme", type=Path, help="replace the short fault table in this file")
    args = parser.parse_args(argv)
    results = asyncio.run(run_all())
    markdown = to_markdown(results)
    if args.markdown:
        print(markdown)
        print()
        print(to_effects_markdown(results))
    else:
        print_table(results, Console(width=200))
        print(to_effects_markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    if args.update_doc:
        update_doc(args.update_doc, markdown)
        update_doc(args.update_doc, to_effects_markdown(results), (EFFECTS_START, EFFECTS_END))
    if args.update_readme:
        update_doc(args.update_readme, to_summary(results), (SUMMARY_START, SUMMARY_END))
        update_doc(args.update_readme, to_effects_summary(results), (EFFECTS_SUMMARY_START, EFFECTS_SUMMARY_END))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
