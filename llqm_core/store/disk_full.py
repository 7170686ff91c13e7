"""Telling a full disk from other store failures, and saying in one sentence what was kept where.

A store's disk can fill (or a file-size limit, ``ulimit -f``, be reached) in the middle of a run.
The program must go on unchanged; the user must learn, once, which store stopped keeping rows,
why, and where the rows it had kept wait (docs/reliability.md, "Disks that fill").
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

#: The system's words for a write that found no room: no space, a file-size limit, a quota.
_FULL_ERRNOS = frozenset(
    code for code in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None)) if code is not None
)
#: Free bytes below which a write error on the store's file system is taken for a full disk.
LOW_SPACE = 1 << 20


def is_full_os_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the system refusing a write for want of room."""
    return isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS


def no_room_at(path: Path) -> str | None:
    """Why files beside ``path`` may take no more bytes, where one can tell: a file-size limit
    the store's file has reached, or a file system with less than ``LOW_SPACE`` free."""
    if resource is not None:
        limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
        if limit != resource.RLIM_INFINITY:
            return f"the file-size limit (ulimit -f) of {limit} bytes"
    try:
        if shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free < LOW_SPACE:
            return "no space left on its file system"
    except OSError:
        return None
    return None


def full_sentence(store_name: str, why: str, journal: Path | None, journal_works: bool) -> str:
    """The one sentence a full disk gets: the store, why, and where its rows are."""
    if journal is not None and journal_works:
        kept = (
            f"tasks that end from now on are appended to its journal {journal} while it has room "
            "(already reserved), and the next llqm that opens the store with room commits them"
        )
    elif journal is not None:
        kept = (
            f"the tasks that ended before are in the store or in its journal {journal}, which the "
            "next llqm that opens the store with room commits; later tasks are not kept"
        )
    else:
        kept = "the tasks that ended before are in the store; later tasks are not kept"
    return (
        f"profiles are no longer being kept in {store_name}: its disk is full ({why}); {kept}. "
        "The program runs on unchanged."
    )
