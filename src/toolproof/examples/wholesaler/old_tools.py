"""The "before" toolset of the source article: nine tools with generic names, overlapping jobs, a version
suffix, a `quantity` with no unit, free-text dates and a model-supplied buyer id. Kept to be linted and
evaluated against the six redesigned tools (`tools.py`); never use it as a model."""

from __future__ import annotations

from typing import Any

import toolproof

from .shop import Shop

OLD_TOOL_NAMES = ("search", "get_data", "rates", "price_lookup", "inventory", "order", "order_v2", "status",
                  "cancel")


def build_old_toolset(shop: Shop) -> toolproof.Toolset:
    """The nine old tools, bound to one shop. Their schemas are as loose as the originals were."""

    def search(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        return {"results": [{"text": "jeera rate list (old): Rs 310/kg"}]}

    def get_data(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        return {"data": "price list and stock, last updated last month"}

    def rates(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        crop = str(args.get("item", "onion"))
        return {"rate": shop.price(crop, "A") if crop in ("onion", "groundnut", "jeera", "cotton_seed") else None}

    def price_lookup(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        return rates(args, ctx)

    def inventory(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        crop = str(args.get("item", "onion"))
        return {"stock": shop.stock_kg(crop, "A") if crop in ("onion", "groundnut", "jeera", "cotton_seed") else 0}

    def order(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        return {"status": "ok"}

    def status(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        return {"status": "unknown"}

    def cancel(args: dict[str, Any], ctx: toolproof.CallContext) -> Any:
        return {"status": "cancelled"}

    loose_text = {"type": "string"}
    order_schema = {
        "type": "object",
        "properties": {
            "item": loose_text,
            "quantity": {"type": "number"},
            "date": loose_text,
            "buyer_id": loose_text,
        },
        "required": ["item", "quantity"],
    }
    specs: list[tuple[str, str, dict[str, Any], Any, str]] = [
        ("search", "Search for information.", {"type": "object", "properties": {"query": loose_text}}, search,
         "read"),
        ("get_data", "Gets data.", {"type": "object", "properties": {"type": loose_text, "item": loose_text}},
         get_data, "read"),
        ("rates", "Get rates for items.", {"type": "object", "properties": {"item": loose_text}}, rates, "read"),
        ("price_lookup", "Look up the price of an item.", {"type": "object", "properties": {"item": loose_text,
         "grade": {"type": "string", "description": "Quality grade, one of 'A' or 'B'.", "default": "A"}}},
         price_lookup, "read"),
        ("inventory", "Inventory info.", {"type": "object", "properties": {"item": loose_text}}, inventory, "read"),
        ("order", "Order items.", order_schema, order, "write"),
        ("order_v2", "Order items (new).", order_schema, order, "write"),
        ("status", "Get status.", {"type": "object", "properties": {"id": loose_text}}, status, "read"),
        ("cancel", "Cancel.", {"type": "object", "properties": {"id": loose_text}}, cancel, "write"),
    ]
    return toolproof.Toolset(
        toolproof.Tool.from_schema(name, desc, schema, handler, effect=effect)  # type: ignore[arg-type]
        for name, desc, schema, handler, effect in specs
    )


#: The nine old tools on an in-memory shop, for
#: `toolproof lint toolproof.examples.wholesaler.old_tools:old_toolset`.
old_toolset = build_old_toolset(Shop())
