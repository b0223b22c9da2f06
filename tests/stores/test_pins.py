"""Pins in every store: the first writer wins (a fleet of gateways agrees), a later write replaces it."""

from __future__ import annotations

from dataclasses import replace

from toolproof.stores import Store
from toolproof.stores._pins import Pin


def test_first_sight_wins_and_a_put_replaces(store: Store) -> None:
    first = Pin("billing", "lookup", "f1", {"name": "lookup", "description": "One."}, 1.0)
    assert store.pin_claim(first) == first
    second = Pin("billing", "lookup", "f2", {"name": "lookup", "description": "Two."}, 2.0)
    assert store.pin_claim(second) == first  # another gateway saw it first: its pin holds
    pending = replace(first, pending=second.definition, pending_fingerprint="f2", seen_at=3.0,
                      changes=[{"kind": "description-changed", "change_class": "behavioural"}])
    store.pin_put(pending)
    store.pin_claim(Pin("other", "t", "f9", {"name": "t"}, 4.0))
    assert store.pin_list(upstream="billing") == [pending]
    assert [(p.upstream, p.tool) for p in store.pin_list()] == [("billing", "lookup"), ("other", "t")]
    approved = replace(pending, definition=second.definition, fingerprint="f2", pending=None,
                       pending_fingerprint=None, changes=[], note="reviewed")
    store.pin_put(approved)
    assert store.pin_list(upstream="billing") == [approved]
