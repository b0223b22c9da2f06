"""Read tool definitions from anything: a `Toolset`, a JSON/JSONL file in MCP, OpenAI, Anthropic or BFCL
format (detected or forced), a `MODULE:ATTR`, or a live MCP server (stdio command or streamable HTTP URL)."""

from __future__ import annotations

import importlib
import json
import os
import shlex
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Literal, cast

from ..catalog._toolset import Toolset, mcp_definition
from ..contract._errors import DefinitionError
from ._model import ToolDef, ToolFormat

FORMATS: Final = ("mcp", "openai", "anthropic", "bfcl")
FormatIn = Literal["auto", "mcp", "openai", "anthropic", "bfcl"]
MAX_FILE_BYTES: Final = 256 * 1024 * 1024


def from_toolset(toolset: Toolset, source: str = "toolset") -> list[ToolDef]:
    """A Python toolset as MCP definitions, plus what only the code knows: effect, idempotency, examples."""
    out = []
    for tool in toolset:
        d = mcp_definition(tool)
        out.append(ToolDef(
            name=d["name"], description=d["description"], input_schema=d["inputSchema"], format="mcp",
            output_schema=d.get("outputSchema"), annotations=d.get("annotations"), has_annotations_field=True,
            examples=list(tool.examples) or None, effect=tool.effect, idempotent=tool.idempotent, source=source,
            toolset=source, raw=d,
        ))
    return out


def _one(item: Any, fmt: FormatIn, source: str, toolset: str) -> ToolDef:
    """One tool definition dict in a given (or detected) format."""
    if not isinstance(item, dict):
        return ToolDef(name=None, description=None, input_schema=None, source=source, toolset=toolset, raw=item)
    kind: str = fmt
    if kind == "auto":
        if isinstance(item.get("function"), dict):
            kind = "openai"
        elif "inputSchema" in item or "annotations" in item:
            kind = "mcp"
        elif "input_schema" in item:
            kind = "anthropic"
        elif isinstance(item.get("parameters"), dict) and item["parameters"].get("type") == "dict":
            kind = "bfcl"
        elif "parameters" in item:
            kind = "openai"
        else:
            kind = "mcp"
    common: dict[str, Any] = {"source": source, "toolset": toolset, "raw": item}
    if "inputSchema" not in item and isinstance(item.get("arguments"), list):
        return _docker(item, common)
    if kind == "openai" and isinstance(item.get("function"), dict):
        fn = item["function"]
        return ToolDef(name=fn.get("name"), description=fn.get("description"), input_schema=fn.get("parameters"),
                       format="openai", examples=fn.get("examples"), schema_pointer="/function/parameters",
                       name_pointer="/function/name", description_pointer="/function/description", **common)
    if kind in ("openai", "bfcl"):
        return ToolDef(name=item.get("name"), description=item.get("description"),
                       input_schema=item.get("parameters"), format=cast(ToolFormat, kind),
                       examples=item.get("examples"), schema_pointer="/parameters", **common)
    if kind == "anthropic":
        return ToolDef(name=item.get("name"), description=item.get("description"),
                       input_schema=item.get("input_schema"), format="anthropic",
                       examples=item.get("input_examples") or item.get("examples"), schema_pointer="/input_schema",
                       **common)
    return ToolDef(name=item.get("name"), description=item.get("description"), input_schema=item.get("inputSchema"),
                   format="mcp", output_schema=item.get("outputSchema"), annotations=item.get("annotations"),
                   has_annotations_field="annotations" in item, examples=item.get("examples"), **common)


def _docker(item: dict[str, Any], common: dict[str, Any]) -> ToolDef:
    """The Docker MCP registry's summary form: `arguments: [{name, type, desc}]`, no JSON Schema, no
    annotations. The schema is synthesized so parameter rules can run; structural rules skip it."""
    props: dict[str, Any] = {}
    for arg in item["arguments"]:
        if isinstance(arg, dict) and isinstance(arg.get("name"), str):
            prop: dict[str, Any] = {}
            if "type" in arg:
                prop["type"] = arg["type"]
            if isinstance(arg.get("desc"), str) and arg["desc"]:
                prop["description"] = arg["desc"]
            props[arg["name"]] = prop
    schema = {"type": "object", "properties": props}
    return ToolDef(name=item.get("name"), description=item.get("description"), input_schema=schema,
                   format="docker", schema_pointer="/arguments", schema_synthesized=True, **common)


def _records(data: Any, fmt: FormatIn, source: str) -> Iterator[ToolDef]:
    """Walk one parsed JSON value: a tools/list result, a list of tools, a corpus record, a BFCL question."""
    if isinstance(data, list):
        for entry in data:
            if isinstance(entry, dict) and ("tool" in entry or isinstance(entry.get("function"), list)
                                            or isinstance(entry.get("tools"), list)):
                yield from _records(entry, fmt, source)
            else:
                yield _one(entry, fmt, source, source)
    elif isinstance(data, dict):
        if isinstance(data.get("tools"), list):  # MCP tools/list result (or {"tools": [...]})
            group = str(data.get("server") or source)
            for entry in data["tools"]:
                yield _one(entry, fmt, source, group)
        elif isinstance(data.get("tool"), dict):  # corpus record: {server, tool}
            group = str(data.get("server") or source)
            if data.get("removed_at_head"):  # a historical snapshot: its own toolset, never served with others
                group = f"{group}@{data.get('commit', '')}:{data.get('path', '')}"
            tool = data["tool"]
            if fmt == "auto" and "inputSchema" not in tool and str(data.get("source", "")).startswith("docker/"):
                tool = {**tool, "arguments": tool.get("arguments", [])}  # registry summary without parameters
            yield _one(tool, fmt, source, group)
        elif isinstance(data.get("function"), list):  # BFCL question: its functions are one toolset
            group = str(data.get("id") or source)
            for entry in data["function"]:
                yield _one(entry, "bfcl" if fmt == "auto" else fmt, source, group)
        elif isinstance(data.get("function"), dict) or "name" in data:
            yield _one(data, fmt, source, source)
        else:
            raise DefinitionError(f"{source}: no tool definitions found (expected a tools/list result, a list of "
                                  "tools, or tool records)")
    else:
        raise DefinitionError(f"{source}: expected a JSON object or array, got {type(data).__name__}")


def from_definitions(data: Any, *, source: str = "definitions", format_in: FormatIn = "auto") -> list[ToolDef]:
    """Tool definitions from already parsed JSON (see `_records` for the shapes understood)."""
    if format_in not in ("auto", *FORMATS):
        raise DefinitionError(f"format must be auto or one of {', '.join(FORMATS)}, got {format_in!r}")
    return list(_records(data, format_in, source))


def _parse_file(path: Path) -> list[Any]:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DefinitionError(f"{path}: {size} bytes is more than the {MAX_FILE_BYTES} a lint input may have")
    text = path.read_text(encoding="utf-8-sig")
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as whole_error:
        values = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                values.append(json.loads(line))
            except json.JSONDecodeError:
                if lineno == 1 or not values:
                    raise DefinitionError(f"{path}: not JSON or JSONL ({whole_error})") from None
                # A pretty-printed sidecar (BFCL's format_sensitivity) or a stray line: stop, keep what we have.
                raise DefinitionError(f"{path}:{lineno}: not a JSON value") from None
        return values


def load_file(path: str | Path, *, format_in: FormatIn = "auto", dedupe: bool = True) -> list[ToolDef]:
    """A JSON or JSONL file. BFCL files repeat one function list across questions: identical toolsets are read
    once when `dedupe` is on."""
    p = Path(path)
    if not p.is_file():
        raise DefinitionError(f"{p}: no such file")
    out: list[ToolDef] = []
    seen: set[str] = set()
    for value in _parse_file(p):
        if dedupe and isinstance(value, dict) and isinstance(value.get("function"), list):
            key = json.dumps(value["function"], sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
        out.extend(_records(value, format_in, str(p)))
    return out


def _import(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise DefinitionError(f"cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise DefinitionError(f"{module_name!r} has no attribute {attr!r}") from None
    return obj


def to_tooldefs(obj: Any, *, source: str = "toolset", format_in: FormatIn = "auto") -> list[ToolDef]:
    """Whatever `lint()` accepts: a Toolset, ToolDefs, tool dicts, or a tools/list result."""
    if isinstance(obj, Toolset):
        return from_toolset(obj, source)
    if isinstance(obj, ToolDef):
        return [obj]
    if isinstance(obj, Mapping):
        return from_definitions(dict(obj), source=source, format_in=format_in)
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes):
        items = list(obj)
        if all(isinstance(i, ToolDef) for i in items):
            return items
        return from_definitions(items, source=source, format_in=format_in)
    raise DefinitionError(f"cannot lint a {type(obj).__name__}: give a Toolset, tool definitions or a file")


def load_target(target: str, *, format_in: FormatIn = "auto") -> list[ToolDef]:
    """A file path, or `MODULE:ATTR` naming a Toolset, a list of definitions, or a function returning one."""
    if Path(target).is_file():
        return load_file(target, format_in=format_in)
    if ":" not in target or target.startswith(("/", ".")):
        raise DefinitionError(f"{target!r} is neither a file nor MODULE:ATTR")
    obj = _import(target)
    if callable(obj) and not isinstance(obj, Toolset):
        try:
            obj = obj()
        except TypeError as exc:
            raise DefinitionError(f"{target!r} is a callable that needs arguments ({exc})") from None
    return to_tooldefs(obj, source=target, format_in=format_in)


# --- live MCP servers ------------------------------------------------------------------------------------------

def relisted(tools: Iterable[ToolDef], names: Iterable[str]) -> list[ToolDef]:
    """`tools` (one server's first listing) carrying the tool-name order of a second listing of the same
    server, which TP406 compares with the first. For a library user who lists a server twice by other means."""
    order = tuple(names)
    return [replace(t, relisted_names=order) for t in tools]


def _tool_name(tool: dict[str, Any]) -> str:
    name = tool.get("name")
    return name if isinstance(name, str) else repr(name)


async def _list_tools(session: Any, listings: int = 1) -> list[list[dict[str, Any]]]:
    """`tools/list` (every page) `listings` times over one session: the first for the definitions, a second
    to see whether the order holds."""
    from mcp import types

    await session.initialize()
    out: list[list[dict[str, Any]]] = []
    for _ in range(listings):
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(1000):  # pagination guard
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            tools.extend(t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools)
            cursor = result.next_cursor  # the SDK (>= 2.3) names it next_cursor; nextCursor is a deprecated alias
            if not cursor:
                break
        out.append(tools)
    return out


async def _command_listings(command: str, timeout_s: float, listings: int) -> list[list[dict[str, Any]]]:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = shlex.split(command)
    if not argv:
        raise DefinitionError("--mcp-command is empty")
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    with anyio.fail_after(timeout_s):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await _list_tools(session, listings)


async def _url_listings(url: str, timeout_s: float, listings: int) -> list[list[dict[str, Any]]]:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with anyio.fail_after(timeout_s):
        async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
            return await _list_tools(session, listings)


def _from_listings(listings: list[list[dict[str, Any]]], source: str) -> list[ToolDef]:
    tools = from_definitions({"tools": listings[0]}, source=source, format_in="mcp")
    if len(listings) > 1:
        tools = relisted(tools, map(_tool_name, listings[1]))
    return tools


def load_mcp_command(command: str, *, timeout_s: float = 30.0, relist: bool = False) -> list[ToolDef]:
    """A stdio server's tools. `relist` lists it a second time in the same session and records that order on
    each tool (`ToolDef.relisted_names`) for TP406."""
    import anyio

    try:
        listings = anyio.run(lambda: _command_listings(command, timeout_s, 2 if relist else 1))
    except DefinitionError:
        raise
    except Exception as exc:  # the server failed to start or speak MCP: say so, structured
        raise DefinitionError(f"MCP server {command!r} did not answer tools/list: {_root_cause(exc)}") from None
    return _from_listings(listings, f"mcp:{command}")


def load_mcp_url(url: str, *, timeout_s: float = 30.0, relist: bool = False) -> list[ToolDef]:
    """A streamable HTTP server's tools; `relist` as for `load_mcp_command`."""
    import anyio

    try:
        listings = anyio.run(lambda: _url_listings(url, timeout_s, 2 if relist else 1))
    except Exception as exc:
        raise DefinitionError(f"MCP server {url} did not answer tools/list: {_root_cause(exc)}") from None
    return _from_listings(listings, url)


def _root_cause(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
