"""The `openai:MODEL` adapter over real HTTP: a local OpenAI-compatible server started by the test (the
only fake is the model behind it, which cannot exist here) returns tool calls, malformed arguments, plain
text, and 429 with Retry-After."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolproof.cli import app
from toolproof.evals import ModelError, ModelRequest, OpenAIModel, RecordingModel, ReplayModel
from toolproof.evals._models import complete_all, default_model_retry

INT_PARAM = {"type": "object", "properties": {"n": {"type": "integer"}}}
CROP_PARAM = {"type": "object", "properties": {"crop": {"type": "string"}}}
TOOLS = ({"type": "function", "function": {"name": "math.factorial", "description": "n!", "parameters": INT_PARAM}},
         {"type": "function", "function": {"name": "get_today_price", "description": "price",
                                           "parameters": CROP_PARAM}})


class _Server:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.limited: dict[str, int] = {}
        self.lock = threading.Lock()


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                         "message": {"role": "assistant", "content": None, **message}}]}


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def make_handler(state: _Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do: pooled connections get reused

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
            last = body["messages"][-1]
            if last["role"] == "tool":  # the recovery loop's second step: react to the envelope
                error = json.loads(last["content"])["error"]
                if error["next_action"] == "retry":
                    self._send(200, _completion(_call("get_today_price", '{"crop": "onion"}')))
                else:
                    self._send(200, _completion({"content": "Which crop did you mean?"}))
                return
            text = last["content"]
            if text.startswith("limited") or text == "always 429":
                with state.lock:
                    state.limited[text] = state.limited.get(text, 0) + 1
                    count = state.limited[text]
                if text == "always 429" or count <= 2:
                    wait = "0" if text.startswith("limited0") else "3"
                    self._send(429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": wait})
                    return
            if "factorial" in text:
                self._send(200, _completion(_call("math_factorial", '{"n": 5}')))
            elif "malformed" in text:
                self._send(200, _completion(_call("get_today_price", '{"crop": "onion"')))
            elif "thanks" in text:
                self._send(200, _completion({"content": "You're welcome!"}))
            else:
                self._send(200, _completion(_call("get_today_price", '{"crop": "onion"}')))

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[str, _Server]]:
    state = _Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", state
    finally:
        httpd.shutdown()
        httpd.server_close()


def _request(text: str, case: str = "c") -> ModelRequest:
    return ModelRequest(case, 0, ({"role": "user", "content": text},), TOOLS)


def _model(url: str, delays: list[float], attempts: int = 4) -> OpenAIModel:
    async def sleep(seconds: float) -> None:  # the wait is recorded, not slept: the test stays fast
        delays.append(seconds)

    return OpenAIModel("test-model", base_url=url, api_key="sk-test", sleep=sleep,
                       retry=dataclasses.replace(default_model_retry(), max_attempts=attempts))


def test_tool_calls_text_and_malformed_arguments(server: tuple[str, _Server]) -> None:
    url, state = server
    model = _model(url, [])
    call = asyncio.run(model.complete(_request("price of onion"))).calls[0]
    assert (call.name, call.arguments) == ("get_today_price", {"crop": "onion"})
    bad = asyncio.run(model.complete(_request("malformed please"))).calls[0]
    assert bad.arguments is None and bad.raw_arguments == '{"crop": "onion"'
    text = asyncio.run(model.complete(_request("thanks")))
    assert text.calls == () and text.text == "You're welcome!"
    assert state.requests[0]["auth"] == "Bearer sk-test" and state.requests[0]["path"] == "/v1/chat/completions"


def test_dotted_tool_names_travel_as_legal_names_and_come_back(server: tuple[str, _Server]) -> None:
    url, state = server
    reply = asyncio.run(_model(url, []).complete(_request("factorial of 5")))
    assert state.requests[0]["tools"][0]["function"]["name"] == "math_factorial"
    assert reply.calls[0].name == "math.factorial" and reply.calls[0].arguments == {"n": 5}


def test_429_is_retried_after_the_retry_after_delay(server: tuple[str, _Server]) -> None:
    url, state = server
    delays: list[float] = []
    reply = asyncio.run(_model(url, delays).complete(_request("limited: price of onion")))
    assert reply.calls[0].name == "get_today_price"
    assert delays == [3.0, 3.0] and state.limited["limited: price of onion"] == 3


def test_429_forever_gives_up_with_a_clear_error(server: tuple[str, _Server]) -> None:
    url, _ = server
    delays: list[float] = []
    with pytest.raises(ModelError, match="still rate limited after 3 attempts"):
        asyncio.run(_model(url, delays, attempts=3).complete(_request("always 429")))
    assert delays == [3.0, 3.0]


def test_concurrency_limit_and_record_then_replay(server: tuple[str, _Server], tmp_path: Path) -> None:
    url, _ = server
    recorder = RecordingModel(_model(url, []))
    requests = [_request(t, f"case-{i}") for i, t in enumerate(["price", "thanks", "malformed", "factorial"])]
    live = asyncio.run(complete_all(recorder, requests, concurrency=2))
    path = tmp_path / "rec.jsonl"
    recorder.save(path)
    replay = ReplayModel.load(path)
    again = asyncio.run(complete_all(replay, requests, concurrency=2))
    assert again == live and replay.meta["source"] == "recorded from openai:test-model"


def test_an_unreachable_endpoint_is_a_model_error() -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="x")
    with pytest.raises(ModelError):
        asyncio.run(model.complete(_request("price")))


def test_cli_selection_against_the_local_endpoint_records_for_replay(server: tuple[str, _Server],
                                                                     tmp_path: Path) -> None:
    url, state = server
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "today: '2026-10-19'\nsystem_prompt: 'Today is {today}.'\ncases:\n"
        "  - {id: price, message: 'price of onion', expected: {tool: get_today_price, arguments: {crop: onion}}}\n"
        "  - {id: thanks, message: 'thanks', expected: no_tool}\n"
        "  - {id: limited, message: 'limited0: onion', expected: {tool: check_stock}}\n")
    record = tmp_path / "rec.jsonl"
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["eval", "selection", str(cases), "-m", "openai:test-model", "--base-url", url,
                                      "--api-key", "k", "--toolset", "toolproof.examples.wholesaler.cases:new_toolset",
                                      "-k", "2", "--record", str(record), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())["reports"][0]["summary"]
    assert summary["pass_at_1"] == {"passed": 4, "total": 6, "rate": 0.6667}
    assert state.requests[0]["messages"][0] == {"role": "system", "content": "Today is 2026-10-19."}
    replay = CliRunner().invoke(app, ["eval", "selection", str(cases), "-m", f"replay:{record}", "--toolset",
                                      "toolproof.examples.wholesaler.cases:new_toolset", "-k", "2", "--out", str(out)])
    assert replay.exit_code == 0, replay.output
    assert json.loads(out.read_text())["reports"][0]["summary"] == summary


def test_recovery_loop_over_http_keeps_working_across_steps(server: tuple[str, _Server]) -> None:
    from toolproof import NeedsClarification, RateLimited
    from toolproof.evals import run_recovery
    from toolproof.evals._recovery import SeededFailure
    from toolproof.examples.wholesaler.cases import new_toolset

    url, state = server
    failures = [SeededFailure("rl", "price of onion", RateLimited("slow down", retry_after_s=1)),
                SeededFailure("nc", "price please", NeedsClarification("which crop?", hint="Ask which crop."))]
    report = run_recovery(failures, new_toolset(), _model(url, []), runs=2)
    assert [r.observed for r in report.results] == ["retry", "retry", "ask_person", "ask_person"]
    assert report.overall == (4, 4) and len(state.requests) == 8
