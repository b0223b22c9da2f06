"""Chaos on the wholesaler: its old tools, called bare as an agent framework's default loop calls them, take
effect twice under every repeat-causing fault; the same tools through toolproof's runner, and the new tools,
take effect once (the old tools' one exception: a changed quantity is a second order, as they have no
operation keys)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolproof
from tests.chaos import _targets
from toolproof.chaos import SCENARIOS, Row, run_chaos, scenario
from toolproof.examples.wholesaler import Shop

OLD = "tests.chaos._targets:old_tools"
NEW = "tests.chaos._targets:new_tools"
REPEATS = {"reply_lost", "timeout_after_commit", "worker_killed", "racing_resends", "new_request_id",
           "changed_arguments"}


def by_scenario(rows: list[Row], through: str) -> dict[str, Row]:
    return {r.scenario: r for r in rows if r.through == through}


def test_the_old_order_tool_bare_takes_effect_twice_in_every_repeat_and_once_through_toolproof() -> None:
    rows = run_chaos(_targets.old_tools(), target=OLD, tools=["order"], through=("bare", "toolproof"))
    bare, guarded = by_scenario(rows, "bare"), by_scenario(rows, "toolproof")
    assert {k for k, r in bare.items() if r.double_effect} == REPEATS
    assert all(bare[k].effects == 2 for k in REPEATS)
    assert bare["rate_limited"].effects == 1  # the 429 was a refusal: nothing was done the first time
    assert bare["reply_lost"].told[0].startswith("ReplyLost: connection reset after the effect")
    # Through the runner the journal holds every repeat of the same call; other arguments are another key.
    assert {k for k, r in guarded.items() if r.double_effect} == {"changed_arguments"}
    assert guarded["reply_lost"].effects == 1
    assert guarded["reply_lost"].told == ("outcome_unknown CONNECTION_LOST_AFTER_DISPATCH, next_action=escalate",
                                          "outcome_unknown OUTCOME_UNKNOWN, next_action=escalate")
    assert guarded["reply_lost"].calls_to_recover is None
    assert guarded["new_request_id"].told[-1] == "ok (replayed)" and guarded["new_request_id"].replayed
    assert guarded["racing_resends"].effects == 1 and sorted(guarded["racing_resends"].told) == ["ok", "ok (replayed)"]
    for r in rows:
        assert r.counted in ("instrumented body: each entry that returned without raising",
                             "not observable (no verify hook)")


def test_the_new_tools_through_toolproof_take_effect_once_in_every_scenario() -> None:
    rows = run_chaos(_targets.new_tools(), target=NEW, through=("toolproof",))
    assert {r.tool for r in rows} == {"place_order", "cancel_order"}
    observed = [r for r in rows if r.effects is not None and r.scenario != "ok_did_nothing"]
    assert len(observed) == 13  # cancel_order has no argument to change: its order id names the operation
    assert all(r.effects == 1 for r in observed), [(r.tool, r.scenario, r.effects, r.told) for r in observed]
    place = by_scenario([r for r in rows if r.tool == "place_order"], "toolproof")
    assert place["changed_arguments"].told[-1] == ("needs_clarification ALREADY_DONE_DIFFERENT_ARGS, "
                                                   "next_action=ask_person")
    assert place["changed_arguments"].note == "changed quantity_kg: 40 -> 41"
    assert place["rate_limited"].told == ("ok",) and place["rate_limited"].calls_to_recover == 1
    assert place["timeout_after_commit"].entries == 2 and place["timeout_after_commit"].effects == 1  # one key


def test_the_new_place_order_bare_dedupes_its_repeats_but_not_a_changed_quantity() -> None:
    rows = run_chaos(_targets.new_tools(), target=NEW, tools=["place_order"], through=("bare",),
                     scenarios=[scenario("reply_lost"), scenario("changed_arguments")])
    got = {r.scenario: r.effects for r in rows}
    assert got == {"reply_lost": 1, "changed_arguments": 2}


def test_the_killed_worker_is_a_real_process_killed_after_its_effect() -> None:
    rows = run_chaos(_targets.old_tools(), target=OLD, tools=["order"], through=("bare", "toolproof"),
                     scenarios=[scenario("worker_killed")])
    bare, guarded = by_scenario(rows, "bare")["worker_killed"], by_scenario(rows, "toolproof")["worker_killed"]
    for row in (bare, guarded):
        pid = int(row.told[0].split()[2])
        assert pid != os.getpid()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        assert row.told[0].endswith("killed with SIGKILL after the effect)")
    assert bare.effects == 2 and bare.told[1] == "ok"  # the second process ran it again
    # Through toolproof the dead worker's claim outlives it: the resend is told the outcome is unknown.
    assert guarded.effects == 1 and guarded.told[1] == "outcome_unknown OUTCOME_UNKNOWN, next_action=escalate"


def test_without_a_target_the_killed_worker_scenario_says_it_was_not_run() -> None:
    rows = run_chaos(_targets.old_tools(), tools=["order"], scenarios=[scenario("worker_killed")])
    assert rows[0].effects is None and "MODULE:TOOLSET" in rows[0].note


def test_ok_having_done_nothing_is_not_observable_without_a_verify_hook() -> None:
    rows = run_chaos(_targets.old_tools(), target=OLD, tools=["order"], scenarios=[scenario("ok_did_nothing")])
    assert [(r.effects, r.calls, r.counted, r.caught) for r in rows] == [
        (None, 0, "not observable (no verify hook)", None)]


def test_ok_having_done_nothing_is_caught_by_place_orders_verify_bare_and_through_toolproof(shop_file: Path) -> None:
    rows = run_chaos(_targets.new_tools(), target=NEW, through=("bare", "toolproof"),
                     scenarios=[scenario("ok_did_nothing")])
    place = [r for r in rows if r.tool == "place_order"]
    assert [(r.through, r.told, r.effects, r.entries, r.caught) for r in place] == [
        ("bare", ("ok",), 0, 0, True), ("toolproof", ("ok",), 0, 0, True)]
    assert place[0].counted == "verify= hook find_order, asked after the call whether the effect exists"
    assert place[0].note == "caught by verify: the caller was told ok; verify found no effect"
    assert Shop(shop_file).count_orders() == 1  # only the seeded order: nothing was placed
    cancel = [r for r in rows if r.tool == "cancel_order"]
    assert {(r.effects, r.counted) for r in cancel} == {(None, "not observable (no verify hook)")}


def hooked(verify: Callable[..., Any]) -> toolproof.Toolset:
    @toolproof.tool(effect="write", verify=verify)
    async def send_invoice(customer: str, ctx: toolproof.CallContext) -> dict[str, str]:
        """Send the customer an invoice; each call sends one more."""
        return {"sent_to": customer}

    return toolproof.Toolset([send_invoice])


def test_a_verify_that_says_done_misses_it_and_one_that_raises_cannot_tell() -> None:
    def always(customer: str, ctx: toolproof.CallContext) -> dict[str, str]:
        return {"sent_to": customer}

    async def broken(customer: str, ctx: toolproof.CallContext) -> Any:
        raise ConnectionError("the mail log is down")

    args = {"send_invoice": {"customer": "asha"}}
    missed = run_chaos(hooked(always), arguments=args, scenarios=[scenario("ok_did_nothing")])[0]
    assert (missed.effects, missed.caught, missed.told) == (1, False, ("ok",))
    assert missed.note == "missed: the caller was told ok; verify says the effect exists"
    unsure = run_chaos(hooked(broken), arguments=args, scenarios=[scenario("ok_did_nothing")])[0]
    assert (unsure.effects, unsure.caught) == (None, None)
    assert unsure.note == "verify could not tell: it raised ConnectionError: the mail log is down"


def test_verify_is_asked_under_the_key_toolproof_ran_the_call_with() -> None:
    keys: list[str | None] = []

    def by_key(customer: str, ctx: toolproof.CallContext) -> Any:
        keys.append(ctx.idempotency_key)
        return toolproof.NOT_DONE

    run_chaos(hooked(by_key), arguments={"send_invoice": {"customer": "asha"}}, through=("toolproof", "bare"),
              scenarios=[scenario("ok_did_nothing")])
    assert len(keys) == 2 and keys[0] is not None and keys[0].startswith("tp1_") and keys[1] is None


def test_every_scenario_has_a_distinct_key_and_an_unknown_one_is_named() -> None:
    assert len({s.key for s in SCENARIOS}) == len(SCENARIOS) == 8
    with pytest.raises(KeyError, match="no scenario 'nope'; there are: reply_lost"):
        scenario("nope")


def test_a_plain_write_with_verify_is_settled_ok_after_the_timeout_and_the_lost_reply() -> None:
    sent: dict[str, str] = {}

    def find_invoice(customer: str, ctx: toolproof.CallContext) -> Any:
        return {"sent_to": sent[ctx.idempotency_key]} if ctx.idempotency_key in sent else toolproof.NOT_DONE

    @toolproof.tool(effect="write", verify=find_invoice)
    def send_invoice(customer: str, ctx: toolproof.CallContext) -> dict[str, str]:
        """Send the customer an invoice; each call sends one more."""
        sent[ctx.idempotency_key or "-"] = customer
        return {"sent_to": customer}

    rows = run_chaos(toolproof.Toolset([send_invoice]), arguments={"send_invoice": {"customer": "asha"}},
                     scenarios=[scenario("reply_lost"), scenario("timeout_after_commit")])
    assert [(r.scenario, r.effects, r.told, r.calls_to_recover) for r in rows] == [
        ("reply_lost", 1, ("ok (settled by verify)",), 1), ("timeout_after_commit", 1, ("ok (settled by verify)",), 1)]
