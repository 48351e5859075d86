"""Where the store lives: ``--db``, else ``$CONTEXTFORGE_DB``, else a per-user data file."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

__all__ = [
    "ENV_VAR",
    "KEY_FILE_VAR",
    "KEY_VAR",
    "TOKEN_VAR",
    "default_db",
    "describe",
    "encryption_key",
    "file_sizes",
    "is_url",
    "prepare_db",
    "resolve_db",
]

ENV_VAR = "CONTEXTFORGE_DB"
# A libSQL server's token: from the environment, never an argument (arguments are
# visible to every user of the machine).
TOKEN_VAR = "CONTEXTFORGE_AUTH_TOKEN"
# An encrypted store's key, the same way: the key itself, or a file holding it.
KEY_VAR = "CONTEXTFORGE_ENCRYPTION_KEY"
KEY_FILE_VAR = "CONTEXTFORGE_ENCRYPTION_KEY_FILE"
_URL_SCHEMES = ("http://", "https://", "libsql://")


def encryption_key() -> bytes | str | None:
    """The store's key from ``$CONTEXTFORGE_ENCRYPTION_KEY``, or the bytes of the
    file ``$CONTEXTFORGE_ENCRYPTION_KEY_FILE`` names (one trailing newline
    dropped); ``None`` when neither is set."""
    from .errors import CliError

    key, key_file = os.environ.get(KEY_VAR), os.environ.get(KEY_FILE_VAR)
    if key and key_file:
        raise CliError(f"set {KEY_VAR} or {KEY_FILE_VAR}, not both")
    if key:
        return key
    if not key_file:
        return None
    try:
        data = Path(key_file).read_bytes()
    except OSError as err:
        raise CliError(
            f"cannot read the key file {key_file!r} ({KEY_FILE_VAR}): {err.strerror}"
        ) from None
    data = data[:-1] if data.endswith(b"\n") else data
    if not data:
        raise CliError(f"the key file {key_file!r} ({KEY_FILE_VAR}) is empty")
    return data


def is_url(path: str) -> bool:
    """Whether ``--db`` names a libSQL server rather than a file."""
    return path.lower().startswith(_URL_SCHEMES)


def default_db() -> Path:
    """``$XDG_DATA_HOME/contextforge/memory.db`` (``~/.local/share`` when unset);
    ``%LOCALAPPDATA%\\contextforge\\memory.db`` on Windows."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "contextforge" / "memory.db"


def resolve_db(given: str | None) -> tuple[str, bool]:
    """The database path to open, and whether it is the per-user default.

    ``":memory:"`` passes through (a store that lives for one command).
    """
    chosen = given or os.environ.get(ENV_VAR)
    if not chosen:
        return str(default_db()), True
    if chosen == ":memory:" or is_url(chosen):
        return chosen, False
    return os.path.expanduser(chosen), False


def prepare_db(path: str, is_default: bool) -> str | None:
    """Makes sure the database's directory exists: created for the default location,
    required for one the user named. Returns a problem to report, or ``None``.

    A symbolic link whose target is missing is refused (opening it would create a
    file wherever it points), and so is anything but a regular file (a directory,
    a FIFO that would block the open, a device).
    """
    if path == ":memory:" or is_url(path):
        return None
    problem = _not_a_database_file(path)
    if problem:
        return problem
    parent = Path(path).parent
    if is_default:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            return f"cannot create {parent}: {err.strerror or err}"
        return None
    if not parent.is_dir():
        return f"the directory of --db {path} does not exist"
    return None


def _not_a_database_file(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"cannot use --db {path}: {err.strerror or err}"
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            return f"--db {path} is a symbolic link to {os.readlink(path)}, which does not exist"
        except OSError as err:
            return f"cannot use --db {path}: {err.strerror or err}"
    if not stat.S_ISREG(mode):
        return f"--db {path} is {describe(mode)}, not a database file"
    return None


def describe(mode: int) -> str:
    """What kind of file a ``st_mode`` is, for an error message."""
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ]
    return next((name for test, name in kinds if test(mode)), "a special file")


def file_sizes(path: str, index_dir: str | None = None) -> dict[str, int]:
    """Bytes on disk of the database, its WAL and shared-memory files, and the
    search index directory (files that do not exist are left out)."""
    if path == ":memory:":
        return {}
    db = Path(path)
    sizes: dict[str, int] = {}
    for label, file in (("database", db), ("wal", Path(f"{db}-wal")), ("shm", Path(f"{db}-shm"))):
        if file.is_file():
            sizes[label] = file.stat().st_size
    index = Path(index_dir) if index_dir else Path(f"{db}.index")
    if index.is_dir():
        sizes["index"] = sum(f.stat().st_size for f in index.rglob("*") if f.is_file())
    return sizes
