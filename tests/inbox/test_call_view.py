"""One call's page shows the tool's own exception and traceback, as the audit and stop records keep them:
redacted, never the secret. Checked over HTTP (Starlette's client is httpx)."""

from __future__ import annotations

from typing import Annotated

from starlette.testclient import TestClient

import toolproof
from toolproof.inbox import create_app
from toolproof.stores import MemoryStore

SECRET = "tok-7secret-fedcba9876543"


class BankRefused(RuntimeError):
    """What the bank's client raises."""


def send_wire(amount_rs: int, token: str) -> None:
    raise BankRefused(f"bank refused wire of {amount_rs} Rs with token {token}")


@toolproof.tool(effect="write", risk="high")
def wire(amount_rs: int, api_token: Annotated[str, toolproof.Secret]) -> dict[str, int]:
    """Send a wire.

    Use it to pay. Returns the wire.
    """
    send_wire(amount_rs, api_token)
    return {"amount_rs": amount_rs}


def failed_call() -> tuple[MemoryStore, str]:
    store = MemoryStore()
    runner = toolproof.Runner(toolproof.Toolset([wire]), store=store)
    envelope = runner.call_sync("wire", {"amount_rs": 70_000, "api_token": SECRET})
    runner.flush()
    assert not envelope.ok
    return store, envelope.meta.call_id


def test_the_call_page_shows_the_redacted_exception_of_each_attempt_and_the_stop() -> None:
    store, call_id = failed_call()
    (stop,) = store.list_stops(call_id=call_id)
    assert stop.exception_type is not None and stop.traceback is not None  # the record keeps it
    c = TestClient(create_app(store), base_url="http://127.0.0.1:8765")
    page = c.get(f"/audit/call/{call_id}")
    assert page.status_code == 200
    text = page.text
    assert SECRET not in text
    assert "BankRefused" in text and "bank refused wire of 70000 Rs" in text
    assert "send_wire" in text and "Traceback (most recent call last)" in text  # the traceback, as printed
    assert f"stop {stop.id}" in text and "effect unknown" in text
    audited = [r for r in store.list_audit(tool="wire") if r.exception_type]
    assert audited and text.count('data-testid="exception"') == len(audited) + 1  # each attempt and the stop
    assert f'href="/audit/call/{call_id}"' in c.get("/stops").text  # the stop links to its call


def test_a_call_without_an_exception_shows_none() -> None:
    store = MemoryStore()
    runner = toolproof.Runner(toolproof.Toolset([wire]), store=store)
    envelope = runner.call_sync("wire", {"amount_rs": "many", "api_token": SECRET})
    runner.flush()
    page = TestClient(create_app(store), base_url="http://127.0.0.1:8765").get(f"/audit/call/{envelope.meta.call_id}")
    assert page.status_code == 200 and "WRONG_TYPE" in page.text
    assert 'data-testid="exception"' not in page.text and SECRET not in page.text
