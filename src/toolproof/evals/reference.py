"""BFCL's own AST checker as a reference to agree with (test and benchmark only; needs `bfcl-eval`).

`bfcl_eval.constants.model_config` imports every provider SDK; a stub module whose mapping answers any
model name with `underscore_to_dot = False` stands in for it, so the checker runs on pydantic alone.
"""

from __future__ import annotations

import sys
import types
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from .bfcl import BfclEntry, language_of
from .scoring import ToolCall

ReferenceChecker = Callable[[BfclEntry, Sequence[ToolCall]], bool]


def load_reference_checker() -> ReferenceChecker:
    """Import `bfcl_eval.eval_checker.ast_eval.ast_checker` behind the model-config stub."""
    if "bfcl_eval.constants.model_config" not in sys.modules:
        stub = types.ModuleType("bfcl_eval.constants.model_config")
        stub.MODEL_CONFIG_MAPPING = defaultdict(  # type: ignore[attr-defined]
            lambda: types.SimpleNamespace(underscore_to_dot=False)
        )
        sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from bfcl_eval.eval_checker.ast_eval.ast_checker import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        ast_checker,
    )

    languages = {"python": Language.PYTHON, "java": Language.JAVA, "javascript": Language.JAVASCRIPT}

    def check(entry: BfclEntry, calls: Sequence[ToolCall]) -> bool:
        output = [{c.name: dict(c.arguments or {})} for c in calls]
        try:
            result: dict[str, Any] = ast_checker(
                [dict(f) for f in entry.functions], output, [dict(a) for a in entry.ground_truth or ()],
                languages[language_of(entry.category)], entry.category, "toolproof-reference",
            )
        except Exception:
            return False
        return bool(result["valid"])

    return check
