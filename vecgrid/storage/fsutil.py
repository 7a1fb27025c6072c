"""File-system durability helpers shared by the WAL and the segment writer."""

from __future__ import annotations

import os


def fsync_dir(path: str) -> None:
    """fsync a directory so a rename or a new file in it survives a crash."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
