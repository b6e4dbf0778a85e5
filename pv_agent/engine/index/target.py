"""Where an index lives: a sidecar file path (the default) or a PostgreSQL DSN.

``open_index(target)`` gives the read side (``IndexReader``) for either; ``build_index`` in
indexer.py takes the same targets. The PostgreSQL store is imported only when a DSN is used,
so the default install needs no database driver.
"""
from __future__ import annotations

import os

DSN_PREFIXES = ("postgresql://", "postgres://")


def is_dsn(target) -> bool:
    return str(target).startswith(DSN_PREFIXES)


def open_index(target):
    """The open, readable index at ``target`` (IndexMissing / IndexCorrupt / … if there is none)."""
    if is_dsn(target):
        from .pg_store import PgIndex

        return PgIndex.open(str(target))
    from .base import IndexCorrupt
    from .sqlite_store import SidecarIndex

    if os.path.exists(target) and not os.path.isfile(target):  # a FIFO would block the open
        raise IndexCorrupt(f"Index {target} ist keine normale Datei (Ordner, Gerät oder FIFO) – kein PV-Agent-Index.")
    return SidecarIndex.open(str(target))


def describe(target) -> str:
    """The target for messages and reports: a DSN without its password."""
    if is_dsn(target):
        from .pg_store import describe_dsn

        return describe_dsn(str(target))
    return str(target)
