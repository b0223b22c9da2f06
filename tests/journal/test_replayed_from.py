"""A replayed envelope says which call ran and when (`meta.replayed_from`), and the published schema describes it:
the runner through its public API on a real SQLite file."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import jsonschema_rs
import pytest

import toolproof
from toolproof.contract._envelope import envelope_schema


def test_a_replay_carries_the_original_call_and_its_time(tmp_path: Path) -> None:
    sent: list[int] = []

    @toolproof.tool(effect="write")
    def send_invoice(amount_rs: int) -> dict[str, int]:
        """Send one invoice.

        Args:
            amount_rs: Amount in rupees.
        """
        sent.append(amount_rs)
        return {"invoice_id": len(sent)}

    url = f"sqlite:///{tmp_path / 'journal.sqlite3'}"
    ctx = toolproof.CallContext(conversation_id="c1")
    before = time.time()
    runner = toolproof.Runner(toolproof.Toolset([send_invoice]), store=url)
    first = runner.call_sync("send_invoice", {"amount_rs": 5}, context=ctx)
    runner.close()
    time.sleep(0.05)
    again_runner = toolproof.Runner(toolproof.Toolset([send_invoice]), store=url)  # a later process, same file
    again = again_runner.call_sync("send_invoice", {"amount_rs": 5}, context=ctx)
    again_runner.close()

    assert sent == [5] and again.meta.replayed and again.result == first.result
    assert "replayed_from" not in first.meta.to_dict()
    origin = again.to_dict()["meta"]["replayed_from"]
    assert origin["call_id"] == first.meta.call_id
    assert before <= datetime.fromisoformat(origin["at"]).timestamp() + 0.001 <= time.time()
    assert origin["at"].endswith("Z")
    validator = jsonschema_rs.validator_for(envelope_schema())
    assert validator.is_valid(again.to_dict())
    assert toolproof.Envelope.from_dict(again.to_dict()) == again


@pytest.mark.parametrize("origin", [{"call_id": "c"}, {"call_id": 3, "at": "2026-01-01T00:00:00.000Z"},
                                    {"call_id": "c", "at": "2026-01-01T00:00:00.000Z", "extra": 1}, "yesterday"])
def test_the_schema_rejects_a_malformed_replayed_from(origin: object) -> None:
    data = {"ok": True, "result": 1, "meta": {"tool": "t", "call_id": "c", "replayed": True, "replayed_from": origin}}
    with pytest.raises(toolproof.MalformedEnvelope):
        toolproof.Envelope.from_dict(data)
    meta = envelope_schema()["$defs"]["meta"]["properties"]["replayed_from"]
    assert "when" in meta["description"] and meta["properties"]["at"]["format"] == "date-time"
