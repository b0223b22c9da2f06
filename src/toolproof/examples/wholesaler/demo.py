"""`toolproof demo`: the source article's ordering agent makes its mistakes, and toolproof catches each one.

A scripted model plays the agent (or a live one, `--live --model openai:MODEL`); the faults are injected into
the wholesaler's own shop (a lost reply, a flaky price feed, a dead stock service, a slow cancel). Everything
the screen says was computed by real toolproof code on real SQLite files in one folder: the Runner's store
(`toolproof.sqlite3`: audit, stop records, write journal) and the shop's `orders.sqlite3`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import random
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.json import JSON
from rich.table import Table

import toolproof
from toolproof import CallContext, Envelope, Meta, Runner, Toolset, classify_http
from toolproof.evals._models import Model, ModelError, ModelReply, ModelRequest, ScriptedModel
from toolproof.evals._scoring import ToolCall
from toolproof.journal._journal import Journal
from toolproof.lint import lint
from toolproof.orchestration.breaker import BreakerConfig
from toolproof.pipeline._runner import Clock

from .old_tools import build_old_toolset
from .shop import Crop, Grade, Shop
from .tools import build_toolset

TODAY = date(2026, 10, 19)  # a Monday, as in the article
FRIDAY = "2026-10-23"
SEED = 19
CLOCK_SCALE = 100  # every wait the runner asks for is slept 100x shorter (said on screen)
REPLY_TIMEOUT_S = 0.3  # place_order / cancel_order timeout in the demo
LATE_REPLY_S = 0.6  # how late the lost replies arrive (after the timeout)
BUYER = "B-17"
SYSTEM_PROMPT = (
    "You are the ordering desk of a produce wholesaler. Today is Monday 2026-10-19. Answer the buyer and use "
    "the tools to act. Dates are YYYY-MM-DD. If a tool returns an error, follow its next_action and hint."
)


#: The three ways an agent fails that the demo exists for (the source article's), in the order of the scenes.
THREE_FAILURES = "the wrong tool (scene 2), the wrong input (scene 3) and the repeated action (scene 4)"


# --- the faults --------------------------------------------------------------------------------------------


@dataclass
class Faults:
    """What is broken right now (switched per scene), and what the broken parts did (for the screen)."""

    price_failures: list[int] = field(default_factory=list)  # HTTP statuses the feed answers before a 200
    price_log: list[int] = field(default_factory=list)  # every status the price feed answered
    watch_price: bool = False
    stock_down: bool = False
    stock_dispatches: int = 0  # calls that reached the dead stock service
    lose_order_reply: bool = False
    order_inserts: list[bool] = field(default_factory=list)  # per insert: did it create the row?
    slow_cancel: bool = False


class FaultyShop(Shop):
    """The wholesaler's shop with the demo's faults injected where the real ones would happen."""

    def __init__(self, path: str | Path, faults: Faults, *, today: Callable[[], date]) -> None:
        super().__init__(path, today=today)
        self.faults = faults

    def price(self, crop: str, grade: str, on: date | None = None) -> float:
        f = self.faults
        if f.watch_price and on is None:
            if f.price_failures:
                status = f.price_failures.pop(0)
                f.price_log.append(status)
                # The feed's client turns the HTTP answer into the contract's error (real classification).
                raise classify_http(status, {"Content-Type": "application/json"}, {"error": "price feed overloaded"})
            f.price_log.append(200)
        return super().price(crop, grade, on)

    def stock_kg(self, crop: str, grade: str) -> float:
        if self.faults.stock_down:
            self.faults.stock_dispatches += 1
            raise ConnectionError("stock service: connection refused")
        return super().stock_kg(crop, grade)

    def insert_order(
        self, *, buyer_id: str, crop: str, grade: str, quantity_kg: float, delivery_date: date, request_key: str
    ) -> tuple[dict[str, Any], bool]:
        row, created = super().insert_order(buyer_id=buyer_id, crop=crop, grade=grade, quantity_kg=quantity_kg,
                                            delivery_date=delivery_date, request_key=request_key)
        self.faults.order_inserts.append(created)
        if self.faults.lose_order_reply:
            self.faults.lose_order_reply = False
            time.sleep(LATE_REPLY_S)  # the row is committed; the reply comes too late (the runner times out)
        return row, created

    def cancel(self, order_id: int) -> dict[str, Any] | None:
        row = super().cancel(order_id)
        if self.faults.slow_cancel:
            self.faults.slow_cancel = False
            time.sleep(LATE_REPLY_S)  # cancelled in the database; the reply comes too late
        return row


class StockSnapshot(BaseModel):
    crop: Crop
    grade: Grade
    available_kg: float
    as_of: str
    note: str


def build_demo_toolset(shop: FaultyShop) -> Toolset:
    """The six tools, with the demo's timeouts, `check_stock` falling back to a read-only snapshot tool."""
    base = build_toolset(shop)
    snapshot = {(c.value, g): shop.stock_kg(c.value, g) for c in Crop for g in ("A", "B")}
    taken = f"{TODAY.isoformat()} 07:00 (start of the demo)"

    @toolproof.tool(effect="read", group="stock", examples=[{"crop": "groundnut"}])
    def get_stock_snapshot(crop: Crop, grade: Grade = "A") -> StockSnapshot:
        """Get this morning's stock count of one crop, in kg; it may be hours old.

        Use this only when check_stock is unavailable. Do not use it to promise an exact quantity (say the
        count may be out of date). Returns the counted kg and when the count was taken.

        Args:
            crop: The crop. Cumin is jeera.
            grade: Quality grade. Use A if the buyer does not say.
        """
        return StockSnapshot(crop=crop, grade=grade, available_kg=snapshot[(crop, grade)], as_of=taken,
                             note="morning count; may be out of date")

    tools = []
    for t in base:
        if t.name == "check_stock":
            t = dataclasses.replace(t, fallback="get_stock_snapshot")
        elif t.name in ("place_order", "cancel_order"):
            t = dataclasses.replace(t, timeout_s=REPLY_TIMEOUT_S)
        tools.append(t)
    return Toolset([*tools, get_stock_snapshot])


# --- a shortened clock ---------------------------------------------------------------------------------------


@dataclass
class ShortClock:
    """A real `toolproof.Clock` whose sleeps are `scale` times shorter; it keeps every wait it was asked for."""

    scale: float = CLOCK_SCALE
    asked: list[float] = field(default_factory=list)

    def _sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        time.sleep(seconds / self.scale)

    async def _async_sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        await asyncio.sleep(seconds / self.scale)

    def clock(self) -> Clock:
        return Clock(sleep=self._sleep, async_sleep=self._async_sleep)


# --- the agent ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    call: ToolCall
    envelope: Envelope


@dataclass
class Turn:
    """One buyer message: the model's calls per step (parallel calls share a step) and its final text."""

    message: str
    steps: list[list[Step]] = field(default_factory=list)
    text: str | None = None


class Agent:
    """The fixed agent loop: ask the model, run its calls through the Runner (parallel calls concurrently),
    hand back the envelopes, until it answers in text."""

    def __init__(self, model: Model, runner: Runner, *, max_steps: int = 4) -> None:
        self.model = model
        self.runner = runner
        self.max_steps = max_steps
        self.tools = tuple(runner.toolset.to_openai())

    async def turn(self, case_id: str, message: str, context: CallContext) -> Turn:
        turn = Turn(message)
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                          {"role": "user", "content": message}]
        for step in range(self.max_steps):
            reply = await self.model.complete(ModelRequest(case_id, 0, tuple(messages), self.tools, step))
            if not reply.calls:
                turn.text = reply.text
                return turn
            envelopes = await asyncio.gather(*(self._run(c, context) for c in reply.calls))
            turn.steps.append([Step(c, e) for c, e in zip(reply.calls, envelopes, strict=True)])
            ids = [f"call_{case_id}_{step}_{i}" for i in range(len(reply.calls))]
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments or {}))}}
                for c, i in zip(reply.calls, ids, strict=True)]})
            messages += [{"role": "tool", "tool_call_id": i, "content": e.to_json()}
                         for i, e in zip(ids, envelopes, strict=True)]
        return turn

    async def _run(self, call: ToolCall, context: CallContext) -> Envelope:
        arguments: Any = call.arguments if call.arguments is not None else call.raw_arguments
        try:
            return await self.runner.call(call.name, arguments, context=context)
        except toolproof.UnknownTool:  # answered as toolproof's SDK loops answer it (integrations.sdk)
            error = toolproof.InvalidArgument(f"There is no tool called {call.name!r}.", code="UNKNOWN_TOOL",
                                              received=call.name, allowed_values=self.runner.toolset.names,
                                              hint="Call one of the tools in allowed_values.")
            return Envelope.failure(error, Meta(call.name, "", attempts=0))


def _last_results(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The envelopes of the latest tool messages (after the last assistant message)."""
    out: list[dict[str, Any]] = []
    for m in reversed(messages):
        if m.get("role") != "tool":
            break
        out.insert(0, json.loads(m["content"]))
    return out


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


def scripted_agent(request: ModelRequest) -> ModelReply:
    """The offline model: it makes the article's mistakes, then reads toolproof's envelopes and acts on them."""
    case, step = request.case_id, request.step
    buyer = str(request.messages[1]["content"])
    results = _last_results(request.messages)
    last = results[0] if results else {}
    if case == "wrong-tool-old" and step == 0:  # nine look-alikes: the generic `search` looks as good as any
        return ModelReply((_call("search", query="jeera rate today"),))
    if case == "wrong-tool-new":
        if step == 0:  # the habit of the old toolset: a name the six do not have
            return ModelReply((_call("rates", item="jeera"),))
        error = last.get("error") or {}
        if error.get("code") == "UNKNOWN_TOOL" and "get_today_price" in (error.get("allowed_values") or []):
            return ModelReply((_call("get_today_price", crop="jeera"),))
    if case == "quintal":
        if step == 0:  # the mistake: "4 quintal" sent as 4
            return ModelReply((_call("place_order", crop="onion", quantity_kg=4, delivery_date=FRIDAY),))
        error = last.get("error") or {}
        if error.get("field") == "quantity_kg" and "1 quintal is 100 kg" in str(error.get("hint")):
            quintals = float(re.search(r"(\d+) quintal", buyer).group(1))  # type: ignore[union-attr]
            return ModelReply((_call("place_order", crop="onion", quantity_kg=quintals * 100, delivery_date=FRIDAY),))
    elif case == "groundnut" and step == 0:  # the same call twice in one turn (a duplicate)
        call = _call("place_order", crop="groundnut", quantity_kg=40, delivery_date=FRIDAY)
        return ModelReply((call, call))
    elif case == "groundnut-again" and step == 0:  # the buyer saw a timeout: the model books again
        return ModelReply((_call("place_order", crop="groundnut", quantity_kg=40, delivery_date=FRIDAY),))
    elif case == "price" and step == 0:
        return ModelReply((_call("get_today_price", crop="jeera"),))
    elif case.startswith("stock") and step == 0:
        crop = "groundnut" if "groundnut" in buyer else "cotton_seed"
        return ModelReply((_call("check_stock", crop=crop),))
    elif case == "cancel" and step == 0:
        order_id = int(re.search(r"order (\d+)", buyer).group(1))  # type: ignore[union-attr]
        return ModelReply((_call("cancel_order", order_id=order_id),))
    return ModelReply(text=_scripted_answer(last))


def _scripted_answer(last: Mapping[str, Any]) -> str:
    if not last:
        return "How can I help?"
    if last.get("ok"):
        result = last.get("result") or {}
        if "order_id" in result:
            return f"Order {result['order_id']}: {result['quantity_kg']:g} kg {result['crop']} for " \
                   f"{result['delivery_date']} ({result['note']})."
        if "results" in result:
            return f"The rate list says: {result['results'][0]['text']}."
        if "price_rs_per_kg" in result:
            return f"Today's {result['crop']} rate is Rs {result['price_rs_per_kg']} a kg."
        if "available_kg" in result:
            extra = " (this morning's count; it may be out of date)" if "as_of" in result else ""
            return f"We have {result['available_kg']:g} kg of {result['crop']}{extra}."
    error = last.get("error") or {}
    if error.get("next_action") == "escalate":
        return "I could not confirm that; I have passed it to a colleague who will get back to you."
    return f"Sorry: {error.get('message')}"


# --- rendering helpers ------------------------------------------------------------------------------------------


def _args(call: ToolCall) -> str:
    return json.dumps(dict(call.arguments or {}), ensure_ascii=False) if call.arguments is not None else str(
        call.raw_arguments)


def _outcome(env: Envelope) -> str:
    if env.ok:
        res = env.result if isinstance(env.result, dict) else {}
        bits = [f"{k}={res[k]}" for k in ("order_id", "price_rs_per_kg", "available_kg", "status", "note")
                if k in res]
        tags = [f"attempts={env.meta.attempts}"]
        if env.meta.replayed:
            tags.append("replayed")
        if "fallback_from" in env.meta.extra:
            tags.append(f"fallback_from={env.meta.extra['fallback_from']}")
        return f"[green]ok[/] {' '.join(bits)}  [dim]{' '.join(tags)}[/]"
    err = env.error
    assert err is not None
    return (f"[red]{err.error_class.value}[/] {err.code}: {err.message} [dim]next_action={err.next_action.value} "
            f"attempts={env.meta.attempts}[/]")


def _short_key(key: str | None) -> str:
    return "-" if not key else key[:16] + "…"


# --- the demo -----------------------------------------------------------------------------------------------------


@dataclass
class DemoResult:
    directory: Path
    store_url: str
    orders_path: Path
    seconds: float


class Demo:
    """The eight scenes, in order, on one folder: lint, then the three failures (wrong tool, wrong input,
    repeated action), then the faults production adds, then the evals."""

    def __init__(self, directory: Path, console: Console, model: Model | None = None) -> None:
        self.dir = directory
        self.console = console
        self.faults = Faults()
        self.orders_path = directory / "orders.sqlite3"
        self.store_url = f"sqlite:///{directory / 'toolproof.sqlite3'}"
        self.shop = FaultyShop(self.orders_path, self.faults, today=lambda: TODAY)
        self.short = ShortClock()
        self.runner = Runner(
            build_demo_toolset(self.shop),
            store=self.store_url,
            clock=self.short.clock(),
            rng=random.Random(SEED).random,
            breakers={"check_stock": BreakerConfig(failure_threshold=2, recovery_s=60.0), "*": BreakerConfig()},
        )
        # Poll a key that is in flight elsewhere every 1 s of the demo clock (10 ms real).
        self.runner.journal = Journal(self.runner.store, poll_s=1.0)
        self.model = model or ScriptedModel("scripted", scripted_agent)
        self.agent = Agent(self.model, self.runner)
        self.live = model is not None

    def close(self) -> None:
        self.runner.close()
        self.shop.close()

    # -- helpers
    def section(self, number: int, title: str, why: str) -> None:
        self.console.print()
        self.console.rule(f"[bold]{number}. {title}")
        self.console.print(f"[dim]{why}[/]")

    def show_turn(self, turn: Turn, *, expand_errors: bool = False) -> None:
        c = self.console
        c.print(f"[bold cyan]buyer:[/] {turn.message}")
        for n, step in enumerate(turn.steps, 1):
            for s in step:
                c.print(f"  [bold]model[/] (step {n}) → {s.call.name} {_args(s.call)}")
                c.print(f"  [bold]toolproof[/] ← {_outcome(s.envelope)}")
                if expand_errors and not s.envelope.ok:
                    c.print("  The envelope the model reads (the refusal is a tool result it can repair from):")
                    shown = s.envelope.to_dict()
                    shown["meta"] = {k: v for k, v in shown["meta"].items() if k != "call_id"}
                    c.print(JSON.from_data(shown))
        if turn.text:
            c.print(f"[bold magenta]agent:[/] {turn.text}")

    def orders(self, where: str = "", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        db = sqlite3.connect(self.orders_path)
        try:
            cur = db.execute(f"SELECT id, buyer_id, crop, quantity_kg, delivery_date, status, request_key FROM orders "
                             f"{where} ORDER BY id", params)
            return [dict(zip([d[0] for d in cur.description], row, strict=True)) for row in cur.fetchall()]
        finally:
            db.close()

    def context(self, conversation: str) -> CallContext:
        return CallContext(conversation_id=conversation, principal=BUYER)

    # -- scenes
    def scene_lint(self) -> None:
        self.section(1, "Lint: the old nine tools against the new six",
                     "toolproof.lint reads only what the model reads: names, descriptions, schemas.")
        old = lint(build_old_toolset(Shop()))
        new = lint(build_toolset(Shop(today=lambda: TODAY)))
        rules: dict[str, tuple[str, str]] = {}
        for f in (*old, *new):
            rules[f.code] = (f.rule, f.severity)
        table = Table("code", "rule", "severity", "old (9 tools)", "new (6 tools)", title="lint findings by rule")
        for code in sorted(rules):
            slug, severity = rules[code]
            table.add_row(code, slug, severity, str(sum(f.code == code for f in old)),
                          str(sum(f.code == code for f in new)))
        table.add_section()
        table.add_row("", "total", "", str(len(old)), str(len(new)))
        self.console.print(table)
        for code in ("TP302", "TP404", "TP104"):
            hit = next((f for f in old if f.code == code), None)
            if hit is not None:
                self.console.print(f"  [yellow]{hit.code}[/] {hit.tool}: {hit.message}")

    async def scene_wrong_tool(self) -> dict[str, Any]:
        self.section(2, "Wrong tool: the old nine tools against the new six, on one question",
                     "The buyer asks for today's jeera rate. The old nine offer four look-alikes (search, get_data, "
                     "rates, price_lookup) and say when to use none; the new six have one price tool for today.")
        message = "What is today's jeera rate?"
        old_runner = Runner(build_old_toolset(self.shop), store=self.store_url)
        try:
            old = await Agent(self.model, old_runner).turn("wrong-tool-old", message, self.context("chat-rate-old"))
        finally:
            old_runner.close()
        self.console.print("[bold]with the old nine tools[/]")
        self.show_turn(old)
        old_calls = [s for step in old.steps for s in step]
        today = self.shop.price("jeera", "A")
        if old_calls and all(s.envelope.ok for s in old_calls):
            self.console.print(f"[yellow]Not caught:[/] {', '.join(s.call.name for s in old_calls)} exists and its "
                               f"arguments are valid, so it ran. Today's rate is Rs {today:g} a kg; only lint "
                               "(scene 1) and the selection eval (scene 8) say the old tools invite this pick.")
        self.console.print("[bold]with the new six tools[/] (the same model, still used to the old names)")
        new = await self.agent.turn("wrong-tool-new", message, self.context("chat-rate-new"))
        self.show_turn(new, expand_errors=True)
        caught = [s for step in new.steps for s in step if not s.envelope.ok and s.envelope.error is not None
                  and s.envelope.error.code == "UNKNOWN_TOOL"]
        if caught:
            self.console.print(f"[green]Caught:[/] {caught[0].call.name} is not a tool of this toolset; the "
                               "envelope names those that are, and the model picks the one whose description says "
                               "it is for today's price.")
        return {"old": old, "new": new, "caught": caught, "today": today}

    async def scene_quintal(self) -> dict[str, Any]:
        self.section(3, "Wrong input: the quintal trap",
                     "The buyer wants 4 quintal (400 kg). The old tool took `quantity: 4` and booked 4 kg.")
        turn = await self.agent.turn("quintal", "Please send 4 quintal of onions on Friday.",
                                     self.context("chat-quintal"))
        self.show_turn(turn, expand_errors=True)
        rows = self.orders("WHERE crop = 'onion' AND buyer_id = ?", (BUYER,))
        self.console.print(f"orders table: {len(rows)} onion order(s) for {BUYER}: "
                           + ", ".join(f"#{r['id']} {r['quantity_kg']:g} kg" for r in rows))
        return {"turn": turn, "rows": rows}

    async def scene_double_order(self) -> dict[str, Any]:
        self.section(4, "Repeated action: the double order",
                     f"The first place_order commits, then its reply is lost (timeout {REPLY_TIMEOUT_S} s). The "
                     "model sends the call twice in one turn (run concurrently), and books again on the next turn.")
        ctx = self.context("chat-groundnut")
        self.faults.lose_order_reply = True
        inserts_before = len(self.faults.order_inserts)
        try:
            first = await self.agent.turn("groundnut", "Book 40 kg groundnut for Friday.", ctx)
            self.show_turn(first)
            again = await self.agent.turn(
                "groundnut-again",
                "The app said the order timed out. Please book the 40 kg groundnut for Friday again.", ctx)
            self.show_turn(again)
        finally:
            self.faults.lose_order_reply = False
        steps = [s for step in (*first.steps, *again.steps) for s in step if s.call.name == "place_order"]
        table = Table("call", "what toolproof did", "attempts", "replayed", "order_id", "idempotency key",
                      title="every place_order of this conversation")
        for n, s in enumerate(steps, 1):
            e = s.envelope
            res = e.result if e.ok and isinstance(e.result, dict) else {}
            if e.meta.replayed:
                how = "journal: same key, replayed the first order (not sent to the shop)"
            elif e.meta.attempts > 1:
                how = f"sent {e.meta.attempts}x: reply lost, retried with the same key → {res.get('note', '?')!r}"
            else:
                how = _outcome(e)
            table.add_row(str(n), how, str(e.meta.attempts), str(e.meta.replayed), str(res.get("order_id", "-")),
                          _short_key(e.meta.idempotency_key))
        self.console.print(table)
        key = next((s.envelope.meta.idempotency_key for s in steps if s.envelope.meta.idempotency_key), None)
        self.runner.flush()
        audit = [a for a in reversed(self.runner.store.list_audit(limit=1000, tool="place_order"))
                 if a.idempotency_key == key and a.outcome != "replayed"]
        if audit:
            atable = Table("attempt", "outcome", "class", "code", "latency ms", title="audit rows (toolproof.sqlite3)")
            for a in audit:
                atable.add_row(str(a.attempt), a.outcome, a.error_class or "", a.code or "", f"{a.latency_ms:.0f}")
            self.console.print(atable)
        inserts = self.faults.order_inserts[inserts_before:]
        rows = self.orders("WHERE request_key = ?", (key or "",))
        otable = Table("id", "buyer_id", "crop", "quantity_kg", "delivery_date", "status", "request_key",
                       title="orders.sqlite3: SELECT ... FROM orders WHERE request_key = <that key>")
        for r in rows:
            otable.add_row(*(str(r[k]) for k in ("id", "buyer_id", "crop", "quantity_kg", "delivery_date", "status")),
                           _short_key(r["request_key"]))
        self.console.print(otable)
        self.console.print(f"The shop's insert ran {len(inserts)} time(s) ({sum(inserts)} created a row, "
                           f"{len(inserts) - sum(inserts)} hit the UNIQUE request key); "
                           f"{len(steps)} place_order call(s) → [bold]{len(rows)} order row(s)[/].")
        return {"steps": steps, "key": key, "rows": rows, "inserts": inserts}

    async def scene_flaky_price(self) -> dict[str, Any]:
        self.section(5, "A flaky price feed",
                     f"The feed answers 503, 503, then 200. Waits run on a toolproof.Clock shortened {CLOCK_SCALE}x "
                     "(the delays below are what the retry policy computed; each was slept 1/"
                     f"{CLOCK_SCALE} as long).")
        self.faults.price_failures = [503, 503]
        self.faults.watch_price = True
        self.faults.price_log.clear()
        self.short.asked.clear()
        try:
            turn = await self.agent.turn("price", "What is today's jeera rate?", self.context("chat-price"))
        finally:
            self.faults.watch_price = False
            self.faults.price_failures.clear()
        delays = list(self.short.asked)
        self.show_turn(turn)
        env = next((s.envelope for step in turn.steps for s in step if s.call.name == "get_today_price"), None)
        self.runner.flush()
        audit = [a for a in reversed(self.runner.store.list_audit(limit=1000, tool="get_today_price"))
                 if env is not None and a.call_id == env.meta.call_id]
        policy = self.runner.retry
        table = Table("attempt", "feed answered", "toolproof", "wait computed (s)", "slept (ms, real)",
                      title=f"retries: RetryPolicy(max_attempts={policy.max_attempts}, base_delay_s="
                            f"{policy.base_delay_s}, multiplier={policy.multiplier}, jitter={policy.jitter!r}), "
                            f"seeded RNG")
        for i, a in enumerate(audit):
            status = str(self.faults.price_log[i]) if i < len(self.faults.price_log) else "?"
            wait = delays[i] if a.outcome == "error" and i < len(delays) else None
            table.add_row(str(a.attempt), status,
                          f"{a.outcome} {a.code or ''}".strip() + (" → retry" if wait is not None else ""),
                          "" if wait is None else f"{wait:.3f}",
                          "" if wait is None else f"{wait / CLOCK_SCALE * 1000:.1f}")
        self.console.print(table)
        return {"envelope": env, "delays": delays, "feed": list(self.faults.price_log), "audit": audit}

    async def scene_dead_stock(self) -> dict[str, Any]:
        breaker_cfg = BreakerConfig(failure_threshold=2, recovery_s=60.0)
        self.section(6, "A dead stock service",
                     f"Every check_stock call fails to connect. The breaker opens after "
                     f"{breaker_cfg.failure_threshold} straight failures; the read-only fallback "
                     "get_stock_snapshot answers.")
        self.faults.stock_down = True
        rows = []
        turns = []
        try:
            for case, message in (("stock-1", "Do you have 500 kg groundnut in stock?"),
                                  ("stock-2", "And how much cotton seed do you have?")):
                before = self.faults.stock_dispatches
                turn = await self.agent.turn(case, message, self.context("chat-stock"))
                turns.append(turn)
                self.show_turn(turn)
                breaker = self.runner.breaker("check_stock")
                for step in turn.steps:
                    for s in step:
                        e = s.envelope
                        res = e.result if e.ok and isinstance(e.result, dict) else {}
                        rows.append((case, s.call.name, self.faults.stock_dispatches - before,
                                     breaker.state.value if breaker else "-", e.meta.tool,
                                     str(e.meta.extra.get("fallback_from", "-")), str(res.get("available_kg", "-"))))
        finally:
            self.faults.stock_down = False
        table = Table("turn", "called", "sent to dead service", "breaker", "answered by", "fallback_from", "kg",
                      title="check_stock: breaker and fallback (fallback_from is meta.extra)")
        for r in rows:
            table.add_row(r[0], r[1], str(r[2]), r[3], r[4], r[5], r[6])
        self.console.print(table)
        return {"rows": rows, "turns": turns}

    async def scene_high_risk(self, order_id: int | None) -> dict[str, Any]:
        self.section(7, "A high-risk write that times out",
                     f"cancel_order is risk='high'. The cancel reaches the database, then its reply is late "
                     f"(timeout {REPLY_TIMEOUT_S} s): no automatic retry, a stop record for a person.")
        if order_id is None:
            self.console.print("[yellow]no onion order to cancel (the model did not place one); skipped[/]")
            return {}
        self.faults.slow_cancel = True
        try:
            turn = await self.agent.turn("cancel", f"Please cancel my onion order {order_id}.",
                                         self.context("chat-cancel"))
        finally:
            self.faults.slow_cancel = False
        self.show_turn(turn)
        env = next((s.envelope for step in turn.steps for s in step if s.call.name == "cancel_order"), None)
        stop_id = env.meta.extra.get("stop_id") if env is not None else None
        if stop_id is None:
            self.console.print("[yellow]no stop record was written for this turn[/]")
            return {"envelope": env}
        store = self.runner.store
        stop = store.get_stop(str(stop_id))
        assert stop is not None
        self._stop_table(stop, "the stop record (toolproof.sqlite3)")
        status = self.orders("WHERE id = ?", (order_id,))[0]["status"]
        note = f"checked orders.sqlite3: order {order_id} is {status}"
        effect = "done" if status == "cancelled" else "not_done"
        self.console.print(f"A person checks the orders table: order {order_id} is [bold]{status}[/]. They resolve "
                           "the stop with the CLI:")
        cmd = [sys.executable, "-m", "toolproof", "stops", "resolve", str(stop_id), "--store", self.store_url,
               "--note", note, "--effect", effect]
        self.console.print(f"  $ {toolproof_command()} stops resolve {stop_id} --store {self.store_url} "
                           f"--note {shlex.quote(note)} --effect {effect}", highlight=False, soft_wrap=True)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=_child_env())
        if done.returncode != 0:
            self.console.print(f"[red]the CLI failed ({done.returncode}):[/] {done.stderr.strip()}")
        resolved = store.get_stop(str(stop_id))
        assert resolved is not None
        self._stop_table(resolved, f"after the CLI (exit {done.returncode}): the same record, resolved")
        return {"envelope": env, "stop": resolved, "cli_rc": done.returncode}

    def _stop_table(self, stop: Any, title: str) -> None:
        table = Table("field", "value", title=title, show_header=False)
        for name in ("id", "tool", "arguments", "error_class", "code", "reason", "effect_status", "attempts",
                     "idempotency_key", "resolved_at", "resolution"):
            value = getattr(stop, name)
            if name == "resolved_at" and value is not None:
                value = datetime.fromtimestamp(value).strftime("%Y-%m-%d %H:%M:%S")
            if name == "arguments":
                value = json.dumps(value)
            table.add_row(name, "-" if value is None else str(value))
        self.console.print(table)

    def scene_evals(self) -> dict[str, Any]:
        self.section(8, "Evals: old toolset against new, on recorded model outputs",
                     "The recorded outputs were authored by hand as a plausible model "
                     "(toolproof.examples.wholesaler.cases); "
                     "the scores are computed now by toolproof.evals.")
        from .cases import run_demo

        reports: dict[str, Any] = run_demo()
        table = Table("toolset", "right tool", "right tool + args (pass@1)", "cases passed (of 40)",
                      "recovery: right next step", "recovery macro acc.", title="selection (40 cases x 3) and "
                      "recovery (35 seeded errors)")
        for label in ("old", "new"):
            sel, rec = reports[f"selection_{label}"], reports[f"recovery_{label}"]
            passed, total = rec.overall
            table.add_row(label, _rate(sel.tool_accuracy), _rate(sel.pass_at_1), str(sel.cases_passed.passed),
                          f"{passed}/{total}", f"{rec.macro_accuracy:.0%}")
        self.console.print(table)
        return reports

    def summary(self, seconds: float, failures: Sequence[tuple[str, str, str]] = ()) -> None:
        self.runner.flush()
        store = self.runner.store
        audit = len(store.list_audit(limit=1_000_000))
        stops = store.list_stops(limit=1_000_000)
        journal = store.journal_list(limit=1_000_000)
        orders = self.orders()
        self.console.print()
        self.console.rule("[bold]Done")
        if failures:
            caught = Table("failure (scene)", "what caught it", "what was left", title="the three failures")
            for row in failures:
                caught.add_row(*row)
            self.console.print(caught)
        table = Table("file", "what it holds", title=f"everything is in {self.dir}")
        table.add_row("toolproof.sqlite3", f"{audit} audit rows, {len(stops)} stop record(s) "
                      f"({sum(s.resolved_at is not None for s in stops)} resolved), {len(journal)} journal entries")
        table.add_row("orders.sqlite3", f"{len(orders)} order rows")
        self.console.print(table)
        command = toolproof_command()
        self.console.print(f"Look around:  {command} stops list --status all --store {self.store_url}",
                           highlight=False, soft_wrap=True)
        self.console.print(f"              {command} journal list --store {self.store_url}", highlight=False,
                           soft_wrap=True)
        self.console.print(f"              {command} audit tail --store {self.store_url}", highlight=False,
                           soft_wrap=True)
        self.console.print(f"Demo folder: [bold]{self.dir}[/]  ({seconds:.1f} s)", highlight=False, soft_wrap=True)


def _rate(rate: Any) -> str:
    return f"{rate.passed}/{rate.total} ({rate.passed / rate.total:.0%})" if rate.total else "-"


def toolproof_command() -> str:
    """This same toolproof as a shell command that works as printed, without PATH or an activated venv: the
    running `toolproof` script by its full path, else `python -m toolproof` with this interpreter."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name in ("toolproof", "toolproof.exe") and script.is_file():
        return shlex.quote(str(script.absolute()))  # not resolved: a venv's script, not what it links to
    return f"{shlex.quote(sys.executable)} -m toolproof"


def _child_env() -> dict[str, str]:
    """The CLI subprocess imports the same toolproof as this process (a source tree or an install)."""
    env = dict(os.environ)
    here = str(Path(toolproof.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


@contextlib.contextmanager
def quiet_toolproof_logs() -> Iterator[None]:
    """No log noise on the console: the `toolproof` loggers' records go nowhere (the store still gets them)."""
    logger = logging.getLogger("toolproof")
    handler = logging.NullHandler()
    saved = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = saved


def default_dir(base: Path | None = None) -> Path:
    """A folder no earlier run used (two runs in one second must not share databases), under `base`
    (default: the current folder) in `.toolproof/`, beside the CLI's default store."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    parent = (base or Path.cwd()).absolute() / ".toolproof"
    candidate, n = parent / f"demo-{stamp}", 1
    while candidate.exists():
        n += 1
        candidate = parent / f"demo-{stamp}-{n}"
    return candidate


#: The files a run leaves in its folder, and the mark that says the demo wrote them.
DEMO_FILES = ("toolproof.sqlite3", "orders.sqlite3")
MARK = ".toolproof-demo"
_SIDECARS = ("", "-wal", "-shm", "-journal")


class FolderInUse(ValueError):
    """The folder holds databases the demo did not write: it never deletes what it did not make."""


def start_fresh(directory: Path) -> list[str]:
    """Make `directory` ready for a new run and return the files of an earlier run it removed. A second run
    in one folder starts fresh instead of replaying the first run's journal (every call `replayed`, no effect
    of its own); databases without the demo's mark are refused, not deleted."""
    found = [name for name in DEMO_FILES if (directory / name).exists()]
    if found and not (directory / MARK).is_file():
        raise FolderInUse(f"{directory} already holds {', '.join(found)} that the demo did not write; "
                          "give --dir an empty or new folder")
    for name in found:
        for suffix in _SIDECARS:
            (directory / f"{name}{suffix}").unlink(missing_ok=True)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARK).write_text("written by `toolproof demo`: a next run in this folder replaces "
                                  f"{' and '.join(DEMO_FILES)}\n", encoding="utf-8")
    return found


async def _scenes(demo: Demo) -> list[tuple[str, str, str]]:
    """The scenes that need the agent; returns, per failure the demo exists for, what caught it and what was
    left (for the closing table)."""
    wrong_tool = await demo.scene_wrong_tool()
    quintal = await demo.scene_quintal()
    double = await demo.scene_double_order()
    await demo.scene_flaky_price()
    await demo.scene_dead_stock()
    rows = quintal["rows"]
    await demo.scene_high_risk(int(rows[-1]["id"]) if rows else None)
    caught = wrong_tool["caught"]
    refused = [f"{s.envelope.error.code} on {s.envelope.error.field}, next_action {s.envelope.error.next_action.value}"
               for step in quintal["turn"].steps for s in step if s.envelope.error is not None]
    return [
        ("wrong tool (2)", f"UNKNOWN_TOOL for {caught[0].call.name}, the real tools named" if caught else "not caught",
         "answered by " + ", ".join(s.call.name for step in wrong_tool["new"].steps for s in step
                                    if s.envelope.ok) or "-"),
        ("wrong input (3)", "schema validation: " + (", ".join(refused) or "nothing refused"),
         ", ".join(f"#{r['id']} {r['quantity_kg']:g} kg" for r in rows) or "no order"),
        ("repeated action (4)", "one idempotency key: retried, then replayed from the journal",
         f"{len(double['steps'])} place_order calls -> {len(double['rows'])} order row(s)"),
    ]


def run(directory: Path | None = None, *, console: Console | None = None, model: Model | None = None) -> DemoResult:
    """Run the whole demo in `directory` (created; default: a new `.toolproof/demo-YYYYmmdd-HHMMSS/` under
    the current folder). The folder is printed, absolute, in the first lines and again at the end. A folder
    an earlier run used starts fresh (said on screen); one holding databases the demo did not write raises
    `FolderInUse`.

    `model` replaces the scripted agent (e.g. `load_model("openai:...")`); a `ModelError` propagates.
    """
    started = time.perf_counter()
    console = console or Console()
    directory = Path(directory).absolute() if directory is not None else default_dir()
    removed = start_fresh(directory)
    with quiet_toolproof_logs():
        demo = Demo(directory, console, model)
        try:
            console.rule("[bold]toolproof demo: the wholesaler's ordering agent")
            who = f"a live model ({model.name})" if model is not None else "a scripted model"
            console.print(f"Writing to {directory} (toolproof.sqlite3: the Runner's store; orders.sqlite3: the shop)",
                          highlight=False, soft_wrap=True)
            if removed:
                console.print(f"Starting fresh: this folder held an earlier demo run; removed its "
                              f"{' and '.join(removed)} (nothing below is replayed from it).", highlight=False)
            console.print(f"The agent is played by {who}; the faults are injected into the shop. Today is "
                          f"{TODAY.isoformat()}.", highlight=False)
            console.print(f"An agent fails in three ways, and each is shown caught: {THREE_FAILURES}. Scenes 5 "
                          "to 7 add the faults production adds.", highlight=False)
            demo.scene_lint()
            failures = asyncio.run(_scenes(demo))
            demo.scene_evals()
            seconds = time.perf_counter() - started
            demo.summary(seconds, failures)
        finally:
            demo.close()
    return DemoResult(directory, demo.store_url, demo.orders_path, time.perf_counter() - started)


__all__ = ["DEMO_FILES", "MARK", "THREE_FAILURES", "Agent", "Demo", "DemoResult", "Faults", "FaultyShop",
           "FolderInUse", "ModelError", "ShortClock", "build_demo_toolset", "default_dir", "run", "scripted_agent",
           "start_fresh", "toolproof_command"]
