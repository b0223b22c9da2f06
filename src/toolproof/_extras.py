"""Which `pip install 'toolproof[EXTRA]'` a missing module asks for: one home for that answer, so a plain
`pip install toolproof` meets a one-line instruction instead of a traceback ending in `No module named 'anyio'`.

At the root, beside `_version.py`, so any floor can name the extra it needs without importing a floor above it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["EXTRA_OF_MODULE", "MissingExtra", "install_line", "missing_extra", "needs_extra"]

#: The top-level module a missing import names -> the extra of pyproject.toml that installs it. Modules that
#: come with an extra's dependency and that toolproof imports itself (anyio with the MCP SDK) are listed too.
EXTRA_OF_MODULE: Final[Mapping[str, str]] = MappingProxyType({
    "mcp": "mcp", "anyio": "mcp", "httpx": "mcp", "httpx_sse": "mcp", "sse_starlette": "mcp",
    "prometheus_client": "mcp",
    "psycopg": "postgres", "psycopg_pool": "postgres",
    "redis": "fleet",
    "openai": "openai",
    "opentelemetry": "otel",
    "bm25s": "retrieval", "Stemmer": "retrieval", "numpy": "retrieval",
    "tokenizers": "retrieval", "safetensors": "embeddings", "threadpoolctl": "embeddings",
    "starlette": "ui", "uvicorn": "ui", "multipart": "ui", "python_multipart": "ui",
    # The framework adapters of toolproof.integrations, one extra each.
    "pydantic_ai": "pydantic-ai", "fastmcp": "pydantic-ai-mcp", "agents": "openai-agents",
    "langchain_core": "langchain", "langgraph": "langchain", "anthropic": "anthropic",
    # The durable engines.
    "temporalio": "temporal", "dbos": "dbos",
})


class MissingExtra(ImportError):
    """An optional part of toolproof was used without its extra; the message is the line to run."""

    def __init__(self, what: str, extra: str, cause: str) -> None:
        super().__init__(f"{what} needs the {extra} extra: {install_line(extra)} ({cause})")
        self.what, self.extra, self.cause = what, extra, cause


def install_line(extra: str) -> str:
    """The exact command that installs one extra (quoted: brackets are a glob in most shells)."""
    return f"pip install 'toolproof[{extra}]'"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes and contexts, and the members of exception groups (task groups wrap)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)


def _raised_in_toolproof(exc: BaseException) -> bool:
    """Whether the failed import statement is toolproof's own: a user's module importing numpy without
    having it must not be told to install a toolproof extra."""
    frame, tb = None, exc.__traceback__
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith("<frozen importlib"):
            frame = tb.tb_frame
        tb = tb.tb_next
    return frame is not None and str(frame.f_globals.get("__name__", "")).partition(".")[0] == "toolproof"


def missing_extra(exc: BaseException, what: str) -> MissingExtra | None:
    """The `MissingExtra` behind `exc` (kept as raised), or one for `what` made from a `ModuleNotFoundError`
    of a module an extra installs; None when the failure is something else (a typo in a user's own module
    stays an ordinary import error)."""
    for found in _chain(exc):
        if isinstance(found, MissingExtra):
            return found
    for found in _chain(exc):
        if isinstance(found, ModuleNotFoundError) and found.name and _raised_in_toolproof(found):
            extra = EXTRA_OF_MODULE.get(found.name.partition(".")[0])
            if extra is not None:
                return MissingExtra(what, extra, f"No module named {found.name!r}")
    return None


def needs_extra(what: str, exc: ImportError) -> ImportError:
    """What to raise when `what` (e.g. "Toolset.search()") failed to import something: the extra's line
    when an extra installs the missing module, else the import error unchanged."""
    return missing_extra(exc, what) or exc
