"""A toolset for `toolproof journal verify` in a subprocess: the verify tests' shop, at the path $VERIFY_SHOP."""

from __future__ import annotations

import os
from pathlib import Path

from tests.pipeline.test_verify import Shop, toolset

tools = toolset(Shop(Path(os.environ["VERIFY_SHOP"])))
