"""A toolset whose tool prints to stdout: served over stdio, the print must not corrupt the MCP wire."""

from __future__ import annotations

import os
import sys

import toolproof


@toolproof.tool(effect="read")
def shout(text: str) -> str:
    """Print the text to stdout (a careless tool), then return it in capitals.

    Use only in tests. Returns the text in upper case.

    Args:
        text: Any text.
    """
    print(f"stray print: {text}")
    sys.stdout.flush()
    os.write(1, b"stray raw write\n")
    return text.upper()


toolset = toolproof.Toolset([shout])
