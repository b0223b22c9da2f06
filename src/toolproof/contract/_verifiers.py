"""Ready-made `verify=` hooks for the two common cases: the write left a row under its idempotency key, or an
HTTP API answers a lookup by it.

Each returns a hook that finds the `CallContext` among the tool's arguments (a tool that verifies this way
declares one, so it sees `ctx.idempotency_key`), looks the key up, and answers with the tool's result when the
effect is there, `NOT_DONE` when it is not; anything else (a lost connection, a 500) is raised: "cannot tell".
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ._context import CallContext
from ._tool import NOT_DONE

__all__ = ["verify_by_http", "verify_by_sql"]


class _Cursor(Protocol):
    description: Sequence[Sequence[Any]] | None

    def fetchone(self) -> Sequence[Any] | None: ...


class _Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any], /) -> _Cursor: ...

    def close(self) -> None: ...


def verify_by_sql(connect: Callable[[], _Connection], query: str, *,
                  result: Callable[[dict[str, Any]], Any] | None = None) -> Callable[..., Any]:
    """A hook that runs `query` with the idempotency key as its one parameter (`?` for sqlite3, `%s` for
    psycopg): a row means the effect happened, and the tool's result is the row's columns by name (or
    `result(row)`); no row is `NOT_DONE`. `connect()` opens a connection for each check (closed after)."""

    def verify(*args: Any, **kwargs: Any) -> Any:
        key = _key(args, kwargs)
        conn = connect()
        try:
            cursor = conn.execute(query, (key,))
            row = cursor.fetchone()
            names = [d[0] for d in cursor.description or ()]
        finally:
            conn.close()
        if row is None:
            return NOT_DONE
        found = dict(zip(names, row, strict=True))
        return result(found) if result is not None else found

    return verify


def verify_by_http(url: str, *, timeout_s: float = 5.0, headers: Mapping[str, str] | None = None,
                   result: Callable[[Any], Any] | None = None) -> Callable[..., Any]:
    """A hook that GETs `url` with `{key}` replaced by the idempotency key (URL-quoted): 200 means the effect
    happened (the JSON body is the tool's result, or `result(body)`), 404 and 410 mean `NOT_DONE`; any other
    answer, or none within `timeout_s`, is raised (cannot tell)."""
    if "{key}" not in url:
        raise ValueError("the URL needs a {key} placeholder for the idempotency key")

    def verify(*args: Any, **kwargs: Any) -> Any:
        target = url.replace("{key}", urllib.parse.quote(_key(args, kwargs), safe=""))
        request = urllib.request.Request(target, headers={"Accept": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                body = json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 410):
                return NOT_DONE
            raise
        return result(body) if result is not None else body

    return verify


def _key(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    for value in (*args, *kwargs.values()):
        if isinstance(value, CallContext):
            if value.idempotency_key is None:
                break
            return value.idempotency_key
    raise LookupError("verify_by_sql / verify_by_http need the call's idempotency key: give the tool a CallContext "
                      "parameter")
