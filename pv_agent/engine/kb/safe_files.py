"""Files of the knowledge-base folder, read and written only inside it.

A symlink committed into the knowledge-base repository must neither turn a routine export into
an overwrite of any file the server user can write, nor make an import read files from outside
the folder. So every path is taken apart component by component below the resolved folder and
refused when one is a symlink, leaves the folder or is not a regular file; and every write goes
to a temporary file in the target's own folder that then replaces the target (``os.replace``):
no truncated file after a crash or a full disk, no write through a hard link.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

# Why a path was refused (the Odoo layer words each kind in the user's language).
SYMLINK, OUTSIDE, NOT_A_FILE = "symlink", "outside", "not_a_file"
_REASONS = {
    SYMLINK: "symbolischer Link – wird weder gelesen noch geschrieben",
    OUTSIDE: "liegt außerhalb des Ordners der Wissensbasis",
    NOT_A_FILE: "keine gewöhnliche Datei",
}


class UnsafePath(OSError):
    """A path inside the knowledge base that may not be read or written."""

    def __init__(self, rel: str, kind: str):
        super().__init__(f"{rel}: {_REASONS[kind]}")
        self.rel, self.kind, self.reason = rel, kind, _REASONS[kind]


def inside(folder: str | Path, rel: str) -> Path:
    """``folder/rel`` after checking each component: no symlink, no way out, no odd file.

    With the folder resolved, no ``..`` and no symlink on the way, the path cannot leave it."""
    root = os.path.realpath(folder)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{folder}: Ordner nicht gefunden")
    parts = Path(rel).parts
    if not parts or os.path.isabs(rel) or ".." in parts:
        raise UnsafePath(rel, OUTSIDE)
    current, mode = root, None
    for part in parts:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return Path(root, *parts)  # the rest does not exist yet: nothing there to follow
        if stat.S_ISLNK(mode):
            raise UnsafePath(rel, SYMLINK)
    if not stat.S_ISREG(mode):
        raise UnsafePath(rel, NOT_A_FILE)
    return Path(root, *parts)


def read_bytes(folder: str | Path, rel: str, max_bytes: int | None = None) -> bytes:
    """The bytes of ``folder/rel`` (at most ``max_bytes + 1``); raises UnsafePath or OSError.

    Opened without following a symlink swapped in after the check, and without blocking on a FIFO."""
    path = inside(folder, rel)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(rel, NOT_A_FILE)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    finally:
        os.close(fd)


def read_text(folder: str | Path, rel: str) -> str:
    """The text of ``folder/rel`` (UTF-8, BOM and CRLF removed)."""
    return read_bytes(folder, rel).decode("utf-8-sig").replace("\r\n", "\n")


def check_writable(folder: str | Path, rel: str) -> Path:
    """Where ``rel`` would be written; raises UnsafePath before anything is written."""
    return inside(folder, rel)


def write_text(folder: str | Path, rel: str, text: str) -> Path:
    """Write ``text`` to ``folder/rel`` atomically: a temporary file beside it, then os.replace."""
    target = inside(folder, rel)
    root = Path(folder).resolve()
    for parent in reversed(target.parents):  # create missing folders one by one, inside only
        if parent == root or root not in parent.parents:
            continue
        try:
            os.mkdir(parent)
        except FileExistsError:
            if os.path.islink(parent) or not parent.is_dir():
                raise UnsafePath(rel, SYMLINK if os.path.islink(parent) else NOT_A_FILE) from None
    mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target
