"""The wholesaler's toolsets as chaos targets: bound to one shop file (`CHAOS_SHOP`) that every process of a
run shares, on the demo's Monday, with an order of the chaos user's to cancel."""

from __future__ import annotations

import os
from datetime import date

import toolproof
from toolproof.chaos import DEFAULT_PRINCIPAL
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.examples.wholesaler.old_tools import build_old_toolset

MONDAY = date(2026, 10, 19)


def shop() -> Shop:
    found = Shop(os.environ["CHAOS_SHOP"], today=lambda: MONDAY)
    if found.order(1) is None:
        found.insert_order(buyer_id=DEFAULT_PRINCIPAL, crop="onion", grade="A", quantity_kg=100,
                           delivery_date=date(2026, 10, 23), request_key="seeded")
    return found


def new_tools() -> toolproof.Toolset:
    return build_toolset(shop())


def old_tools() -> toolproof.Toolset:
    return build_old_toolset(shop())


def served_tools() -> toolproof.Toolset:
    """The new tools and a count of the shop's orders, for `toolproof serve` under `chaos stdio:...`."""
    orders = shop()

    @toolproof.tool(effect="read")
    def count_orders() -> int:
        """How many orders the shop holds (every buyer, every status)."""
        return orders.count_orders()

    return build_toolset(orders) + toolproof.Toolset([count_orders])
