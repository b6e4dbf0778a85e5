"""SQLite connections that can load sqlite-vec.

sqlite-vec is a loadable extension, so the Python's ``sqlite3`` must be built with
extension loading. Many are not (pyenv's default build, some distributions' Pythons).
Then the maintained ``pysqlite3-binary`` wheel (a statically linked, current SQLite with
extension loading) is used instead; without it the error says what to install.
"""
from __future__ import annotations

import os
from types import ModuleType


class SqliteExtensionsUnsupported(RuntimeError):
    pass


_HELP = (
    "Diese Python-Installation kann keine SQLite-Erweiterungen laden (sqlite3 ohne "
    "enable_load_extension), sqlite-vec braucht das. Abhilfe: `pip install pysqlite3-binary` "
    "(Linux x86_64) oder ein Python, dessen sqlite3 Erweiterungen laden kann "
    "(z. B. Debians /usr/bin/python3.11)."
)


def sqlite_module() -> ModuleType:
    """The DB-API module to use: stdlib ``sqlite3`` if it can load extensions, else pysqlite3.

    ``PV_AGENT_SQLITE=stdlib|pysqlite3`` forces one (used by the tests to cover both paths).
    """
    choice = os.environ.get("PV_AGENT_SQLITE", "")
    if choice != "pysqlite3":
        import sqlite3

        if hasattr(sqlite3.Connection, "enable_load_extension"):
            return sqlite3
        if choice == "stdlib":
            raise SqliteExtensionsUnsupported(_HELP)
    try:
        import pysqlite3.dbapi2 as pysqlite3  # type: ignore[import-not-found]
    except ImportError:
        raise SqliteExtensionsUnsupported(_HELP) from None
    return pysqlite3


def connect(path: str, *, readonly: bool = False):
    """Open ``path`` with sqlite-vec loaded and the pragmas the index relies on."""
    import sqlite_vec

    sqlite = sqlite_module()
    if readonly:
        conn = sqlite.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, timeout=10)
    else:
        conn = sqlite.connect(path, check_same_thread=False, timeout=10)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute("PRAGMA busy_timeout = 10000")
    # The writer maps the file (vec0's scans are ~2x faster memory-mapped, design §9). Readers
    # (every Odoo worker) do not: search runs on the saved arrays, and a reader's row look-ups
    # through a 256 MB map of a 2 GB sidecar left every page it touched in the worker's resident
    # set (~1/3 of its RSS at 10x); read() serves the same pages from the shared page cache.
    conn.execute(f"PRAGMA mmap_size = {0 if readonly else MMAP_BYTES}")  # an int constant: PRAGMA takes no parameters
    return conn


MMAP_BYTES = 268435456

