"""One call in a process of its own, for the killed-worker scenario: `python -m toolproof.chaos._worker SPEC`.

SPEC is JSON: the target (`MODULE:TOOLSET`), the tool, the arguments and context, how the call is sent, the
store, the ledger file and the fault. The reply goes to stdout as one JSON line. The parent kills the first
worker with SIGKILL once the ledger shows its effect, then starts a second one to resend.
"""

from __future__ import annotations

import json
import os
import pkgutil
import sys
from pathlib import Path
from typing import Any

from ..catalog._toolset import Toolset
from ..contract._context import CallContext
from ._callers import Through, caller
from ._instrument import Ledger, instrument
from ._scenarios import Fault

__all__ = ["load_toolset", "main"]


def load_toolset(target: str) -> Toolset:
    """`MODULE:ATTR` as the CLI loads it: a `Toolset`, or a callable that returns one."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    obj: Any = pkgutil.resolve_name(target)
    if callable(obj) and not isinstance(obj, Toolset):
        obj = obj()
    if not isinstance(obj, Toolset):
        raise TypeError(f"{target!r} is a {type(obj).__name__}, not a toolproof.Toolset")
    return obj


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    tool = load_toolset(spec["target"]).get(spec["tool"])
    fault = Fault(spec["fault"], frozenset({1}), float(spec["seconds"]))
    instrumented = instrument(tool, Ledger(Path(spec["ledger"])), fault)
    through: Through = spec["through"]
    sender = caller(through, instrumented, spec["store"], lease_s=spec.get("lease_s"))
    try:
        reply = sender.send(spec["arguments"], CallContext(**spec["context"]))
    finally:
        sender.close()
    sys.stdout.write(json.dumps(reply.to_dict()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
