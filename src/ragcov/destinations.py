"""Where a write lands, checked before any work is done.

A symlink the user made at a path they named is written through (its target replaced,
the link kept); one made by another user is refused, as Linux's ``protected_symlinks``
refuses it in a shared folder; and no symlink is followed inside ragcov's cache, where
ragcov names every file and makes no link. A device or FIFO is written to and never
replaced, and a file that cannot be changed (permission bits, ``chattr +i``/``+a``) is
found up front rather than after an hour of retrieval.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ragcov.errors import RagcovError


def written_path(target: str | os.PathLike[str]) -> Path:
    """The file a write to ``target`` lands in: symlinks followed, the link itself kept."""
    return Path(os.path.realpath(target))


class NotOurs(RagcovError):
    """A write refused because the path is not ragcov's to replace: a planted symlink, or
    a name in the cache that is not a regular file. Caches say it in a warning and go on
    without saving; an output the user named ends the command with it."""


def refuse_foreign_link(target: str | os.PathLike[str]) -> None:
    """A symlink at a path the user named is theirs to point anywhere, unless another user
    made it: one planted in a shared folder (``/tmp``, a CI workspace) must not turn a
    report into a write over the victim's ``~/.bashrc``."""
    try:
        st = os.lstat(target)
    except (OSError, ValueError):
        return
    # root's links are the system's (``/dev/stdout`` -> ``/proc/self/fd/1``): no one else
    # can make one, so they are not planted.
    if stat.S_ISLNK(st.st_mode) and st.st_uid not in (os.geteuid(), 0):
        raise NotOurs(f"{target}: is a symbolic link made by another user (uid {st.st_uid}); "
                          "refusing to write through it")


def refuse_links_below(target: str | os.PathLike[str], root: str | os.PathLike[str]) -> None:
    """``target`` lies in ``root`` (ragcov's cache), where ragcov makes every name and no
    link: a symlink at the file or at any folder between it and ``root`` was planted, and
    writing through it would replace whatever it points at. ``root`` itself may be a link
    (a cache moved to another disk is the user's choice); a name that is not a regular
    file is not ragcov's either."""
    root, path = Path(root), Path(target)
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        if os.path.islink(here):
            raise NotOurs(f"{here}: is a symbolic link in ragcov's cache, where ragcov makes "
                              "none; refusing to write through it (remove it)")
    if os.path.lexists(path) and not path.is_file():
        raise NotOurs(f"{path}: is not a regular file, so not ragcov's; refusing to replace it "
                          "(remove it)")


def is_special_file(path: str | os.PathLike[str]) -> bool:
    """An existing path (links followed) that is neither a regular file nor a directory."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def replaceable_target(target: str | os.PathLike[str]) -> Path:
    """``target`` resolved for an atomic replacement, or an error naming the path given."""
    real = written_path(target)
    if real.is_dir():
        raise RagcovError(f"{target}: is a directory; give a file path")
    if is_special_file(target):
        raise RagcovError(f"{target}: is not a regular file (a device, FIFO or socket); "
                          "refusing to replace it")
    return real


def unwritable_reason(path: str | os.PathLike[str]) -> str | None:
    """Why an existing file cannot be changed in place or replaced, or None when it can.

    Permission bits are asked of the kernel (``os.access``: root passes them), and the
    immutable and append-only attributes (``chattr +i``/``+a``), which stop root too,
    are read directly: either way the refusal comes before any work, not after it.
    """
    if not os.path.lexists(path):
        return None
    flags = _inode_flags(path)
    if flags & _FS_IMMUTABLE_FL:
        return "is immutable (chattr +i)"
    if flags & _FS_APPEND_FL:
        return "is append-only (chattr +a)"
    # os.access also says no for a file that another process removed a moment ago
    # (an erase racing this run): that file is gone, not read-only.
    if not os.access(path, os.W_OK) and os.path.lexists(path):
        return "is read-only"
    return None


_FS_IOC_GETFLAGS = 0x80086601  # Linux, 64-bit: _IOR('f', 1, long)
_FS_IMMUTABLE_FL = 0x10
_FS_APPEND_FL = 0x20


def _inode_flags(path: str | os.PathLike[str]) -> int:
    """The file's inode flags on Linux; 0 where they cannot be read (other systems, filesystems)."""
    try:
        import array
        import fcntl
    except ImportError:
        return 0
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return 0
    try:
        buf = array.array("l", [0])
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, buf, True)
        return int(buf[0])
    except OSError:
        return 0
    finally:
        os.close(fd)
