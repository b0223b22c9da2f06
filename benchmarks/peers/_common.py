"""What every peer runs: the same `place_order` tool on a real SQLite `orders` table, the same scenarios,
the same scripted model policy, and what was observed.

The tool's annotations are module-level types (no `from __future__ import annotations` here) so that every
library resolves them the same way from the function's globals.
"""

import asyncio
import dataclasses
import datetime as dt
import json
import re
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

Crop = Literal["onion", "groundnut", "jeera", "cotton_seed"]
CROPS = ("onion", "groundnut", "jeera", "cotton_seed")
QuantityKg = Annotated[float, Field(ge=10, le=5000)]

TIMEOUT_S = 0.1  # the built-in tool timeout each peer is configured with in scenario 5
SLOW_S = 0.4  # how long the slow body keeps running after it committed (well past TIMEOUT_S)

#: How the body behaves: on every run, or (`*_once`) on its first run only, the later runs plain.
Body = Literal["ok", "commit_then_timeout", "commit_then_slow", "reset_once", "slow_once", "rate_limit_once",
               "nothing_once"]
Policy = Literal["once", "obedient", "eager", "stubborn", "always"]
RETRY_AFTER_S = 0.2  # the Retry-After of the staged 429
Kind = Literal["extra", "enum", "coerce", "datetime", "effect"]

GOOD = {"crop": "onion", "quantity_kg": 400, "delivery_date": "2026-12-03"}


@dataclass(frozen=True)
class Scenario:
    """One fault: the arguments the scripted model sends, how the body behaves, how the model reacts."""

    key: str
    title: str
    kind: Kind
    args: dict[str, Any]
    body: Body = "ok"
    policy: Policy = "once"
    timeout: bool = False  # configure the peer's built-in tool timeout (TIMEOUT_S)
    parallel: int = 1  # the same call this many times in the model's first response (a race)
    resend_args: dict[str, Any] | None = None  # the resend's arguments (default: the same call)


POLICY_TEXT = {
    "once": "the model sends the call once and reads the reply",
    "obedient": "the model resends the same call once only if the reply tells it to try again",
    "eager": "the model resends the same call once after any error reply that does not tell it not to",
    "stubborn": "the model resends the same call once after any error reply, whatever it says",
    "always": "the call is sent once more whatever the reply (its stream was cut before the reply arrived)",
}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("1", "unknown extra argument (discount=5)", "extra", {**GOOD, "discount": 5}),
    Scenario("2", "enum violation (crop=wheat)", "enum", {**GOOD, "crop": "wheat"}),
    Scenario("3a", 'quantity_kg sent as the string "100"', "coerce", {**GOOD, "quantity_kg": "100"}),
    Scenario("3b", "datetime 2026-12-03T00:00:00 for a date", "datetime",
             {**GOOD, "delivery_date": "2026-12-03T00:00:00"}),
    Scenario("3c", "datetime 2026-12-03T10:30:00 for a date", "datetime",
             {**GOOD, "delivery_date": "2026-12-03T10:30:00"}),
    Scenario("4a", "effect committed, reply lost (TimeoutError); obedient model", "effect", GOOD,
             body="commit_then_timeout", policy="obedient"),
    Scenario("4b", "effect committed, reply lost (TimeoutError); eager model", "effect", GOOD,
             body="commit_then_timeout", policy="eager"),
    Scenario("4c", "effect committed, reply lost (TimeoutError); stubborn model", "effect", GOOD,
             body="commit_then_timeout", policy="stubborn"),
    Scenario("5a", f"built-in tool timeout ({TIMEOUT_S:g} s), body commits then runs on; obedient model", "effect",
             GOOD, body="commit_then_slow", policy="obedient", timeout=True),
    Scenario("5b", f"built-in tool timeout ({TIMEOUT_S:g} s), body commits then runs on; eager model", "effect",
             GOOD, body="commit_then_slow", policy="eager", timeout=True),
)


#: The double-effect scenarios of `toolproof chaos` (the same keys), as far as a library's loop can be given them:
#: one logical operation each, a stubborn model, the orders table counting the effects.
EFFECT_SCENARIOS: tuple[Scenario, ...] = (
    Scenario("reply_lost", "the effect commits, the reply is lost (ConnectionResetError); the model resends",
             "effect", GOOD, body="reset_once", policy="stubborn"),
    Scenario("timeout_after_commit", f"the effect commits, the body runs past the {TIMEOUT_S:g} s tool timeout; the "
             "model resends", "effect", GOOD, body="slow_once", policy="stubborn", timeout=True),
    Scenario("racing_resends", "the model sends the same call twice in one response", "effect", GOOD,
             policy="once", parallel=2),
    Scenario("rate_limited", f"the first run gets a 429 (Retry-After {RETRY_AFTER_S:g} s) before any effect; the "
             "model resends", "effect", GOOD, body="rate_limit_once", policy="stubborn"),
    Scenario("changed_arguments", "the operation is sent again in the same conversation with quantity_kg changed",
             "effect", GOOD, policy="always", resend_args={**GOOD, "quantity_kg": 401}),
    Scenario("new_request_id", "the effect commits, the stream is cut; the call is re-issued (a new call id)",
             "effect", GOOD, policy="always"),
    Scenario("ok_did_nothing", "the body answers ok having done nothing; only a verify hook can tell", "effect",
             GOOD, body="nothing_once", policy="once"),
)
#: The chaos scenario these tables cannot stage: it needs a process per library to kill.
NOT_STAGED = {"worker_killed": "needs a worker process per library to kill: run `toolproof chaos` on your toolset"}


class RateLimitedError(Exception):
    """The staged 429, as an HTTP client raises it: `status_code` and `retry_after` set, nothing done."""

    status_code = 429
    retry_after = RETRY_AFTER_S


class OrderBook:
    """A real SQLite file with an `orders` table; the tool body inserts and commits one row per run."""

    def __init__(self, path: Path, body: Body = "ok") -> None:
        self.path = path
        self.body = body
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, crop TEXT NOT NULL,"
            " quantity_kg REAL NOT NULL, delivery_date TEXT NOT NULL, created_at TEXT NOT NULL)"
        )
        self.seen: list[dict[str, str]] = []  # what the body received, one entry per run
        self.keys: dict[str, int] = {}  # order ids by the idempotency key a body was given (toolproof's)
        self._running = 0

    def place(self, crop: str, quantity_kg: float, delivery_date: dt.date, key: str | None = None) -> dict[str, Any]:
        with self._lock:
            self._running += 1
            first = not self.seen
            self.seen.append({"crop": repr(crop), "quantity_kg": f"{quantity_kg!r} ({type(quantity_kg).__name__})",
                              "delivery_date": f"{type(delivery_date).__name__} {delivery_date}"})
        body = self.body if first or not self.body.endswith("_once") else "ok"
        try:
            if body == "rate_limit_once":
                raise RateLimitedError(f"429 Too Many Requests (Retry-After: {RETRY_AFTER_S:g})")
            if body == "nothing_once":
                return {"order_id": 0, "crop": crop, "quantity_kg": quantity_kg, "delivery_date": str(delivery_date)}
            with self._lock:
                cur = self._db.execute(  # autocommit: the row is durable when execute returns
                    "INSERT INTO orders (crop, quantity_kg, delivery_date, created_at) VALUES (?, ?, ?, ?)",
                    (crop, float(quantity_kg), str(delivery_date), dt.datetime.now(dt.UTC).isoformat()),
                )
                order_id = cur.lastrowid
                if key is not None and order_id is not None:
                    self.keys[key] = order_id
            if body == "commit_then_timeout":
                raise TimeoutError("the reply to place_order was lost after the order was committed")
            if body == "reset_once":
                raise ConnectionResetError("connection reset after the order was committed")
            if body in ("commit_then_slow", "slow_once"):
                time.sleep(SLOW_S)
            return {"order_id": order_id, "crop": crop, "quantity_kg": quantity_kg,
                    "delivery_date": str(delivery_date)}
        finally:
            with self._lock:
                self._running -= 1

    def rows(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM orders").fetchone()[0])

    def wait_idle(self, timeout_s: float = 5.0) -> None:
        """Wait for bodies still running in worker threads (a timed-out sync body is never stopped)."""
        deadline = time.monotonic() + timeout_s
        while self._running and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self._db.close()


def make_place_order(book: OrderBook) -> Callable[..., dict[str, Any]]:
    """The one tool every library wraps: a plain `def` with typed, constrained parameters."""

    def place_order(crop: Crop, quantity_kg: QuantityKg, delivery_date: dt.date) -> dict[str, Any]:
        """Place one order: a crop, a quantity in kg (10 to 5000) and a delivery date (YYYY-MM-DD).

        Use this only after the buyer clearly asked to book. Returns the new order's id.
        """
        return book.place(crop, quantity_kg, delivery_date)

    return place_order


def plain_place_order(crop: Crop, quantity_kg: QuantityKg, delivery_date: dt.date) -> dict[str, Any]:
    """Place one order: a crop, a quantity in kg (10 to 5000) and a delivery date (YYYY-MM-DD).

    The overhead benchmark's tool: the same signature with a body that does no I/O.
    """
    return {"order_id": 1, "crop": crop, "quantity_kg": quantity_kg, "delivery_date": str(delivery_date)}


# --- what the model got back, and what the scripted model does with it ------------------------------------

_TOLD_RETRY = re.compile(r"\b(try again|retry|call (it )?again|has to be made again)\b", re.IGNORECASE)
_TOLD_NOT = re.compile(r"\b(do not|don't|never)\s+(call|retry|try)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reply:
    """One tool reply as the model sees it, reduced to the facts the table reports."""

    channel: str  # how it reached the model, e.g. "function_call_output", "CallToolResult isError"
    text: str  # the text the model reads
    error: bool  # whether the reply is an error (native error channel where one exists, else: no order id)
    structured: bool  # machine-readable (JSON text or MCP structuredContent), not prose only
    told_retry: bool
    told_not_to: bool
    summary: str = ""  # a short label where the text is long (the envelope's class and next action)

    @staticmethod
    def from_text(channel: str, text: str, *, error: bool | None = None, structured: bool | None = None,
                  told_retry: bool = False) -> "Reply":
        if error is None:
            error = "order_id" not in text
        if structured is None:
            structured = _is_json_container(text)
        told_not = bool(_TOLD_NOT.search(text))
        retry = (told_retry or bool(_TOLD_RETRY.search(text))) and not told_not
        return Reply(channel, text, error, structured, retry, told_not)


def _is_json_container(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False


def wants_resend(policy: Policy, reply: Reply) -> bool:
    """The scripted model's one decision after a reply: send the same call again, or stop."""
    if policy == "always":
        return True
    if policy == "once" or not reply.error:
        return False
    if policy == "obedient":
        return reply.told_retry
    if policy == "eager":
        return not reply.told_not_to
    return True  # stubborn


@dataclass
class Observation:
    """What one peer did in one scenario, all measured."""

    peer: str
    scenario: str
    calls_sent: int = 0  # tool calls the scripted model sent
    bodies: int = 0  # times the tool body ran
    rows: int = 0  # rows in the orders table afterwards
    seen: list[dict[str, str]] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    escaped: str | None = None  # an exception that escaped the agent run
    schema_closed: bool | None = None  # the published input schema says additionalProperties: false
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Turns:
    """The scripted model's turns, for every loop: the first response holds the scenario's call (`parallel` times);
    after reading the replies it resends once (`resend_args`, else the same call) if its policy says so."""

    scenario: Scenario
    obs: Observation
    turns: int = 0

    def next(self, replies: list[Reply]) -> list[dict[str, Any]]:
        """The calls of the model's next response, after reading `replies` (empty: it is done)."""
        self.obs.replies.extend(replies)
        s = self.scenario
        if self.turns == 0:
            calls = [dict(s.args) for _ in range(s.parallel)]
        elif self.turns == 1 and replies and any(wants_resend(s.policy, r) for r in replies):
            calls = [dict(s.resend_args or s.args)]
        else:
            calls = []
        self.turns += 1
        self.obs.calls_sent += len(calls)
        return calls


async def simple_loop(scenario: Scenario, send: Callable[[dict[str, Any]], Awaitable[Reply]],
                      obs: Observation) -> None:
    """The agent loop for peers that have none of their own (MCP clients, toolproof): send, read, maybe resend;
    the calls of one response run at once."""
    turns = Turns(scenario, obs)
    calls = turns.next([])
    while calls:
        replies = list(await asyncio.gather(*(send(c) for c in calls)))
        calls = turns.next(replies)
