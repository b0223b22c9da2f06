"""Reading a lock from whatever `toolproof lock` and `toolproof diff` are given: a lock file, a file of tool
definitions (JSON/JSONL, any format the linter reads), `MODULE:TOOLSET`, or a live MCP server."""

from __future__ import annotations

import json
from pathlib import Path

from ..catalog._toolset import Toolset
from ..contract._errors import DefinitionError
from ..lint._loaders import load_file, load_mcp_command, load_mcp_url, to_tooldefs
from ..lint._model import ToolDef
from ..versions import Lock, ToolEntry, is_lock, loads_lock, lock_tools, lock_toolset
from ._load import load_object
from ._options import missing_file

#: A diff side naming an MCP server started over stdio: `stdio:python server.py`.
STDIO_PREFIX = "stdio:"


def entry_from_tooldef(td: ToolDef) -> ToolEntry:
    if not isinstance(td.name, str) or not td.name:
        raise DefinitionError(f"{td.source}: a tool has no name ({td.name!r})")
    return ToolEntry(name=td.name, description=td.description_text, input_schema=td.input_schema,
                     output_schema=td.output_schema, annotations=td.annotations, effect=td.effect,
                     idempotent=td.idempotent, examples=td.examples)


def lock_from_tooldefs(tools: list[ToolDef]) -> Lock:
    return lock_tools(entry_from_tooldef(t) for t in tools)


def _lock_file(path: Path) -> Lock:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None  # JSONL or another format: the linter's loader reads it, or says why not
    if is_lock(data):
        return loads_lock(data)
    return lock_from_tooldefs(load_file(path))


def load_lock(target: str) -> Lock:
    """One side: a file (lock or definitions), `stdio:COMMAND`, an http(s) MCP URL, or `MODULE:ATTR`.
    Raises `DefinitionError` with the reason when it cannot."""
    if target.startswith(STDIO_PREFIX):
        return lock_from_tooldefs(load_mcp_command(target.removeprefix(STDIO_PREFIX)))
    if target.startswith(("http://", "https://")):
        return lock_from_tooldefs(load_mcp_url(target))
    path = Path(target)
    if path.is_file():
        return _lock_file(path)
    if (missing := missing_file(target)) is not None:
        raise DefinitionError(missing)
    if ":" not in target or target.startswith(("/", ".")):
        raise DefinitionError(f"{target!r} is neither a file, MODULE:TOOLSET, stdio:COMMAND nor an MCP URL")
    obj = load_object(target)
    if callable(obj) and not isinstance(obj, Toolset):
        obj = obj()
    if isinstance(obj, Toolset):
        return lock_toolset(obj)
    return lock_from_tooldefs(to_tooldefs(obj, source=target))
