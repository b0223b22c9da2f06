"""The agents' toolset as `toolproof ui --toolset tests.inbox._toolset:payments_desk` loads it."""

from __future__ import annotations

import toolproof
from tests.approvals._tools import payments


def payments_desk() -> toolproof.Toolset:
    """The payments desk of the approval tests (what it pays is not kept: the inbox only reads its facts)."""
    return payments([])
