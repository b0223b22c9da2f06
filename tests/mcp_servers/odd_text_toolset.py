"""A toolset whose tool returns text UTF-8 cannot carry: a file name decoded with surrogateescape."""

from __future__ import annotations

import os

import toolproof


@toolproof.tool(effect="read")
def list_files(folder: str) -> list[str]:
    """List the files of a folder (here: one file whose name is not valid UTF-8).

    Use only in tests. Returns the file names.

    Args:
        folder: Any folder name.
    """
    return [os.fsdecode(b"report-\xff.txt"), folder]


toolset = toolproof.Toolset([list_files])
