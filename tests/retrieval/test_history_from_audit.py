"""`UsageHistory.from_audit` on a real audit trail: calls made through a `Runner` on a SQLite file, read back."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import toolproof
from toolproof import CallContext, Tool, Toolset
from toolproof.catalog import search_tools_tool
from toolproof.retrieval import ToolIndex, Usage, UsageHistory
from toolproof.retrieval._history import MAX_QUERY
from toolproof.stores import open_store

TEXT = {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        "required": ["path", "text"], "additionalProperties": False}
TO = {"type": "object", "properties": {"to": {"type": "string", "format": "email"}, "body": {"type": "string"}},
      "required": ["to", "body"], "additionalProperties": False}


def _ok(arguments: Mapping[str, Any], context: CallContext) -> dict[str, Any]:
    return {"done": True}


def _broken(arguments: Mapping[str, Any], context: CallContext) -> dict[str, Any]:
    raise RuntimeError("the printer is on fire")


TOOLS = [
    Tool.from_schema("write_file", "Write text to a file at a path on disk.", TEXT, _ok, effect="write",
                     idempotent=True),
    Tool.from_schema("send_email", "Send an email message to one address.", TO, _ok, effect="write", idempotent=True),
    Tool.from_schema("print_page", "Print a page of text on the office printer.", TEXT, _broken, effect="read"),
    Tool.from_schema("summarize_meeting", "Summarize a meeting transcript into action items.", TEXT, _ok,
                     effect="read"),
]


def _trail(tmp_path: Path) -> list[toolproof.AuditRecord]:
    """Four threads of calls through a real runner and SQLite file; the records as the store returns them."""
    url = f"sqlite:///{tmp_path / 'audit.sqlite3'}"
    tools = Toolset(TOOLS)
    runner = toolproof.Runner(Toolset([*TOOLS, search_tools_tool(tools)]), store=url,
                              retry=toolproof.RetryPolicy(max_attempts=1))
    chat = CallContext(conversation_id="chat-1", principal="ana")
    runner.call_sync("search_tools", {"query": "keep the standup notes on disk"}, context=chat)
    runner.call_sync("summarize_meeting", {"path": "standup.txt", "text": "..."}, context=chat)
    runner.call_sync("write_file", {"path": "notes.md", "text": "a"}, context=chat)
    runner.call_sync("write_file", {"path": "notes2.md", "text": "b"}, context=chat)  # the same tool: once
    runner.call_sync("search_tools", {"query": "mail the notes to Bo"}, context=chat)
    runner.call_sync("send_email", {"to": 42, "body": "notes"}, context=chat)  # invalid: not a use
    runner.call_sync("send_email", {"to": "bo@example.com", "body": "notes"}, context=chat)
    runner.call_sync("search_tools", {"query": "print the agenda"}, context=chat)
    runner.call_sync("print_page", {"path": "agenda", "text": "x"}, context=chat)  # raised: not a use
    run_only = CallContext(run_id="nightly-7")  # no conversation: the run groups the calls
    runner.call_sync("search_tools", {"query": "archive the report to a file"}, context=run_only)
    runner.call_sync("write_file", {"path": "report.md", "text": "r"}, context=run_only)
    runner.call_sync("search_tools", {"query": "save the file"})  # no ids at all: nothing ties the two
    runner.call_sync("write_file", {"path": "x.md", "text": "x"})
    runner.call_sync("write_file", {"path": "y.md", "text": "y"}, context=CallContext(conversation_id="chat-2"))
    runner.close()  # drains the audit writer
    store = open_store(url, create=False)
    try:
        return store.list_audit(limit=1000)  # newest first: from_audit puts each thread in time order
    finally:
        store.close()


def test_a_search_and_the_tools_called_after_it_are_one_usage(tmp_path: Path) -> None:
    records = _trail(tmp_path)
    assert len(records) == 14 and {r.outcome for r in records} >= {"ok", "invalid", "error"}
    history = UsageHistory.from_audit(records)
    assert sorted(history.records, key=lambda u: u.key) == [
        Usage("keep the standup notes on disk", ("summarize_meeting", "write_file"), key="chat-1#1"),
        Usage("mail the notes to Bo", ("send_email",), key="chat-1#2"),
        Usage("archive the report to a file", ("write_file",), key="nightly-7#1"),
    ]  # "print the agenda" only failed; chat-2 never searched; the call with no ids belongs to no thread


def test_the_learned_history_brings_in_the_step_the_message_never_names(tmp_path: Path) -> None:
    history = UsageHistory.from_audit(_trail(tmp_path))
    message = "keep the notes of the standup"
    plain = ToolIndex.from_tools(TOOLS)
    learned = ToolIndex.from_tools(TOOLS, history=history)
    assert plain.search_ids(message, 4) == []  # no tool's own words match the message
    assert learned.search_ids(message, 2) == ["summarize_meeting", "write_file"]  # what that search led to
    assert learned.search_ids(message, 4, exclude_history="chat-1#1") == ["send_email"]  # only "notes" is left


def test_another_search_tool_name_and_hostile_records(tmp_path: Path) -> None:
    records = _trail(tmp_path)
    assert UsageHistory.from_audit(records, search_tool="find_tools").records == ()  # no search by that name

    class Odd:
        def __init__(self, at: float, tool: Any, arguments: Any, outcome: str = "ok",
                     conversation_id: str | None = "c", run_id: str | None = None) -> None:
            self.at, self.tool, self.arguments, self.outcome = at, tool, arguments, outcome
            self.conversation_id, self.run_id = conversation_id, run_id

    huge = "notes\udcff\x00 " * MAX_QUERY
    odd = [Odd(1, "search_tools", {"query": huge}), Odd(2, 7, {}), Odd(3, "send_email", None),
           Odd(4, "search_tools", "not a mapping"), Odd(5, "write_file", {}),
           Odd(6, "search_tools", {"query": "   "}), Odd(7, "write_file", {}),
           Odd(8, "search_tools", {"query": ["a list"]}), Odd(9, "write_file", {}),
           Odd(10, "search_tools", {"query": "replayed counts"}), Odd(11, "write_file", {}, outcome="replayed")]
    history = UsageHistory.from_audit(odd)  # type: ignore[arg-type]  # attributes of the wrong type on purpose
    assert [(len(u.message), u.tool_ids, u.key) for u in history.records] == [
        (MAX_QUERY, ("send_email",), "c#1"), (len("replayed counts"), ("write_file",), "c#2")]
    assert history.votes(huge) == {"send_email": 1.0}  # the cut query still searches, surrogates and all


def test_calls_at_one_instant_keep_the_order_of_a_listing_either_way() -> None:
    """A coarse clock gives a search and the call after it one time; a store lists the newest first."""

    class At:
        def __init__(self, tool: str, query: str | None = None) -> None:
            self.at, self.tool, self.outcome = 5.0, tool, "ok"
            self.arguments = {"query": query} if query else {}
            self.conversation_id, self.run_id = "c", None

    oldest_first = [At("search_tools", "book a room"), At("book_room"), At("search_tools", "pay"), At("pay")]
    oldest_first.insert(0, At("search_tools", "earlier"))
    oldest_first[0].at = 1.0
    newest_first = oldest_first[::-1]
    for listing in (oldest_first, newest_first):
        history = UsageHistory.from_audit(listing)  # type: ignore[arg-type]  # only the attributes it reads
        assert [(u.message, u.tool_ids, u.key) for u in history.records] == [
            ("book a room", ("book_room",), "c#2"), ("pay", ("pay",), "c#3")]
