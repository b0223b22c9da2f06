"""Loading `MODULE:ATTR` targets (toolsets, failure libraries) named on the command line."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from .._extras import missing_extra
from ..catalog._toolset import Toolset
from ._options import fail


def load_object(target: str) -> Any:
    """Import `package.module:attribute` (the current directory is importable, as with uvicorn)."""
    if ":" not in target:
        raise fail(f"expected MODULE:ATTRIBUTE, got {target!r}")
    module_name, _, attr = target.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        found = missing_extra(exc, f"{module_name!r}")
        raise fail(str(found) if found else f"cannot import {module_name!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise fail(f"{module_name!r} has no attribute {attr!r}") from None
    return obj


def load_toolset(target: str) -> Toolset:
    obj = load_object(target)
    if callable(obj) and not isinstance(obj, Toolset):
        obj = obj()
    if not isinstance(obj, Toolset):
        raise fail(f"{target!r} is a {type(obj).__name__}, not a toolproof.Toolset")
    return obj
