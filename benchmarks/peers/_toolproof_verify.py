"""toolproof with a `verify=` hook: the same Runner and tool, which takes the `CallContext` (so the order is
stored under the runner's idempotency key) and declares `verify=`, a look-up of the order by that key.

The runner asks it where the outcome is unknown (the lost reply, the timeout after the commit); after the
`ok_did_nothing` scenario the driver asks it too, under the key the call ran with, whether the order exists.
"""

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

from benchmarks.peers._common import (
    TIMEOUT_S,
    Crop,
    Observation,
    OrderBook,
    QuantityKg,
    RateLimitedError,
    Reply,
    Scenario,
    simple_loop,
)
from benchmarks.peers._toolproof import envelope_reply

NAME = "toolproof with verify="
DIST = "toolproof"


def available() -> bool:
    return True


def _tool(book: OrderBook, scenario: Scenario) -> Any:
    import toolproof
    from toolproof import NOT_DONE, CallContext

    def find_order(crop: Crop, quantity_kg: QuantityKg, delivery_date: dt.date, ctx: CallContext) -> Any:
        order_id = book.keys.get(ctx.idempotency_key or "")
        if order_id is None:
            return NOT_DONE
        return {"order_id": order_id, "crop": crop, "quantity_kg": quantity_kg, "delivery_date": str(delivery_date)}

    def place_order(crop: Crop, quantity_kg: QuantityKg, delivery_date: dt.date, ctx: CallContext) -> dict[str, Any]:
        """Place one order: a crop, a quantity in kg (10 to 5000) and a delivery date (YYYY-MM-DD).

        Use this only after the buyer clearly asked to book. Returns the new order's id.
        """
        try:
            return book.place(crop, quantity_kg, delivery_date, key=ctx.idempotency_key)
        except RateLimitedError as exc:
            raise toolproof.RateLimited(str(exc), retry_after_s=exc.retry_after) from exc

    return toolproof.tool(effect="write", verify=find_order, timeout_s=TIMEOUT_S if scenario.timeout else None)(
        place_order)


async def run(scenario: Scenario, book: OrderBook, tmp: Path) -> Observation:
    import toolproof
    from toolproof import CallContext

    obs = Observation(NAME, scenario.key)
    tool = _tool(book, scenario)
    journal = tmp / f"journal-verify-{scenario.key}.sqlite3"
    runner = toolproof.Runner(toolproof.Toolset([tool]), store=f"sqlite:///{journal}")
    context = CallContext(conversation_id=f"conv-{scenario.key}")
    keys: list[str] = []

    async def send(args: dict[str, Any]) -> Reply:
        envelope = await runner.call("place_order", args, context=context)
        if envelope.meta.idempotency_key:
            keys.append(envelope.meta.idempotency_key)
        reply = envelope_reply("envelope ok" if envelope.ok else "envelope ok=false", envelope.to_json())
        if envelope.ok and "verified" in envelope.meta.extra:
            reply = dataclasses.replace(reply, summary="ok, settled by verify")
        return reply

    try:
        await simple_loop(scenario, send, obs)
        book.wait_idle()  # a body that outlived its time limit ends before its journal closes
    finally:
        runner.close()
    if scenario.body == "nothing_once" and keys:
        args, kwargs = tool.bind(tool.parse_arguments(scenario.args), CallContext(idempotency_key=keys[0]))
        asked = tool.verify(*args, **kwargs)
        obs.extra["verify"] = "caught" if asked is toolproof.NOT_DONE else "missed"
    return obs
