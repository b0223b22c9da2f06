"""Models an eval can ask: `openai:MODEL`, `anthropic:MODEL`, `replay:FILE`, `scripted:MODULE:FUNC`.

Every model answers a `ModelRequest` (the messages, the tools, and which case/run/step it is for) with a
`ModelReply` (tool calls, or text when it calls nothing). Live models go through a retry on 429 that honours
Retry-After, under a concurrency limit; `RecordingModel` saves what a live model said so the same run
replays offline (`replay:FILE`, keyed by case id, run index and step).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..contract._errors import ErrorClass
from ..orchestration.policy import RetryPolicy, decide_retry
from ._scoring import ToolCall


class ModelError(RuntimeError):
    """A model could not answer (bad spec, missing package, missing recording, endpoint failure)."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    case_id: str
    run: int
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...]  # OpenAI function-tool format
    step: int = 0

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.case_id, self.run, self.step)


@dataclass(frozen=True, slots=True)
class ModelReply:
    calls: tuple[ToolCall, ...] = ()
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"calls": [c.to_dict() for c in self.calls], "text": self.text}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelReply:
        return cls(tuple(ToolCall.from_dict(c) for c in data.get("calls") or ()), data.get("text"))


@runtime_checkable
class Model(Protocol):
    @property
    def name(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...


# --------------------------------------------------------------------------------------------- replay


@dataclass(frozen=True, slots=True)
class ReplayModel:
    """Recorded outputs from a JSONL file: `{"case", "run", "step"?, "calls", "text"?}` per line; a line
    with `"_meta"` describes where the outputs came from (e.g. authored by hand, not a live model)."""

    name: str
    replies: Mapping[tuple[str, int, int], ModelReply]
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> ReplayModel:
        path = Path(path)
        if not path.exists():
            raise ModelError(f"no recording at {path}")
        replies: dict[tuple[str, int, int], ModelReply] = {}
        meta: dict[str, Any] = {}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if "_meta" in item:
                    meta.update(item["_meta"])
                    continue
                key = (str(item["case"]), int(item.get("run", 0)), int(item.get("step", 0)))
                replies[key] = ModelReply.from_dict(item)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ModelError(f"{path}:{n}: not a recorded reply: {exc}") from None
        return cls(f"replay:{path.name}", replies, meta)

    async def complete(self, request: ModelRequest) -> ModelReply:
        reply = self.replies.get(request.key)
        if reply is None and request.run > 0:
            # fewer recorded runs than asked for: cycle through the recorded runs of this case and step
            runs = sorted(r for (c, r, s) in self.replies if c == request.case_id and s == request.step)
            if runs:
                reply = self.replies[(request.case_id, runs[request.run % len(runs)], request.step)]
        if reply is None:
            raise ModelError(f"{self.name}: nothing recorded for case {request.case_id!r} run {request.run} "
                             f"step {request.step}")
        return reply


# ------------------------------------------------------------------------------------------- scripted

ScriptFn = Callable[[ModelRequest], "ModelReply | Awaitable[ModelReply]"]


@dataclass(frozen=True, slots=True)
class ScriptedModel:
    """A Python function as the model, for tests and demos (it sees the same request a live model does)."""

    name: str
    fn: ScriptFn

    async def complete(self, request: ModelRequest) -> ModelReply:
        result = self.fn(request)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ModelReply):
            raise ModelError(f"{self.name} returned {type(result).__name__}, not a ModelReply")
        return result


# ------------------------------------------------------------------------------------------ recording


@dataclass
class RecordingModel:
    """Wraps a model and keeps every reply, to be written with `save` and replayed with `replay:FILE`."""

    inner: Model
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    async def complete(self, request: ModelRequest) -> ModelReply:
        reply = await self.inner.complete(request)
        self.records.append({"case": request.case_id, "run": request.run, "step": request.step, **reply.to_dict()})
        return reply

    def save(self, path: str | Path) -> None:
        lines = [json.dumps({"_meta": {"source": "recorded from " + self.inner.name}})]
        lines += [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in
                  sorted(self.records, key=lambda r: (r["case"], r["run"], r["step"]))]
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------- live: retry on 429


def default_model_retry() -> RetryPolicy:
    """429s from a model endpoint: toolproof's own policy (Retry-After wins), 4 attempts, full jitter."""
    return RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=20.0, jitter="full", max_wall_s=None)


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    from ..contract._classify import parse_retry_after

    value = headers.get("retry-after") or headers.get("Retry-After")
    return parse_retry_after(value) if value else None


_SAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def openai_tools(tools: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Tool names made legal for OpenAI (`^[a-zA-Z0-9_-]{1,64}$`), with the map back to the real names."""
    out, back = [], {}
    for t in tools:
        fn = dict(t["function"])
        safe = _SAFE_NAME.sub("_", fn["name"])[:64]
        back[safe] = fn["name"]
        fn["name"] = safe
        out.append({"type": "function", "function": fn})
    return out, back


def parse_openai_message(message: Any, names: Mapping[str, str]) -> ModelReply:
    calls = []
    for tc in getattr(message, "tool_calls", None) or ():
        fn = tc.function
        raw = fn.arguments or ""
        try:
            args = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            args = None
        if args is not None and not isinstance(args, dict):
            args = None
        calls.append(ToolCall(names.get(fn.name, fn.name), args, raw if args is None else None))
    return ModelReply(tuple(calls), getattr(message, "content", None))


@dataclass
class OpenAIModel:
    """Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server, hosted providers)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    retry: RetryPolicy = field(default_factory=default_model_retry)
    temperature: float | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    seed: int = 0
    _client: Any = None
    _loop: Any = None

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def _get_client(self) -> Any:
        # One client per event loop: pooled keep-alive connections belong to the loop that opened them,
        # and each batch of an eval (e.g. each recovery step) runs in its own loop.
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._loop = loop
            try:
                import openai
            except ImportError:  # pragma: no cover - the extra is installed in dev
                raise ModelError("openai:MODEL needs the openai package: pip install 'toolproof[openai]'") from None
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
                api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
                max_retries=0,  # our retry owns 429s
            )
        return self._client

    async def complete(self, request: ModelRequest) -> ModelReply:
        import openai

        client = self._get_client()
        tools, names = openai_tools(request.tools)
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(request.messages)}
        if tools:
            kwargs["tools"] = tools
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        rng = random.Random(f"{self.seed}:{request.key}")
        for attempt in range(1, self.retry.max_attempts + 1):
            try:
                response = await client.chat.completions.create(**kwargs)
            except openai.RateLimitError as exc:
                # The same decision the Runner takes for a rate-limited read (a model call changes nothing).
                decision = decide_retry(self.retry, error_class=ErrorClass.RATE_LIMITED, attempts=attempt,
                                        now=time.monotonic(), retry_after_s=_retry_after(exc.response.headers),
                                        rand=rng.random())
                if not decision.retry:
                    raise ModelError(f"{self.name}: still rate limited after {attempt} attempts") from exc
                await self.sleep(decision.delay_s)
                continue
            except openai.APIError as exc:
                raise ModelError(f"{self.name}: {exc}") from exc
            if not response.choices:
                return ModelReply()
            return parse_openai_message(response.choices[0].message, names)
        raise ModelError(f"{self.name}: no answer")  # pragma: no cover - the loop returns or raises


@dataclass
class AnthropicModel:
    """Anthropic's Messages API (optional extra: `pip install anthropic`)."""

    model: str
    api_key: str | None = None
    max_tokens: int = 1024
    _client: Any = None
    _loop: Any = None

    @property
    def name(self) -> str:
        return f"anthropic:{self.model}"

    async def complete(self, request: ModelRequest) -> ModelReply:
        try:
            anthropic = importlib.import_module("anthropic")
        except ImportError:
            raise ModelError("anthropic:MODEL needs the anthropic package: pip install anthropic") from None
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # one client per event loop, as for OpenAI
            self._loop = loop
            self._client = anthropic.AsyncAnthropic(api_key=self.api_key or os.environ.get("ANTHROPIC_API_KEY"))
        system = "\n".join(str(m["content"]) for m in request.messages if m.get("role") == "system")
        messages = [{"role": m["role"], "content": m["content"]} for m in request.messages
                    if m.get("role") in ("user", "assistant")]
        tools = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
                  "input_schema": t["function"].get("parameters") or {"type": "object"}} for t in request.tools]
        try:
            response = await self._client.messages.create(model=self.model, max_tokens=self.max_tokens,
                                                          system=system or None, messages=messages, tools=tools)
        except anthropic.APIError as exc:
            raise ModelError(f"{self.name}: {exc}") from exc
        calls, texts = [], []
        for block in response.content:
            if block.type == "tool_use":
                calls.append(ToolCall(block.name, dict(block.input) if isinstance(block.input, dict) else None))
            elif block.type == "text":
                texts.append(block.text)
        return ModelReply(tuple(calls), "\n".join(texts) or None)


# --------------------------------------------------------------------------------------------- loading


def load_model(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> Model:
    """`openai:MODEL`, `anthropic:MODEL`, `replay:FILE` or `scripted:MODULE:FUNC`."""
    kind, _, rest = spec.partition(":")
    if not rest:
        raise ModelError(f"model spec {spec!r}: expected openai:MODEL, anthropic:MODEL, replay:FILE or "
                         "scripted:MODULE:FUNC")
    if kind == "openai":
        return OpenAIModel(rest, base_url=base_url, api_key=api_key)
    if kind == "anthropic":
        return AnthropicModel(rest, api_key=api_key)
    if kind == "replay":
        return ReplayModel.load(rest)
    if kind == "scripted":
        module_name, _, attr = rest.partition(":")
        if not attr:
            raise ModelError(f"scripted model {spec!r}: expected scripted:MODULE:FUNC")
        try:
            fn = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ModelError(f"scripted model {spec!r}: {exc}") from None
        return ScriptedModel(spec, fn)
    raise ModelError(f"unknown model kind {kind!r} in {spec!r}")


async def complete_all(
    model: Model,
    requests: Sequence[ModelRequest],
    *,
    concurrency: int = 4,
    progress: Callable[[int], None] | None = None,
    max_errors: int | None = None,
) -> list[ModelReply | ModelError]:
    """Answer many requests with at most `concurrency` in flight; a failed request yields its ModelError.

    Once more than `max_errors` requests failed, the ones not yet sent are not sent (`NotAsked`)."""
    from ._model_errors import NotAsked

    semaphore = asyncio.Semaphore(max(1, concurrency))
    failed = 0

    async def one(request: ModelRequest) -> ModelReply | ModelError:
        nonlocal failed
        async with semaphore:
            try:
                if max_errors is not None and failed > max_errors:
                    return NotAsked()
                return await model.complete(request)
            except ModelError as exc:
                failed += 1
                return exc
            finally:
                if progress is not None:
                    progress(1)

    return list(await asyncio.gather(*(one(r) for r in requests)))


def run_all(
    model: Model, requests: Sequence[ModelRequest], *, concurrency: int = 4, show_progress: bool = False,
    max_errors: int | None = None,
) -> list[ModelReply | ModelError]:
    """`complete_all` from sync code, with a rich progress bar when asked (live models)."""
    if not show_progress:
        return asyncio.run(complete_all(model, requests, concurrency=concurrency, max_errors=max_errors))
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(f"asking {model.name}", total=len(requests))
        return asyncio.run(complete_all(model, requests, concurrency=concurrency, max_errors=max_errors,
                                        progress=lambda n: bar.advance(task, n)))
