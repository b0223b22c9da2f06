"""Prerequisites a definition implies: a tool taking `token` needs the tool that gets a token.

Tasks often need a step the request never names (API-Bank: `GetUserToken` before any call taking `token`,
needed in 26 of 49 level-2 tasks and mentioned in none). When a tool has a parameter whose words all appear in
another tool's name after a producing verb (`get`, `create`, `login`, ...), that other tool is recorded as
required and search pulls it in right after the hit. Declared `requires` always win; inference is a fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from ._entries import ToolEntry
from ._text import Tokenizer

PRODUCERS: Final = frozenset({"get", "create", "fetch", "generat", "generate", "login", "obtain", "request", "issu",
                              "issue", "new", "refresh", "auth", "authent", "authenticate"})
#: Parameter words too generic to imply a producer (every API has an id, a query, a name).
GENERIC: Final = frozenset(
    {"id", "name", "queri", "query", "type", "text", "data", "valu", "value", "key", "url", "path", "file", "user",
     "limit", "page", "list", "item", "time", "date", "format", "content", "field", "label"}
)


def infer_requires(entries: Sequence[ToolEntry], *, min_sharers: int = 3) -> list[ToolEntry]:
    """Entries with `requires` filled in where it was empty, from handles that several tools of a group share.

    A parameter taken by at least `min_sharers` tools of one group is a handle (a session token, a project);
    a tool of that group named `<producing verb> [qualifier] <handle>` that does not itself take the handle
    produces it. Tools without a group are one group (a flat list such as API-Bank's).
    """
    tokenize = Tokenizer()
    groups: dict[str | None, list[ToolEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    implied: dict[str, list[str]] = {}
    for members in groups.values():
        takers: dict[str, list[ToolEntry]] = {}
        for entry in members:
            for pname, _ in entry.parameters:
                takers.setdefault(pname, []).append(entry)
        for pname, users in takers.items():
            words = tokenize(pname)
            if len(users) < min_sharers or not words or any(w in GENERIC for w in words):
                continue
            producers = []
            for other in members:
                name = tokenize(other.name)
                if len(name) < 2 or name[0] not in PRODUCERS or any(p == pname for p, _ in other.parameters):
                    continue
                rest = name[1:]
                if rest[-len(words):] == words and len(rest) - len(words) <= 1:
                    producers.append(other.id)
            if not producers or len(producers) > 2:
                continue
            for user in users:
                if user.id not in producers:
                    implied.setdefault(user.id, []).extend(p for p in producers if p not in implied.get(user.id, []))
    return [replace(e, requires=tuple(implied[e.id])) if not e.requires and e.id in implied else e for e in entries]
