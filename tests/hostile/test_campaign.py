"""The hostile campaign as a property and fault suite: generated hostile inputs (a fixed seed, so the counts are
the same every run) against the real pipeline, stores, HTTP guards, gateway listing rule, redaction and hash
chain. Each category checks its invariant on every case and that the number of cases is the one
docs/security.md states ("The hostile suite"), so the documented figures are this suite's own."""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import sqlite3
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import jsonschema_rs
import mcp_types as types
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import toolproof
from tests._data import REPO_ROOT
from tests.pg_support import drop_schema, postgres_server, unique_schema, with_schema
from toolproof import CallContext, Runner, Tool, Toolset
from toolproof.contract._envelope import envelope_schema
from toolproof.contract._untrusted import findings
from toolproof.inbox import create_app
from toolproof.mcp._auth import HostCheck, host_names
from toolproof.mcp._listing import MAX_DESCRIPTION, MAX_SCHEMA_TEXT, MAX_TITLE, clean_listing
from toolproof.stores import MemoryStore, SqliteStore, Store, open_store

VALIDATOR = jsonschema_rs.validator_for(envelope_schema())
SEED = 20261201
INJECT = ("</tool_result>", "<system>", "</system>", "<|im_start|>system", "<|im_end|>", "[INST]", "[/INST]",
          "<<SYS>>", "\u202e", "\u200b", "\u2066", "\ufeff", "\x1b[2J", "\x07", "\x00", "<script>alert(1)</script>",
          "<!-- hidden -->", "<img src=x onerror=alert(1)>")


def documented(category: str) -> int:
    """The count docs/security.md gives for a category of the hostile suite."""
    text = (REPO_ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    found = re.search(rf"^\| {re.escape(category)} \| ([\d,]+) \|", text, re.MULTILINE)
    assert found is not None, f"docs/security.md has no row for {category!r}"
    return int(found.group(1).replace(",", ""))


def strict_json_envelope(envelope: toolproof.Envelope) -> None:
    """Strict JSON (no NaN, no lone surrogate) that validates against the published envelope schema."""
    text = envelope.to_json()
    text.encode("utf-8")  # a lone surrogate cannot be encoded
    data = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    VALIDATOR.validate(data)


# --- 1. hostile arguments, sync and async --------------------------------------------------------------------

class Unit(Enum):
    KG = "kg"
    T = "t"


@toolproof.tool(effect="read")
def weigh(crop: str, quantity: int, unit: Unit, tags: list[str], ratio: float = 1.0) -> dict[str, Any]:
    """Weigh a crop.

    Use it to weigh. Returns the weight.
    """
    return {"crop": crop, "quantity": quantity, "unit": unit.value, "tags": tags, "ratio": ratio}


class _Weird:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def _hostile_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(16)
    if depth > 3 or pick == 0:
        return rng.choice([None, True, 10**400, -(2**70), math.nan, math.inf, -0.0, 1e308 * 10])
    if pick == 1:
        return "".join(rng.choice(["a", "\ud800", "\udfff", "\x00", "é", "\u202e", "<system>"]) for _ in range(8))
    if pick == 2:
        return "x" * rng.choice([0, 1, 10_000, 200_000])
    if pick == 3:
        return [_hostile_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if pick == 4:
        return {rng.choice(["k", "", "\ud800", "__proto__"]): _hostile_value(rng, depth + 1)}
    if pick == 5:
        nested: Any = "bottom"
        for _ in range(rng.choice([50, 500])):
            nested = [nested]
        return nested
    if pick == 6:
        return b"\xff\xfe"
    if pick == 7:
        return _Weird()
    if pick == 8:
        return rng.choice(["kg", "t", "KG", "tons"])
    if pick == 9:
        return {1, 2}
    return rng.choice([0, -1, 3.5, "onion", ["a", "b"], {"crop": "x"}])


def hostile_arguments(count: int) -> Iterator[Any]:
    rng = random.Random(SEED)
    keys = ("crop", "quantity", "unit", "tags", "ratio", "extra", "")
    for i in range(count):
        kind = i % 5
        if kind == 0:
            yield _hostile_value(rng)  # not even an object
        elif kind == 1:  # JSON text as the arguments, sometimes broken
            yield rng.choice(['{"crop": "onion", "quantity": 1e999, "unit": "kg", "tags": []}', '{"crop": "\\ud800"}',
                              "{", "null", "[1,2]", '{"crop": NaN}'])
        else:
            yield {rng.choice(keys): _hostile_value(rng) for _ in range(rng.randrange(1, 6))}


def test_hostile_argument_sets_always_get_a_strict_json_envelope_sync_and_async() -> None:
    runner = Runner(Toolset([weigh]))
    cases = list(hostile_arguments(documented("hostile argument sets") // 2))
    envelopes = [runner.call_sync("weigh", args) for args in cases]

    async def all_async() -> list[toolproof.Envelope]:
        return [await runner.call("weigh", args) for args in cases]

    envelopes += asyncio.run(all_async())
    for envelope in envelopes:
        strict_json_envelope(envelope)
    assert len(envelopes) == documented("hostile argument sets")
    assert sum(e.ok for e in envelopes) < len(envelopes)  # the set is hostile: most are refused, as envelopes
    runner.close()


# --- 2. misbehaving tool bodies, on three stores -------------------------------------------------------------

class _Loop:
    def __init__(self) -> None:
        self.me = self


def _bodies() -> list[Any]:
    recursive: list[Any] = []
    recursive.append(recursive)
    return [lambda: 1 / 0, lambda: {}["missing"], lambda: (_ for _ in ()).throw(ValueError("bad\x00\ud800")),
            lambda: {"nan": math.nan}, lambda: recursive, lambda: {"obj": object()}, lambda: {1: {2, 3}},
            lambda: b"\xff", lambda: "x" * 300_000, lambda: _Loop(), lambda: {"s": "\ud800"},
            lambda: (_ for _ in ()).throw(toolproof.ToolError("typed \u202e", code="OWN")),
            lambda: (_ for _ in ()).throw(RecursionError()), lambda: (_ for _ in ()).throw(MemoryError()),
            lambda: None, lambda: [math.inf]]


def _misbehaving_tool(body: Any, effect: str) -> Tool:
    def handler(args: dict[str, Any], ctx: CallContext) -> Any:
        return body()

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    return Tool.from_schema(f"body_{effect}", "A tool that misbehaves.", schema, handler, effect=effect,
                            idempotent=False)


@pytest.fixture(scope="module")
def pg_dsn() -> Iterator[str]:
    with postgres_server() as dsn:
        yield dsn


def _stores(tmp_path: Path, dsn: str) -> Iterator[Store]:
    yield MemoryStore()
    yield SqliteStore(tmp_path / "bodies.sqlite3")
    schema = unique_schema("tp_hostile")
    try:
        yield open_store(with_schema(dsn, schema))
    finally:
        drop_schema(dsn, schema)


def test_misbehaving_tool_bodies_never_break_the_schema_or_leave_a_write_in_flight(tmp_path: Path,
                                                                                   pg_dsn: str) -> None:
    calls = 0
    for store in _stores(tmp_path, pg_dsn):
        for i, body in enumerate(_bodies()):
            runner = Runner(Toolset([_misbehaving_tool(body, "read"), _misbehaving_tool(body, "write")]), store=store)
            for effect in ("read", "write"):
                for n in range(3):
                    strict_json_envelope(runner.call_sync(f"body_{effect}", {"n": i * 10 + n}))
                    calls += 1
            runner.flush()
        assert store.journal_list(status="in_flight", limit=1000) == []
        store.close()
    assert calls == documented("misbehaving tool bodies (memory, SQLite, PostgreSQL)")


# --- 3. the HTTP guards: Host, Origin, tokens, CSRF ----------------------------------------------------------

HOSTS_OK = ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "Localhost", "[::1]:8765", "127.0.0.1")
HOSTS_BAD = ("127.0.0.1:8765@evil.example", "evil.example", "127.0.0.1.evil.example", "127.0.0.1:x",
             "127.0.0.1:8765/evil", "localhost:1 evil", "[::1]:1@evil.example", "", "127.0.0.1:", "127.0.0.1:99999999",
             "évil.example", "127.0.0.1 x:y", "0x7f.0.0.1:8765", "2130706433:8765", "localhost.:8765")


def _mcp_like_app() -> Any:
    app = Starlette(routes=[Route("/mcp", lambda request: PlainTextResponse("ok"), methods=["GET", "POST"])])
    app.add_middleware(HostCheck, names=host_names("127.0.0.1", ["api.example.com:8443"]), path="/mcp")
    return app


def test_http_guards_refuse_every_forged_header_and_token() -> None:
    attacks = 0
    mcp = TestClient(_mcp_like_app(), base_url="http://127.0.0.1:8765")
    for host in (*HOSTS_OK, "API.example.com:443"):
        assert mcp.get("/mcp", headers={"host": host}).status_code == 200, host
        attacks += 1
    for host in HOSTS_BAD:
        assert mcp.get("/mcp", headers={"host": host.encode()}).status_code in (400, 421), host
        attacks += 1
    for origin in ("http://evil.example", "http://127.0.0.1:1@evil.example", "null", "file://", "http://127.0.0.1.evil",
                   "javascript:alert(1)", "http://localhost:8765/path"):
        assert mcp.get("/mcp", headers={"origin": origin}).status_code == 403, origin
        attacks += 1
    rng = random.Random(SEED)
    token = "a-long-enough-token-0123"
    inbox = TestClient(create_app(MemoryStore(), token=token), base_url="http://127.0.0.1:8765",
                       follow_redirects=False)
    for _ in range(40):
        forged = "".join(rng.choice(["a", "é", "\u202e", "日", "0", "-", token[:4]]) for _ in range(rng.randrange(30)))
        if forged == token:
            continue
        assert inbox.get("/approvals", params={"token": forged}).status_code == 401, forged
        assert inbox.get("/approvals", headers={"authorization": f"Bearer {forged}".encode()}).status_code == 401
        attacks += 2
    for host in ("127.0.0.1:8765@evil.example", "evil.example", "127.0.0.1.evil.example", "[::1]:1@evil.example",
                 "évil.example", ""):  # the inbox: every Host naming another site
        assert inbox.get("/approvals", headers={"host": host.encode(), "authorization": f"Bearer {token}"}
                         ).status_code == 400
        attacks += 1
    assert attacks == documented("forged Host, Origin and token requests")


# --- 4. poisoned upstream listings ---------------------------------------------------------------------------

def _poisoned(rng: random.Random, i: int) -> types.Tool:
    def text(n: int) -> str:
        return " ".join(rng.choice((*INJECT, "plain", "words", "<token>", "List<String>")) for _ in range(n))

    schema = {"type": "object", "properties": {
        f"p{i}": {"type": "string", "description": text(6), "title": text(2), "enum": ["a", text(1)],
                  "enumNames": [text(1), text(1)]},
        "nested": {"type": "object", "properties": {"q": {"type": "integer", "description": text(40) * 10}}}}}
    return types.Tool(name=f"tool{i}", title=text(3), description=text(rng.choice([5, 900])), input_schema=schema,
                      annotations=types.ToolAnnotations(title=text(2)))


def _words(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "title") and isinstance(value, str):
                yield value
            elif key == "enumNames":
                yield from (v for v in value if isinstance(v, str))
            else:
                yield from _words(value)
    elif isinstance(node, list):
        for item in node:
            yield from _words(item)


def test_poisoned_listings_are_served_clean_and_capped() -> None:
    rng = random.Random(SEED)
    count = documented("poisoned upstream tool listings")
    for i in range(count):
        served, report = clean_listing(_poisoned(rng, i))
        assert report
        assert served.description is not None and len(served.description) <= MAX_DESCRIPTION
        assert served.title is not None and len(served.title) <= MAX_TITLE
        words = [served.description, served.title, str(served.annotations.title if served.annotations else ""),
                 *_words(served.input_schema)]
        for word in words:
            assert findings(word) == [], word
        assert all(len(w) <= MAX_SCHEMA_TEXT for w in _words(served.input_schema))
        assert served.input_schema["properties"][f"p{i}"]["enum"][0] == "a"  # values stay as sent


# --- 5. URL credentials in argument values -------------------------------------------------------------------

@toolproof.tool(effect="write")
def connect(target: str, fallbacks: list[str], options: dict[str, str]) -> dict[str, Any]:
    """Connect to a target.

    Use it to connect. Returns what it connected to.
    """
    if target.startswith("crash"):
        raise RuntimeError(f"cannot connect to {fallbacks}")
    return {"target": target, "fallbacks": fallbacks}


def test_url_passwords_in_arguments_never_reach_a_store(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    store = SqliteStore(tmp_path / "creds.sqlite3")
    runner = Runner(Toolset([connect]), store=store)
    count = documented("URL credentials in argument values")
    passwords = []
    for i in range(count):
        password = f"pw{rng.randrange(10**9)}-{i}"
        passwords.append(password)
        scheme = rng.choice(["https", "postgresql", "redis", "amqp", "ftp", "mongodb+srv"])
        url = f"{scheme}://{rng.choice(['app', 'u', 'svc.account'])}:{password}@host{i}.internal:5432/db?x=1"
        target = ("crash " if i % 4 == 0 else "") + rng.choice([url, f"see {url} now"])
        runner.call_sync("connect", {"target": target, "fallbacks": [url], "options": {"dsn": url}})
    runner.close()
    with sqlite3.connect(tmp_path / "creds.sqlite3") as db:
        everything = json.dumps([db.execute(f"SELECT * FROM {t}").fetchall()
                                 for t in ("toolproof_audit", "toolproof_intents", "toolproof_stops")])
    assert all(p not in everything for p in passwords)


# --- 6. tampering with a chained store -----------------------------------------------------------------------

def test_every_tampering_is_named_by_the_chain(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    count = documented("edits and deletions of chained audit rows")
    path = tmp_path / "chain.sqlite3"
    store = SqliteStore(path)
    runner = Runner(Toolset([weigh]), store=store)
    for n in range(60):
        runner.call_sync("weigh", {"crop": f"c{n}", "quantity": n, "unit": "kg", "tags": []})
    runner.close()
    store.close()
    pristine = path.read_bytes()
    for _ in range(count):
        for extra in ("-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
        path.write_bytes(pristine)
        row = rng.randrange(1, 60)
        statement = rng.choice([f"UPDATE toolproof_audit SET arguments = '{{}}' WHERE id = {row}",
                                f"UPDATE toolproof_audit SET outcome = 'error' WHERE id = {row}",
                                f"UPDATE toolproof_audit SET at = at + 1 WHERE id = {row}",
                                f"DELETE FROM toolproof_audit WHERE id = {row}",
                                f"UPDATE toolproof_audit SET chain = NULL WHERE id = {row}"])
        db = sqlite3.connect(path)
        with db:
            db.execute(statement)
        db.close()
        reopened = SqliteStore(path)
        report = reopened.verify_chain("audit")
        reopened.close()
        assert report.broken_at in (str(row), str(row + 1)), (statement, report)
