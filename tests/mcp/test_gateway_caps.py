"""Response and request caps at the gateway: a real upstream over stdio (tests/mcp_servers/bulky.py) behind an
in-process `Gateway`, driven by the official SDK client on an in-memory transport."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.client import Client

from tests.mcp_servers.harness import PY, REPO_ROOT, child_env
from toolproof import Envelope
from toolproof.mcp import Gateway, GatewayConfig, Upstream
from toolproof.mcp._caps import ResponseCaps
from toolproof.stores import MemoryStore

pytestmark = pytest.mark.timeout(120)


def bulky(log: Path) -> Upstream:
    return Upstream(name="bulky", command=(PY, "-m", "tests.mcp_servers.bulky"), env=child_env(BULKY_LOG=str(log)),
                    cwd=str(REPO_ROOT), trusted=True)


@asynccontextmanager
async def session(log: Path, caps: ResponseCaps = ResponseCaps()) -> AsyncIterator[tuple[Gateway, Client]]:
    gw = Gateway(GatewayConfig(upstreams=(bulky(log),), caps=caps), store=MemoryStore())
    async with gw, Client(gw.create_server()) as client:
        yield gw, client


def dispatched(log: Path) -> list[dict[str, int | str]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


async def test_an_upstream_answering_5_mb_is_cut_and_the_model_reads_why(tmp_path: Path) -> None:
    caps = ResponseCaps(max_response_bytes=1_000_000, max_response_chars=100_000)
    async with session(tmp_path / "log.jsonl", caps) as (gw, client):
        result = await client.call_tool("big", {"size": 5_000_000})
        small = await client.call_tool("big", {"size": 1000})
    envelope = Envelope.from_dict(result.structured_content)
    assert envelope.ok and not result.is_error
    text = envelope.result
    assert isinstance(text, str) and len(text) <= 100_000
    assert "this answer was cut" in text and "5,000,000 bytes" in text and "Ask for less" in text
    assert text.startswith("0123456789abcdef")  # the head is the upstream's own text
    capped = envelope.meta.extra["response_capped"]
    assert capped["bytes"] == 5_000_000 and capped["text_chars"] == 5_000_000
    assert capped["limit_bytes"] == 1_000_000 and capped["kept_chars"] < 100_000
    assert len(capped["sha256"]) == 64 and capped["sha256"] in text
    # What the client received is bounded too: the envelope JSON text plus structured content.
    assert sum(len(b.text) for b in result.content if hasattr(b, "text")) < 2 * 100_000 + 10_000
    small_env = Envelope.from_dict(small.structured_content)
    assert small_env.ok and len(small_env.result) == 1000 and "response_capped" not in small_env.meta.extra
    samples = gw.metrics.registry.get_sample_value
    assert samples("toolproof_gateway_responses_capped_total", {"upstream": "bulky", "tool": "big"}) == 1


async def test_the_hash_is_of_the_full_answer(tmp_path: Path) -> None:
    caps = ResponseCaps(max_response_bytes=10_000, max_response_chars=5_000)
    async with session(tmp_path / "log.jsonl", caps) as (_gw, client):
        first = Envelope.from_dict((await client.call_tool("big", {"size": 50_000})).structured_content)
        second = Envelope.from_dict((await client.call_tool("big", {"size": 50_001})).structured_content)
    a, b = first.meta.extra["response_capped"], second.meta.extra["response_capped"]
    assert a["sha256"] != b["sha256"] and a["bytes"] == 50_000 and b["bytes"] == 50_001
    line = "0123456789abcdef" * 4 + "\n"
    assert a["sha256"] == hashlib.sha256((line * 800)[:50_000].encode()).hexdigest()  # the text as the upstream sent it


async def test_a_tool_with_an_output_schema_fails_clearly_instead_of_breaking_its_shape(tmp_path: Path) -> None:
    caps = ResponseCaps(max_response_bytes=20_000, max_response_chars=20_000)
    async with session(tmp_path / "log.jsonl", caps) as (_gw, client):
        envelope = Envelope.from_dict((await client.call_tool("big_structured", {"size": 200_000})).structured_content)
        fine = Envelope.from_dict((await client.call_tool("big_structured", {"size": 2_000})).structured_content)
    assert envelope.error is not None and envelope.error.code == "RESPONSE_TOO_LARGE"
    assert envelope.error.error_class.value == "invalid_argument" and "Ask for less" in (envelope.error.hint or "")
    assert fine.ok and isinstance(fine.result["rows"], list)


async def test_a_huge_request_is_refused_before_it_reaches_the_upstream(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    caps = ResponseCaps(max_request_bytes=100_000)
    async with session(log, caps) as (gw, client):
        result = await client.call_tool("echo", {"text": "x" * 300_000})
        ok = await client.call_tool("echo", {"text": "y" * 1000})
        gw.runner.flush()
        audit = gw.runner.store.list_audit(limit=10)
    envelope = Envelope.from_dict(result.structured_content)
    assert result.is_error and envelope.error is not None and envelope.error.code == "REQUEST_TOO_LARGE"
    assert "300,0" in envelope.error.message and "100,000" in envelope.error.message
    assert Envelope.from_dict(ok.structured_content).ok
    assert [row["tool"] for row in dispatched(log)] == ["echo"]  # only the small one was sent
    refused = [r for r in audit if r.code == "REQUEST_TOO_LARGE"]
    assert len(refused) == 1 and "x" * 100 not in json.dumps(refused[0].arguments)  # its size, not its bytes


def test_caps_below_the_notice_room_are_refused() -> None:
    from toolproof.mcp._config import ConfigError, config_from_dict

    up = {"command": "python -m x"}
    with pytest.raises(ConfigError, match=r"\[caps\] max_response_chars must be an integer of at least 1600"):
        config_from_dict({"upstreams": {"a": up}, "caps": {"max_response_chars": 10}})
    with pytest.raises(ConfigError, match=r"\[caps\]: unknown key\(s\) max_bytes"):
        config_from_dict({"upstreams": {"a": up}, "caps": {"max_bytes": 10}})
    cfg = config_from_dict({"upstreams": {"a": up}, "caps": {"max_response_bytes": 5000}})
    assert cfg.upstreams[0].caps.max_response_bytes == 5000  # every upstream gets the gateway's caps


def _compact_size(value: object) -> int:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def test_the_json_bound_is_never_under_the_encoded_size() -> None:
    from toolproof.mcp._caps import json_bound

    worst = "\x00\"\\é😀\ud800\u2028\n"  # escaped (6 bytes), escaped (2), 2-4 bytes raw, a lone surrogate
    values: list[object] = [
        None, True, 0, -1, 2**200, -(2**64), 1.5, -1.7976931348623157e308, 2.2250738585072014e-308, float("inf"),
        float("nan"), "", worst * 50, [], {}, [worst, [worst, {worst: [None, 10**40, -0.0]}]],
        {"timezone": "Europe/Paris", "is_dst": False, "rows": [{"n": i, "v": worst[: i % 9]} for i in range(50)]},
    ]
    for value in values:
        bound = json_bound(value, 10**9)
        assert bound is not None and bound >= _compact_size(value), value
    assert json_bound({"a": "x" * 1000}, 100) is None  # over the budget: measured instead
    assert json_bound({1: "a"}, 10**9) is None and json_bound({"a": object()}, 10**9) is None  # not bounded


def test_a_request_of_escaped_characters_is_measured_as_encoded() -> None:
    from toolproof.mcp._caps import request_size

    # 200,000 control characters are 1,200,002 bytes of JSON (each one `\u0000`): over a 1 MB limit.
    size = request_size({"text": "\x00" * 200_000}, 1_000_000)
    assert size == _compact_size({"text": "\x00" * 200_000}) and size > 1_000_000
    assert request_size({"text": "x" * 1000, "n": 3, "nested": {"k": [1, 2.5, None]}}, 1_000_000) is None
