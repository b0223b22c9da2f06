"""Write the recorded model outputs for the wholesaler evals.

These outputs are AUTHORED, not recorded: a person wrote them as a plausible model's behaviour, following
the failure modes the source article reports (the old tools: a vague `search` picked for a price, `quantity`
with no unit so 4 quintal becomes 4, a vague tool called for a greeting; the new tools: misses on date
words). Each file starts with a `_meta` line saying so. Rerun after changing the tables:

    python -m toolproof.examples.wholesaler.cases.author_recordings
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import HERE
from .library import FAILURES

Reply = dict[str, Any]
META = {
    "source": "authored",
    "note": "Written by hand as a plausible model's behaviour (see author_recordings.py); NOT the output of a "
            "live model. Record real outputs with --record.",
}


def call(name: str, **arguments: Any) -> Reply:
    return {"calls": [{"name": name, "arguments": arguments}], "text": None}


def calls(*items: tuple[str, dict[str, Any]]) -> Reply:
    return {"calls": [{"name": n, "arguments": a} for n, a in items], "text": None}


def text(message: str) -> Reply:
    return {"calls": [], "text": message}


def x3(reply: Reply) -> list[Reply]:
    return [reply, reply, reply]


def order(crop: str, kg: float, day: str, **extra: Any) -> Reply:
    return call("place_order", crop=crop, quantity_kg=kg, delivery_date=day, **extra)


def old_order(item: str, quantity: float, day: str, tool: str = "order") -> Reply:
    return call(tool, item=item, quantity=quantity, date=day)


THANKS = text("You're welcome! Let me know if you need anything else.")

# case id -> three runs. The new six tools: right almost everywhere; date words are the weak spot.
NEW: dict[str, list[Reply]] = {
    "price-jeera": x3(call("get_today_price", crop="jeera")),
    "price-cumin": x3(call("get_today_price", crop="jeera")),
    "price-onion-grade-b-hi": x3(call("get_today_price", crop="onion", grade="B")),
    "price-groundnut": x3(call("get_today_price", crop="groundnut", grade=None)),
    "price-cotton-seed": x3(call("get_today_price", crop="cotton_seed")),
    "price-jeera-grade-a": x3(call("get_today_price", crop="jeera", grade="A")),
    "price-two-crops": x3(calls(("get_today_price", {"crop": "groundnut"}), ("get_today_price", {"crop": "onion"}))),
    "stock-jeera-200": x3(call("check_stock", crop="jeera")),
    "stock-onion": x3(call("check_stock", crop="onion")),
    "stock-groundnut-hi": x3(call("check_stock", crop="groundnut")),
    "stock-not-price": [call("check_stock", crop="groundnut"), call("get_today_price", crop="groundnut"),
                        call("check_stock", crop="groundnut")],
    "price-not-stock": x3(call("get_today_price", crop="onion")),
    "stock-cotton-seed-grade-b": x3(call("check_stock", crop="cotton_seed", grade="B")),
    "price-if-under-300": x3(call("get_today_price", crop="jeera")),
    "stock-then-book": x3(call("check_stock", crop="cotton_seed")),
    "history-onion-week": [call("get_price_history", crop="onion", days=7), call("get_price_history", crop="onion"),
                           call("get_price_history", crop="onion", days=7)],
    "history-jeera-10-days": x3(call("get_price_history", crop="jeera", days=10)),
    "history-groundnut-hi": x3(call("get_price_history", crop="groundnut", days=3)),
    "history-groundnut-month": x3(call("get_price_history", crop="groundnut", days=30)),
    "order-4-quintal-friday": x3(order("onion", 400, "2026-10-23")),
    "order-half-tonne-thursday": [order("groundnut", 500, "2026-10-22"), order("groundnut", 500, "2026-10-22"),
                                  order("groundnut", 500, "Thursday")],
    "order-40-kg-iso-date": x3(order("groundnut", 40, "2026-10-23")),
    "order-jeera-tomorrow": x3(order("jeera", 50, "2026-10-20")),
    "order-2-quintal-day-after": [order("cotton_seed", 200, "2026-10-21"), order("cotton_seed", 200, "2026-10-22"),
                                  order("cotton_seed", 200, "2026-10-22")],
    "order-3-quintal-kal-hi": x3(order("onion", 300, "2026-10-20")),
    "order-1.5-tonne-saturday": x3(order("onion", 1500, "2026-10-24")),
    "order-grade-b-24-oct": x3(order("groundnut", 100, "2026-10-24", grade="B")),
    "order-next-monday": [order("onion", 250, "2026-10-20"), order("onion", 250, "2026-10-26"),
                          order("onion", 250, "2026-10-20")],
    "order-400-kg-thursday-hi": x3(order("onion", 400, "2026-10-22")),
    "order-half-quintal-friday": [order("jeera", 50, "2026-10-23"), order("jeera", 50, "2026-10-23"),
                                  order("jeera", 500, "2026-10-23")],
    "status-1042": x3(call("get_order_status", order_id=1042)),
    "status-1043-hi": x3(call("get_order_status", order_id=1043)),
    "status-not-cancel": x3(call("get_order_status", order_id=1045)),
    "cancel-1042": x3(call("cancel_order", order_id=1042)),
    "cancel-1044-hi": x3(call("cancel_order", order_id=1044)),
    "thanks": x3(THANKS),
    "thanks-hi": x3(text("Aapka swagat hai!")),
    "hello": x3(text("Hello! How can I help with your order today?")),
    "ok-noted": x3(text("Great.")),
    "office-hours": x3(text("I don't have our office hours; a colleague will reply with them.")),
}

# The nine old tools: the source article's failure modes.
OLD: dict[str, list[Reply]] = {
    "price-jeera": x3(call("search", query="jeera rate")),
    "price-cumin": x3(call("price_lookup", item="cumin")),
    "price-onion-grade-b-hi": x3(call("price_lookup", item="onion", grade="B")),
    "price-groundnut": [call("rates", item="groundnut"), call("price_lookup", item="groundnut"),
                        call("rates", item="groundnut")],
    "price-cotton-seed": x3(call("price_lookup", item="cotton seed")),
    "price-jeera-grade-a": x3(call("price_lookup", item="jeera", grade="A")),
    "price-two-crops": x3(calls(("price_lookup", {"item": "onion"}), ("price_lookup", {"item": "groundnut"}))),
    "stock-jeera-200": x3(call("inventory", item="jeera")),
    "stock-onion": x3(call("inventory", item="onion")),
    "stock-groundnut-hi": [call("inventory", item="groundnut"), call("get_data", type="stock", item="groundnut"),
                           call("inventory", item="groundnut")],
    "stock-not-price": x3(call("inventory", item="groundnut")),
    "price-not-stock": x3(call("price_lookup", item="onion")),
    "stock-cotton-seed-grade-b": x3(call("inventory", item="cotton_seed")),
    "price-if-under-300": x3(call("search", query="jeera price per kg")),
    "stock-then-book": x3(call("inventory", item="cotton seed")),
    "history-onion-week": x3(call("get_data", type="price_history", item="onion")),
    "history-jeera-10-days": x3(call("get_data", type="prices", item="jeera")),
    "history-groundnut-hi": x3(call("search", query="groundnut rate last 3 days")),
    "history-groundnut-month": x3(call("get_data", type="price_history", item="groundnut")),
    "order-4-quintal-friday": x3(old_order("onion", 4, "2026-10-23")),
    "order-half-tonne-thursday": x3(old_order("groundnut", 0.5, "2026-10-22")),
    "order-40-kg-iso-date": [old_order("groundnut", 40, "2026-10-23"),
                             old_order("groundnut", 40, "2026-10-23", tool="order_v2"),
                             old_order("groundnut", 40, "2026-10-23")],
    "order-jeera-tomorrow": x3(old_order("jeera", 50, "2026-10-20")),
    "order-2-quintal-day-after": x3(old_order("cotton seed", 2, "2026-10-21")),
    "order-3-quintal-kal-hi": x3(old_order("onion", 3, "2026-10-20")),
    "order-1.5-tonne-saturday": x3(old_order("onion", 1.5, "2026-10-24")),
    "order-grade-b-24-oct": x3(old_order("groundnut", 100, "2026-10-24", tool="order_v2")),
    "order-next-monday": x3(old_order("onion", 250, "next Monday")),
    "order-400-kg-thursday-hi": x3(old_order("onion", 400, "2026-10-22")),
    "order-half-quintal-friday": [old_order("jeera", 0.5, "2026-10-23"), old_order("jeera", 50, "2026-10-23"),
                                  old_order("jeera", 0.5, "2026-10-23")],
    "status-1042": x3(call("status", id="1042")),
    "status-1043-hi": x3(call("status", id="1043")),
    "status-not-cancel": x3(call("status", id="1045")),
    "cancel-1042": x3(call("cancel", id="1042")),
    "cancel-1044-hi": x3(call("cancel", id="1044")),
    "thanks": x3(THANKS),
    "thanks-hi": x3(text("Aapka swagat hai!")),
    "hello": [text("Hello! How can I help?"), call("get_data", type="greeting"), text("Hello! How can I help?")],
    "ok-noted": x3(text("Great.")),
    "office-hours": x3(call("search", query="office closing time")),
}

# ---------------------------------------------------------------------------------------------- recovery

ASK_TEXT = "Could you tell me which one you mean?"
HANDOVER = "I'm sorry, I can't do this myself; I have handed it over to a colleague who will get back to you."
STOP = "Sorry, something went wrong on our side. Please try again later."

# failure id -> (first call with the new tools, next step, step after a re-read or None)
NEW_RECOVERY: dict[str, tuple[Reply, Reply, Reply | None]] = {
    "ia-date-in-past": (order("groundnut", 40, "2026-10-12"),
                        text("That date has passed. Which day from tomorrow on should we deliver?"), None),
    "ia-quantity-below-min": (order("onion", 4, "2026-10-23"), order("onion", 400, "2026-10-23"), None),
    "ia-crop-not-in-enum": (call("get_today_price", crop="cumin"), call("get_today_price", crop="jeera"), None),
    "ia-date-word": (order("onion", 100, "Thursday"), order("onion", 100, "2026-10-22"), None),
    "nf-order-status": (call("get_order_status", order_id=9999),
                        text("I can't find order 9999. Could you check the id on your confirmation?"), None),
    "nf-cancel": (call("cancel_order", order_id=77), text("There is no order 77. What is the order id?"), None),
    "nf-no-price-today": (call("get_today_price", crop="cotton_seed", grade="B"),
                          call("get_price_history", crop="cotton_seed", days=1, grade="B"), None),
    "cf-stock-clears": (order("jeera", 800, "2026-10-23"), call("check_stock", crop="jeera"),
                        order("jeera", 800, "2026-10-23")),
    "cf-stock-stays": (order("jeera", 800, "2026-10-24"), call("check_stock", crop="jeera"),
                       text("We have 630 kg of grade A jeera. Shall I book 630 kg for Saturday?")),
    "cf-order-locked": (call("cancel_order", order_id=1042), call("get_order_status", order_id=1042),
                        text("Order 1042 is being packed, so it can't be cancelled right now. Do you want me to "
                             "ask the team to stop it?")),
    "cf-price-moved": (order("groundnut", 100, "2026-10-22"),
                       text("The price has moved since your quote. Do you still want 100 kg at today's rate?"), None),
    "rl-price": (call("get_today_price", crop="onion"), call("get_today_price", crop="onion"), None),
    "rl-stock": (call("check_stock", crop="groundnut"), call("check_stock", crop="groundnut"), None),
    "rl-order": (order("groundnut", 40, "2026-10-23"), text(STOP), None),
    "tu-price-feed": (call("get_today_price", crop="jeera"), call("get_today_price", crop="jeera"), None),
    "tu-history": (call("get_price_history", crop="onion", days=7), call("get_price_history", crop="onion", days=7),
                   None),
    "tu-order-status": (call("get_order_status", order_id=1042), call("get_order_status", order_id=1042), None),
    "af-price-feed": (call("get_today_price", crop="groundnut"), text(HANDOVER), None),
    "af-order": (order("onion", 200, "2026-10-22"), text(HANDOVER), None),
    "af-stock": (call("check_stock", crop="cotton_seed"), text(HANDOVER), None),
    "pd-no-buyer": (order("jeera", 50, "2026-10-20"), text(HANDOVER), None),
    "pd-cancel-not-owner": (call("cancel_order", order_id=1050),
                            text("Only the account owner can cancel this order; I've passed it on to our team."),
                            None),
    "pd-credit-limit": (order("groundnut", 5000, "2026-10-23"), text(HANDOVER), None),
    "pe-order-not-notified": (order("groundnut", 40, "2026-10-22"), order("groundnut", 40, "2026-10-22"), None),
    "pe-cancel-no-refund": (call("cancel_order", order_id=1042), call("get_order_status", order_id=1042),
                            text("Order 1042 is cancelled. The refund is pending; our team will follow up.")),
    "pe-split-lots": (order("onion", 2000, "2026-10-24"), call("check_stock", crop="onion"), None),
    "nc-kernel-type": (order("groundnut", 300, "2026-10-23"), text("Do you want bold or java kernels?"), None),
    "nc-market-holiday": (order("onion", 200, "2026-10-23"),
                          text("Friday is a market holiday. Shall we deliver Thursday or Saturday?"), None),
    "nc-which-order": (call("cancel_order", order_id=1042), text("You have two onion orders, 1042 and 1047. "
                                                                  "Which one should I cancel?"), None),
    "ou-order-timeout": (order("groundnut", 40, "2026-10-23"), order("groundnut", 40, "2026-10-23"), None),
    "ou-cancel-timeout": (call("cancel_order", order_id=1042), text(HANDOVER), None),
    "ou-connection-reset": (order("onion", 300, "2026-10-22"), text(HANDOVER), None),
    "ie-price": (call("get_today_price", crop="onion"), text(HANDOVER), None),
    "ie-order": (order("jeera", 100, "2026-10-22"), text(HANDOVER), None),
    "ie-history": (call("get_price_history", crop="jeera", days=10), text(HANDOVER), None),
}

_OLD_TOOL = {"get_today_price": "price_lookup", "check_stock": "inventory", "get_price_history": "get_data",
             "place_order": "order", "get_order_status": "status", "cancel_order": "cancel"}


def _old_first(first: Reply) -> Reply:
    """The same intent through the old tools (no units, free-text ids)."""
    c = first["calls"][0]
    args = dict(c["arguments"])
    if c["name"] == "place_order":
        return old_order(args["crop"], args["quantity_kg"], args["delivery_date"])
    if "order_id" in args:
        return call(_OLD_TOOL[c["name"]], id=str(args["order_id"]))
    if c["name"] == "get_price_history":
        return call("get_data", type="price_history", item=args["crop"])
    return call(_OLD_TOOL[c["name"]], item=args["crop"])


def _old_next(first: Reply) -> Reply:
    """An opaque "Error 500" tells the model nothing: it retries a read as it was and gives up on a write."""
    c = first["calls"][0]
    if c["name"] in ("order", "cancel"):
        return text(STOP)
    return first


def write_all(folder: Path = HERE) -> None:
    def dump(name: str, lines: list[dict[str, Any]]) -> None:
        body = [json.dumps({"_meta": META})] + [json.dumps(x, ensure_ascii=False) for x in lines]
        (folder / name).write_text("\n".join(body) + "\n", encoding="utf-8")

    for label, table in (("new", NEW), ("old", OLD)):
        dump(f"recorded_selection_{label}.jsonl",
             [{"case": cid, "run": run, "step": 0, **reply} for cid, runs in table.items()
              for run, reply in enumerate(runs)])
    new_lines, old_lines = [], []
    ids = {f.id for f in FAILURES}
    assert ids == set(NEW_RECOVERY), sorted(ids ^ set(NEW_RECOVERY))
    for fid, (first, nxt, after) in NEW_RECOVERY.items():
        new_lines += [{"case": fid, "run": 0, "step": 0, **first}, {"case": fid, "run": 0, "step": 1, **nxt}]
        if after is not None:
            new_lines.append({"case": fid, "run": 0, "step": 2, **after})
        old_first = _old_first(first)
        old_lines += [{"case": fid, "run": 0, "step": 0, **old_first},
                      {"case": fid, "run": 0, "step": 1, **_old_next(old_first)}]
    dump("recorded_recovery_new.jsonl", new_lines)
    dump("recorded_recovery_old.jsonl", old_lines)


if __name__ == "__main__":
    write_all()
