"""A payments desk whose large payments wait for a person, and a wholesaler whose large orders do."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any

import toolproof
from toolproof.examples.wholesaler import Shop, build_toolset
from toolproof.stores import Store

LIMIT_RS = 10_000


def over_limit(arguments: Mapping[str, Any], context: toolproof.CallContext) -> str | None:
    amount = arguments["amount_rs"]
    return f"amount {amount} Rs is above the {LIMIT_RS} Rs limit" if amount > LIMIT_RS else None


def payments(paid: list[int]) -> toolproof.Toolset:
    """`pay` appends every amount it really paid to `paid`."""

    @toolproof.tool(effect="write", risk="high", approval=over_limit)
    def pay(amount_rs: int, to: str, api_token: Annotated[str, toolproof.Secret]) -> dict[str, Any]:
        """Pay a supplier.

        Use it only when the person asked to pay. Returns the payment.

        Args:
            amount_rs: The amount in rupees.
            to: The supplier.
            api_token: The bank token.
        """
        paid.append(amount_rs)
        return {"paid_rs": amount_rs, "to": to}

    return toolproof.Toolset([pay])


def big_order(arguments: Mapping[str, Any], context: toolproof.CallContext) -> str | None:
    kg = arguments["quantity_kg"]
    return f"{kg:g} kg is above the 1000 kg a buyer may order unapproved" if kg > 1000 else None


def gated_wholesaler(shop: Shop) -> toolproof.Toolset:
    """The wholesaler example, its place_order gated on large quantities (same schema, same fingerprint)."""
    return toolproof.Toolset(t.with_approval(big_order) if t.name == "place_order" else t for t in build_toolset(shop))


@contextmanager
def running(toolset: toolproof.Toolset, store: Store) -> Iterator[toolproof.Runner]:
    """A runner on the test's store that writes its audit records on exit but leaves the store open (the
    fixture closes it), so the test can read what the runner left."""
    runner = toolproof.Runner(toolset, store=store)
    try:
        yield runner
    finally:
        if runner.writer is not None:
            runner.writer.close()
