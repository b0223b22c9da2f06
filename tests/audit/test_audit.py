"""The audit trail and stop records: redaction, the background writer, hooks, logging, spans and the CLI."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Annotated, Any

import pytest

import toolproof
from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.audit._trail import AuditWriter
from toolproof.contract._errors import AuthFailed, TransientUpstream
from toolproof.contract._redaction import REDACTED
from toolproof.orchestration.policy import RetryPolicy
from toolproof.stores import MemoryStore
from toolproof.stores._records import AuditRecord, StopRecord

SECRET = "sk-live-4242-very-secret"


def build_tools() -> Toolset:
    @toolproof.tool(effect="read")
    def get_account(user: str, api_token: Annotated[str, toolproof.Secret], limit: int = 5) -> dict[str, Any]:
        """Get one account's balance from the bank.

        Use it when asked for a balance. Do not use it for payments. Returns the balance.

        Args:
            user: The user name.
            api_token: The bank token.
            limit: How many lines.
        """
        if user == "locked":
            raise AuthFailed("The bank refused the token.")
        return {"user": user, "balance": 10}

    def forward(args: dict[str, Any], ctx: CallContext) -> Any:
        raise TransientUpstream("503")

    open_schema = {"type": "object", "properties": {"url": {"type": "string"}, "headers": {"type": "object"}}}
    proxy = Tool.from_schema("call_api", "Call an API.", open_schema, forward, effect="read")
    return Toolset([get_account, proxy])


def everything(store: MemoryStore) -> str:
    return json.dumps([*store.list_audit(limit=10**6), *store.list_stops(limit=10**6)], default=repr)


@pytest.mark.parametrize("level", [logging.DEBUG, logging.INFO], ids=["writer-thread", "built-when-read"])
def test_a_secret_never_reaches_a_record_a_stop_or_a_log(caplog: pytest.LogCaptureFixture, level: int) -> None:
    caplog.set_level(level, logger="toolproof")  # DEBUG logs every record, so records are built as they come
    r = Runner(build_tools(), retry=RetryPolicy(base_delay_s=0.0))
    ctx = CallContext(conversation_id="c1", run_id="r1", principal="p")
    assert r.call_sync("get_account", {"user": "ann", "api_token": SECRET}, context=ctx).ok
    r.call_sync("get_account", {"user": "locked", "api_token": SECRET}, context=ctx)  # stop record
    r.call_sync("get_account", {"user": 5, "api_token": SECRET}, context=ctx)  # validation failure
    r.call_sync("get_account", json.dumps({"user": 5, "api_token": SECRET, "x": 1}), context=ctx)  # raw text
    r.call_sync("call_api", {"url": "u", "headers": {"Authorization": SECRET}}, context=ctx)  # open schema
    r.close()
    store = r.store
    assert isinstance(store, MemoryStore)
    dump = everything(store)
    assert SECRET not in dump
    assert SECRET not in caplog.text
    assert REDACTED in dump
    records = store.list_audit(limit=100)
    assert {rec.tool for rec in records} == {"get_account", "call_api"}
    first = records[-1]
    assert first.arguments == {"user": "ann", "api_token": REDACTED}
    assert (first.run_id, first.conversation_id, first.principal, first.validation) == ("r1", "c1", "p", "ok")
    assert first.schema_version == r.toolset.get("get_account").schema_version
    assert first.latency_ms >= 0


def test_every_attempt_is_recorded_with_class_code_and_outcome() -> None:
    r = Runner(build_tools(), retry=RetryPolicy(base_delay_s=0.0), breakers=None)
    env = r.call_sync("call_api", {"url": "u"})
    assert env.meta.attempts == 3
    r.flush()
    records = list(reversed(r.store.list_audit(tool="call_api")))
    assert [(x.attempt, x.outcome, x.error_class, x.code) for x in records] == [
        (n, "error", "transient_upstream", "TRANSIENT_UPSTREAM") for n in (1, 2, 3)
    ]
    assert len({x.call_id for x in records}) == 1


def test_validation_failures_feed_the_field_table() -> None:
    r = Runner(build_tools())
    for bad in ({"user": 1, "api_token": "t"}, {"user": 2, "api_token": "t"}, {"user": "u", "api_token": "t",
                                                                                "limit": "x"}):
        r.call_sync("get_account", bad)
    r.flush()
    version = r.toolset.get("get_account").schema_version
    assert r.store.field_failures() == [("get_account", "user", version, 2), ("get_account", "limit", version, 1)]
    invalid = [x for x in r.store.list_audit() if x.validation == "failed"]
    assert len(invalid) == 3 and all(x.attempt == 0 and x.outcome == "invalid" for x in invalid)


def test_nothing_is_lost_on_a_clean_shutdown_under_threads() -> None:
    r = Runner(build_tools())
    barrier = threading.Barrier(6)

    def worker(i: int) -> None:
        barrier.wait()
        for n in range(400):
            r.call_sync("get_account", {"user": f"u{i}-{n}", "api_token": "t"})

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r.close()
    records = r.store.list_audit(limit=10**6)
    assert len(records) == 2400
    assert len({x.arguments["user"] for x in records}) == 2400


class FlakyStore(MemoryStore):
    """A real in-memory store whose first audit write fails, as a database in a failover would."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    def append_audit(self, records: Sequence[AuditRecord]) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("database is failing over")
        super().append_audit(records)


def test_a_failed_batch_is_written_with_the_next_one() -> None:
    store = FlakyStore()
    r = Runner(build_tools(), store=store)
    r.call_sync("get_account", {"user": "a", "api_token": "t"})
    r.flush()
    assert store.list_audit() == []
    r.call_sync("get_account", {"user": "b", "api_token": "t"})
    r.close()
    assert [x.arguments["user"] for x in reversed(store.list_audit())] == ["a", "b"]


def test_hooks_see_records_and_stops() -> None:
    seen: list[AuditRecord | StopRecord] = []
    r = Runner(build_tools(), hooks=[seen.append], audit=False)
    r.call_sync("get_account", {"user": "locked", "api_token": "t"})
    r.close()
    assert any(isinstance(x, StopRecord) and x.reason == "non_retryable" for x in seen)
    assert any(isinstance(x, AuditRecord) and x.code == "AUTH_FAILED" for x in seen)
    assert r.store.list_audit() == []  # audit=False: hooks only
    assert len(r.store.list_stops()) == 1  # stops are always kept


def test_a_broken_hook_does_not_break_calls(caplog: pytest.LogCaptureFixture) -> None:
    def broken(record: Any) -> None:
        raise RuntimeError("hook bug")

    r = Runner(build_tools(), hooks=[broken])
    assert r.call_sync("get_account", {"user": "a", "api_token": "t"}).ok
    r.close()
    assert "hook" in caplog.text
    assert len(r.store.list_audit()) == 1


def test_stops_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolproof.stops")
    r = Runner(build_tools())
    env = r.call_sync("get_account", {"user": "locked", "api_token": SECRET})
    assert env.meta.extra["stop_id"] in caplog.text
    assert SECRET not in caplog.text


def test_an_audit_entry_becomes_the_frozen_record_it_describes() -> None:
    import dataclasses

    from toolproof.audit._trail import AuditEntry, build_audit

    tool = build_tools().get("get_account")
    error = AuthFailed("no", field="user")
    built = build_audit(AuditEntry(at=12.5, tool=tool, call_id="id", run_id="r", conversation_id="c", principal="p",
                                   idempotency_key="k", arguments={"user": "u"}, validation="failed", attempt=0,
                                   latency_s=0.25, outcome="invalid", error=error))
    normal = AuditRecord(
        at=12.5, call_id="id", tool="get_account", schema_version=tool.schema_version, arguments={"user": "u"},
        validation="failed", attempt=0, latency_ms=250.0, outcome="invalid", run_id="r", conversation_id="c",
        principal="p", failing_fields=("user",), error_class="auth_failed", code="AUTH_FAILED", idempotency_key="k",
    )
    assert built == normal
    assert dataclasses.asdict(built) == dataclasses.asdict(normal)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.tool = "x"  # type: ignore[misc]


@pytest.mark.parametrize("hooks", [False, True], ids=["built-when-read", "writer-thread"])
def test_the_trail_keeps_what_was_sent_when_the_caller_reuses_its_arguments(hooks: bool) -> None:
    seen: list[Any] = []
    schema = {"type": "object", "properties": {"url": {"type": "string"}, "headers": {"type": "object"}}}
    echo = Tool.from_schema("fetch", "Fetch a page.", schema, lambda args, ctx: "page", effect="read")
    r = Runner(Toolset([echo]), hooks=[seen.append] if hooks else ())
    sent: dict[str, Any] = {"url": "u", "headers": {"accept": "json"}}
    assert r.call_sync("fetch", sent).ok
    sent["url"] = "changed"
    sent["headers"]["accept"] = "changed"
    assert r.call_sync("fetch", sent).ok
    r.close()
    assert [x.arguments for x in reversed(r.store.list_audit())] == [
        {"url": "u", "headers": {"accept": "json"}}, {"url": "changed", "headers": {"accept": "changed"}}]


def test_an_in_memory_trail_needs_no_writer_thread() -> None:
    r = Runner(build_tools())
    for n in range(3):
        r.call_sync("get_account", {"user": f"u{n}", "api_token": SECRET})
    assert r.writer is not None and r.writer._thread is None  # each entry went straight to the store
    records = r.store.list_audit()
    assert [x.arguments for x in reversed(records)] == [{"user": f"u{n}", "api_token": REDACTED} for n in range(3)]
    assert all(isinstance(x, AuditRecord) for x in records)


def test_writer_is_lazy_and_close_is_idempotent() -> None:
    writer = AuditWriter(MemoryStore())
    assert writer._thread is None
    writer.close()
    writer.close()


def test_calls_after_close_are_still_recorded() -> None:
    store = MemoryStore()
    r = Runner(build_tools(), store=store)
    r.call_sync("get_account", {"user": "a", "api_token": "t"})
    r.close()
    r.call_sync("get_account", {"user": "b", "api_token": "t"})
    assert [x.arguments["user"] for x in reversed(store.list_audit())] == ["a", "b"]


def test_opentelemetry_spans_follow_the_genai_conventions() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    r = Runner(build_tools(), otel=provider.get_tracer("test"))
    ok = r.call_sync("get_account", {"user": "a", "api_token": SECRET})
    bad = r.call_sync("get_account", {"user": "locked", "api_token": SECRET})
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["execute_tool get_account", "execute_tool get_account"]
    first, second = (dict(s.attributes or {}) for s in spans)
    assert first["gen_ai.operation.name"] == "execute_tool"
    assert first["gen_ai.tool.name"] == "get_account"
    assert first["gen_ai.tool.call.id"] == ok.meta.call_id
    assert "error.type" not in first
    assert second["error.type"] == "auth_failed"
    assert second["toolproof.stop_id"] == bad.meta.extra["stop_id"]
    assert spans[1].status.status_code.name == "ERROR"
    assert SECRET not in json.dumps([dict(s.attributes or {}) for s in spans])


def test_handler_spans_nest_under_the_tool_span_and_cancellation_ends_it() -> None:
    import asyncio

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")

    def inner(args: dict[str, Any], ctx: CallContext) -> Any:
        with tracer.start_as_current_span("http GET"):
            return {"ok": True}

    async def hang(args: dict[str, Any], ctx: CallContext) -> Any:
        await asyncio.sleep(10)

    schema = {"type": "object", "properties": {}}
    tools = Toolset([Tool.from_schema("get_a", "A.", schema, inner, effect="read"),
                     Tool.from_schema("get_b", "B.", schema, hang, effect="read")])
    r = Runner(tools, otel=tracer)
    r.call_sync("get_a", {})
    child, parent = exporter.get_finished_spans()
    assert child.parent is not None and child.parent.span_id == parent.context.span_id

    async def cancel() -> None:
        task = asyncio.ensure_future(r.call("get_b", {}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())
    last = exporter.get_finished_spans()[-1]
    assert last.name == "execute_tool get_b"
    assert dict(last.attributes or {})["error.type"] == "cancelled"


async def test_spans_on_the_async_path() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    r = Runner(build_tools(), otel=provider.get_tracer("test"))
    await r.call("get_account", {"user": "a", "api_token": "t"})
    assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool get_account"]
