"""The six redesigned tools of the ordering desk: one job each, verb_noun names, units in names, enums,
one date format, and ids the code knows (the buyer, the request key) taken from the call context."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

import toolproof
from toolproof import CallContext

from .shop import Crop, Grade, Shop


class PriceQuote(BaseModel):
    crop: Crop
    grade: Grade
    price_rs_per_kg: float
    updated_on: date


class StockLevel(BaseModel):
    crop: Crop
    grade: Grade
    available_kg: float


class Order(BaseModel):
    order_id: int
    crop: Crop
    grade: Grade
    quantity_kg: float
    delivery_date: date
    price_rs_per_kg: float
    status: Literal["placed", "cancelled"]
    note: str


class PricePoint(BaseModel):
    day: date
    price_rs_per_kg: float


def _order(row: dict[str, object], note: str) -> Order:
    return Order(
        order_id=row["id"],  # type: ignore[arg-type]
        crop=row["crop"],  # type: ignore[arg-type]
        grade=row["grade"],  # type: ignore[arg-type]
        quantity_kg=row["quantity_kg"],  # type: ignore[arg-type]
        delivery_date=row["delivery_date"],  # type: ignore[arg-type]
        price_rs_per_kg=row["price_rs_per_kg"],  # type: ignore[arg-type]
        status=row["status"],  # type: ignore[arg-type]
        note=note,
    )


def _buyer(ctx: CallContext) -> str:
    if not ctx.principal:
        raise toolproof.PermissionDenied("No buyer is signed in for this conversation.", code="NO_BUYER",
                                         hint="Tell a person: the agent has no buyer account for this chat.")
    return ctx.principal


def _owned_order(shop: Shop, ctx: CallContext, order_id: int, *, hint: str) -> dict[str, object]:
    """The signed-in buyer's order, or `not_found` (another buyer's order is not found either)."""
    buyer = _buyer(ctx)
    row = shop.order(order_id)
    if row is None or row["buyer_id"] != buyer:
        raise toolproof.NotFound(f"There is no order {order_id} for this buyer.", code="ORDER_NOT_FOUND",
                                 field="order_id", received=order_id, hint=hint)
    return row


def _request_key(ctx: CallContext, buyer: str, crop: str, grade: str, quantity_kg: float,
                 delivery_date: date) -> str:
    """The order's request key: the runner's idempotency key, else the source article's recipe (never the
    model's)."""
    return ctx.idempotency_key or "|".join(
        [ctx.conversation_id or "-", buyer, crop, grade, f"{quantity_kg:g}", delivery_date.isoformat(),
         str(ctx.occurrence)]
    )


def build_toolset(shop: Shop) -> toolproof.Toolset:
    """The six tools, bound to one shop."""

    def find_order(crop: Crop, quantity_kg: float, delivery_date: date, ctx: CallContext,
                   grade: Grade = "A") -> Any:
        """place_order's verify: the shop looks the order up by its request key, so an unknown outcome (a
        reply lost after the insert) is settled by what the orders table holds."""
        row = shop.order_by_key(_request_key(ctx, _buyer(ctx), crop, grade, quantity_kg, delivery_date))
        return toolproof.NOT_DONE if row is None else _order(row, "Already placed")

    @toolproof.tool(effect="read", group="prices", examples=[{"crop": "jeera"}])
    def get_today_price(crop: Crop, grade: Grade = "A") -> PriceQuote:
        """Get today's mandi (wholesale market) price for one crop, in rupees per kg.

        Use this when the buyer asks what a crop costs today. Do not use it for stock levels (call
        check_stock) or for past prices (call get_price_history). Returns the price, the grade and the
        day the price was set.

        Args:
            crop: The crop. Cumin is jeera.
            grade: Quality grade. Use A if the buyer does not say.
        """
        return PriceQuote(crop=crop, grade=grade, price_rs_per_kg=shop.price(crop, grade), updated_on=shop.today())

    @toolproof.tool(effect="read", group="prices", examples=[{"crop": "onion", "days": 7}])
    def get_price_history(
        crop: Crop, days: Annotated[int, Field(ge=1, le=30)] = 7, grade: Grade = "A"
    ) -> list[PricePoint]:
        """Get the daily mandi price of one crop over the past days, in rupees per kg, oldest first.

        Use this when the buyer asks how a price moved or what it was last week. Do not use it for today's
        price (call get_today_price). Returns one price per day.

        Args:
            crop: The crop. Cumin is jeera.
            days: How many past days, 1 to 30.
            grade: Quality grade. Use A if the buyer does not say.
        """
        return [PricePoint(day=d, price_rs_per_kg=p) for d, p in shop.history(crop, grade, days)]

    @toolproof.tool(effect="read", group="stock", examples=[{"crop": "groundnut"}])
    def check_stock(crop: Crop, grade: Grade = "A") -> StockLevel:
        """Check how many kg of one crop are in stock now and can be ordered.

        Use this when the buyer asks whether we have enough of a crop. Do not use it for prices (call
        get_today_price). Returns the available quantity in kg.

        Args:
            crop: The crop. Cumin is jeera.
            grade: Quality grade. Use A if the buyer does not say.
        """
        return StockLevel(crop=crop, grade=grade, available_kg=shop.stock_kg(crop, grade))

    @toolproof.tool(
        effect="write",
        idempotent=True,  # the orders table enforces the request key: a repeat returns the first order
        group="orders",
        # One order per crop, grade and delivery day in a conversation: a changed quantity is the same
        # operation with other arguments, so the journal asks whether it is an amendment or a second order.
        operation_keys=["crop", "grade", "delivery_date"],
        examples=[{"crop": "groundnut", "quantity_kg": 40, "delivery_date": "2026-10-23"}],
        verify=find_order,
    )
    def place_order(
        crop: Crop,
        quantity_kg: Annotated[float, Field(ge=10, le=5000)],
        delivery_date: date,
        ctx: CallContext,
        grade: Grade = "A",
    ) -> Order:
        """Place one order for the signed-in buyer: one crop, a quantity in kg, a delivery date.

        Use this only after the buyer clearly asked to book or order. Do not use it to check prices or stock
        (call get_today_price or check_stock first if the buyer made the order depend on them). Returns the
        order id, the price per kg and a note that says whether the order is new or was already placed.

        Args:
            crop: The crop. Cumin is jeera.
            quantity_kg: Quantity in kilograms, 10 to 5000. 1 quintal is 100 kg; 1 tonne is 1000 kg.
            delivery_date: Delivery day as YYYY-MM-DD; from tomorrow on. Turn words like Thursday into a date.
            grade: Quality grade. Use A if the buyer does not say.
        """
        buyer = _buyer(ctx)
        today = shop.today()
        if delivery_date <= today:
            raise toolproof.InvalidArgument(
                f"delivery_date {delivery_date.isoformat()} is not after today, {today.isoformat()}.",
                code="DATE_NOT_IN_FUTURE",
                field="delivery_date",
                received=delivery_date.isoformat(),
                hint="Ask the buyer for a delivery date from tomorrow on.",
            )
        if quantity_kg > shop.stock_kg(crop, grade):
            raise toolproof.Conflict(
                f"Only {shop.stock_kg(crop, grade):.0f} kg of grade {grade} {crop} is in stock.",
                code="NOT_ENOUGH_STOCK",
                hint="Call check_stock, then offer the buyer what is available.",
            )
        # The key comes from the runner (built from the conversation and the approved arguments), never
        # from the model.
        key = _request_key(ctx, buyer, crop, grade, quantity_kg, delivery_date)
        row, created = shop.insert_order(
            buyer_id=buyer, crop=crop, grade=grade, quantity_kg=quantity_kg, delivery_date=delivery_date,
            request_key=key,
        )
        return _order(row, "New order placed" if created else "Already placed")

    @toolproof.tool(effect="read", group="orders", examples=[{"order_id": 1}])
    def get_order_status(order_id: Annotated[int, Field(ge=1)], ctx: CallContext) -> Order:
        """Get one of the signed-in buyer's orders by its order id: crop, quantity, date and status.

        Use this when the buyer asks about an order they placed. Do not use it to place or cancel orders.
        Returns the order with its status (placed or cancelled).

        Args:
            order_id: The order id from place_order's reply.
        """
        row = _owned_order(shop, ctx, order_id, hint="Ask the buyer for the order id from the confirmation.")
        return _order(row, "status")

    @toolproof.tool(effect="write", idempotent=True, risk="high", group="orders", examples=[{"order_id": 1}])
    def cancel_order(order_id: Annotated[int, Field(ge=1)], ctx: CallContext) -> Order:
        """Cancel one of the signed-in buyer's orders by its order id. Cancelling twice changes nothing.

        Use this only when the buyer clearly asked to cancel a specific order. Do not use it to change a
        quantity (cancel, then place a new order only after the buyer confirms). Returns the cancelled order.

        Args:
            order_id: The order id from place_order's reply.
        """
        _owned_order(shop, ctx, order_id, hint="Call get_order_status or ask the buyer for the order id.")
        updated = shop.cancel(order_id)
        assert updated is not None
        return _order(updated, "Cancelled")

    return toolproof.Toolset(
        [get_today_price, get_price_history, check_stock, place_order, get_order_status, cancel_order]
    )
