"""The IETF Idempotency-Key draft's rules and Stripe's documented behaviour, as conformance tests.

Each rule in `tests/data/corpora/reliability_specs/` maps to one check below; a rule without a check fails
the suite, so a corpus update cannot pass unnoticed. Where toolproof differs on purpose (the key is built
by our code, so a client can never omit it or pick it), the check says so.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

import toolproof
from tests._data import corpus
from toolproof.contract._envelope import to_problem
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.journal._journal import DEFAULT_RETENTION_S, Journal

SPECS = corpus("reliability_specs")
IETF = json.loads((SPECS / "ietf_idempotency_key_rules.json").read_text())
STRIPE = json.loads((SPECS / "stripe_retry_idempotency_behaviour.json").read_text())
ORDER = {"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2026-10-23"}
CTX = toolproof.CallContext(conversation_id="chat-1", principal="B-17")
SF_STRING = re.compile(r'[\x20-\x21\x23-\x5b\x5d-\x7e]*')  # RFC 8941 sf-string content, unescaped


class World:
    """The wholesaler plus a write whose behaviour a check can steer, in one journaled runner."""

    def __init__(self, shop: Shop) -> None:
        self.shop = shop
        self.calls = 0
        self.raise_: BaseException | None = None
        self.gate: asyncio.Event | None = None

        @toolproof.tool(effect="write", operation_keys=["amount_rs"])
        async def send_invoice(amount_rs: int, note: str = "") -> dict[str, int]:
            """Send one invoice.

            Args:
                amount_rs: Amount in rupees.
                note: Printed on the invoice.
            """
            self.calls += 1
            if self.gate is not None:
                await self.gate.wait()
            if self.raise_ is not None:
                raise self.raise_
            return {"invoice": self.calls}

        tools = build_toolset(shop)
        self.runner = toolproof.Runner(toolproof.Toolset([tools.get("place_order"), tools.get("check_stock"),
                                                          send_invoice]),
                                       loop_guard=None)  # the journal's answers, not the loop guard's

    def call(self, name: str, args: dict[str, Any]) -> toolproof.Envelope:
        return asyncio.run(self.runner.call(name, args, context=CTX))


def ietf_syntax(w: World) -> None:
    key = w.call("place_order", ORDER).meta.idempotency_key
    assert key is not None and SF_STRING.fullmatch(key) and len(key) <= 255


def ietf_uniqueness(w: World) -> None:
    a = w.call("send_invoice", {"amount_rs": 1}).meta.idempotency_key
    b = w.call("send_invoice", {"amount_rs": 2}).meta.idempotency_key
    assert a != b


def ietf_expiry(w: World) -> None:
    # We publish the policy: finished keys are kept at least 24 h, then `toolproof journal prune` may drop them.
    assert DEFAULT_RETENTION_S >= 24 * 3600
    assert w.runner.journal.retention_s == DEFAULT_RETENTION_S


def ietf_fingerprint(w: World) -> None:
    assert w.call("send_invoice", {"amount_rs": 5, "note": "a"}).ok
    changed = w.call("send_invoice", {"amount_rs": 5, "note": "b"})  # same key (note is not an operation key)
    assert changed.error is not None and changed.meta.idempotency_key == changed.error.idempotency_key
    assert w.calls == 1


def ietf_first_request(w: World) -> None:
    env = w.call("place_order", ORDER)
    assert env.ok and not env.meta.replayed and w.shop.count_orders() == 1


def ietf_duplicate_completed(w: World) -> None:
    ok = w.call("place_order", ORDER)
    assert w.call("place_order", ORDER).result == ok.result
    # An error after dispatch is replayed too ("success or error"): a typed one verbatim. An unexpected exception
    # may have followed the effect, so toolproof answers its repeats `outcome_unknown` from the journal (never
    # re-run) until someone reconciles it: the one deliberate difference from Stripe's replayed 500.
    w.raise_ = toolproof.PartialExecution("sent, not filed", code="SENT_NOT_FILED")
    failed = w.call("send_invoice", {"amount_rs": 9})
    w.raise_ = None
    again = w.call("send_invoice", {"amount_rs": 9})
    assert again.meta.replayed and again.error is not None and failed.error is not None
    assert again.error.code == failed.error.code == "SENT_NOT_FILED" and w.calls == 1
    w.raise_ = KeyError("bug")
    unknown = w.call("send_invoice", {"amount_rs": 10})
    w.raise_ = None
    asked = w.call("send_invoice", {"amount_rs": 10})
    assert unknown.error is not None and asked.error is not None and w.calls == 2
    assert unknown.error.error_class == asked.error.error_class == "outcome_unknown"


def _in_flight(w: World) -> tuple[toolproof.Envelope, toolproof.Envelope]:
    async def race() -> tuple[toolproof.Envelope, toolproof.Envelope]:
        w.gate = asyncio.Event()
        first = asyncio.create_task(w.runner.call("send_invoice", {"amount_rs": 3}, context=CTX))
        await asyncio.sleep(0.01)
        second = await w.runner.call("send_invoice", {"amount_rs": 3}, context=CTX)
        w.gate.set()
        return await first, second

    w.runner.journal = Journal(w.runner.store, wait_s=0.03, poll_s=0.01)
    return asyncio.run(race())


def ietf_duplicate_in_flight(w: World) -> None:
    first, second = _in_flight(w)
    assert first.ok and second.error is not None and second.error.code == "IN_FLIGHT"
    assert to_problem(second)["status"] == 409 and w.calls == 1


def ietf_missing_key(w: World) -> None:
    # Keys are built by our code: a write can never arrive without one (and never with the model's own).
    env = w.call("send_invoice", {"amount_rs": 4})
    assert env.meta.idempotency_key is not None


def ietf_key_reuse_different_payload(w: World) -> None:
    assert w.call("send_invoice", {"amount_rs": 6, "note": "x"}).ok
    env = w.call("send_invoice", {"amount_rs": 6, "note": "y"})
    assert env.error is not None and env.error.code == "ALREADY_DONE_DIFFERENT_ARGS"
    assert to_problem(env)["status"] == 422 and not env.error.retryable


def ietf_client_correction(w: World) -> None:
    first, second = _in_flight(w)  # after a 409 a plain retry is fine: it gets the finished result
    assert second.error is not None and second.error.code == "IN_FLIGHT"
    retry = w.call("send_invoice", {"amount_rs": 3})
    assert retry.meta.replayed and retry.result == first.result and w.calls == 1
    # after another error the client must correct the request: a corrected call proceeds
    bad = w.call("place_order", {**ORDER, "delivery_date": "2026-10-01"})
    assert bad.error is not None and bad.error.next_action == "repair"


def ietf_methods(w: World) -> None:
    w.call("check_stock", {"crop": "onion"})  # reads are not journaled
    assert w.call("check_stock", {"crop": "onion"}).meta.idempotency_key is None
    assert w.runner.store.journal_list() == []


def stripe_idempotency_key(w: World) -> None:
    # automatic retries reuse the same key: a repeated call carries the key of the first
    a = w.call("place_order", ORDER)
    b = w.call("place_order", ORDER)
    assert a.meta.idempotency_key == b.meta.idempotency_key


def stripe_key_max_len(w: World) -> None:
    key = w.call("place_order", ORDER).meta.idempotency_key
    assert key is not None and len(key) <= STRIPE["server_idempotency_documented"]["key_max_len"]


def stripe_prune_after(w: World) -> None:
    assert w.call("place_order", ORDER).ok
    assert w.runner.journal.prune() == 0  # nothing younger than 24 h is pruned by default


def stripe_replay(w: World) -> None:
    ietf_duplicate_completed(w)


def stripe_param_mismatch(w: World) -> None:
    ietf_key_reuse_different_payload(w)


def stripe_not_saved(w: World) -> None:
    for _ in range(2):  # a validation failure is not saved: both calls are validated and refused afresh
        env = w.call("place_order", {**ORDER, "quantity_kg": 4})
        assert env.error is not None and env.error.code != "ALREADY_DONE_DIFFERENT_ARGS" and not env.meta.replayed
    _, second = _in_flight(w)  # a concurrent-conflict is not saved either
    assert second.error is not None and second.error.code == "IN_FLIGHT"
    assert [i.status for i in w.runner.store.journal_list()] == ["done"]


def stripe_get_delete(w: World) -> None:
    ietf_methods(w)


CHECKS: dict[str, Callable[[World], None]] = {
    **{f"ietf:{name.removeprefix('ietf_')}": fn for name, fn in globals().items() if name.startswith("ietf_")},
    "stripe:idempotency_key": stripe_idempotency_key,
    "stripe:key_max_len": stripe_key_max_len,
    "stripe:prune_after": stripe_prune_after,
    "stripe:replay": stripe_replay,
    "stripe:param_mismatch": stripe_param_mismatch,
    "stripe:not_saved": stripe_not_saved,
    "stripe:GET_DELETE": stripe_get_delete,
}
RULES = [f"ietf:{r['id']}" for r in IETF["rules"]] + ["stripe:idempotency_key"] + [
    f"stripe:{k}" for k in STRIPE["server_idempotency_documented"]]


def test_every_rule_has_a_check() -> None:
    assert sorted(RULES) == sorted(CHECKS)
    assert STRIPE["server_idempotency_documented"]["prune_after"] == ">= 24h"


@pytest.mark.parametrize("rule", RULES)
def test_rule(rule: str, shop: Shop) -> None:
    CHECKS[rule](World(shop))
