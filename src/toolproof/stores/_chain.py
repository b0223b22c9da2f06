"""The hash chain over audit and stop records: each row carries the digest of its content and of the row
before it, so a row edited, deleted or inserted after the fact breaks the chain at that row.

`link(prev, values)` is SHA-256 of the previous row's digest and the row's stored values (as JSON); the first
row links to `""`. The audit chain follows the rows' ids; the stop chain its own sequence (stop ids are not
ordered), and it covers what a stop says when it is written, not its resolution (resolving a stop is an
update by design). Rows written before a store had the chain carry none and are counted, not judged. The
chain shows tampering by someone who cannot recompute every digest after the row they change; the head
(the last digest) written elsewhere (`toolproof audit verify` prints it; `--anchor` checks an earlier one is
still in the chain) also catches a rewritten or cut tail.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["ChainReport", "link", "verify_rows"]

ChainKind = Literal["audit", "stops"]
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def link(prev: str, values: Sequence[Any]) -> str:
    """The digest of one row: SHA-256 of the previous row's digest and this row's stored values."""
    text = f"{prev}\n{_ENCODE(list(values))}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What `verify` found on one chain: how many rows, how many from before the chain, the first broken link
    (`broken_at`: the row's id, `why`), the head (the last row's id and digest) and, when an anchor was
    given, those of them that are digests of this chain up to where it holds."""

    kind: ChainKind
    rows: int
    unchained: int
    broken_at: str | None
    why: str | None
    head_id: str | None
    head: str | None
    anchors_found: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.broken_at is None


def verify_rows(kind: ChainKind, rows: Iterable[tuple[str, str | None, str | None, Sequence[Any]]],
                anchors: Iterable[str] = ()) -> ChainReport:
    """Walk `rows` (id, stored previous digest, stored digest, covered values) in chain order and name the first
    link that does not hold: a row whose content no longer gives its digest (edited), or whose previous digest
    is not the row before it (a row deleted or inserted there)."""
    prev, count, unchained, head_id = "", 0, 0, None
    wanted, found = frozenset(anchors), list[str]()
    started = False
    for row_id, row_prev, digest, values in rows:
        count += 1
        why = None
        if digest is None:
            if not started:
                unchained += 1
                continue
            why = "the row carries no digest: inserted past the chain, or its digest removed"
        elif row_prev != prev:
            why = ("the row before it is not the one it was chained to: a row was deleted or inserted before it"
                   if started or row_prev else "the first chained row does not start the chain")
        elif digest != link(prev, values):
            why = "the row's content does not give its digest: it was edited after it was written"
        if why is not None:
            return ChainReport(kind, count, unchained, row_id, why, head_id, prev or None, tuple(found))
        started = True
        prev, head_id = str(digest), row_id
        if digest in wanted:
            found.append(str(digest))
    return ChainReport(kind, count, unchained, None, None, head_id, prev or None, tuple(found))
