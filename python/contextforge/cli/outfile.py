"""Where ``export`` (and ``import --id-map``) writes: stdout, or a regular file
replaced atomically.

The target is checked before the store is opened, and again just before the
rename, and refused (a :class:`CliError`, exit 2) when it is

- the database itself, its ``-wal``, ``-shm`` or ``-journal`` file (by path, and by
  inode for hard links and symbolic links), or a file in its search index;
- a symbolic link, a directory, a FIFO, a socket or a device (a rename would
  replace the node itself, not write to it);
- an existing file, unless ``force`` is given; the replacement then keeps the
  file's permission bits (and, where allowed, its owner).

A new file gets the permissions ``open()`` would give it (0666 less the umask).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .errors import CliError
from .paths import describe

__all__ = ["check_target", "export_file"]

_DB_SUFFIXES = ("", "-wal", "-shm", "-journal")


def check_target(file: str, db: str, *, force: bool) -> os.stat_result | None:
    """Refuses a target ``export`` must not replace; returns the stat of the file
    it will overwrite (``None`` for a new file or stdout)."""
    if file == "-":
        _check_stdout(db)
        return None
    if file.endswith(("/", os.sep)):
        raise CliError(f"cannot write {file}: it names a directory")
    if _is_database(file, db):
        raise CliError(
            f"refusing to write {file}: it is the database (--db {db}) or one of its files"
        )
    target = Path(file)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise CliError(f"cannot write {file}: its directory does not exist") from None
        return None
    except OSError as err:
        raise CliError(f"cannot write {file}: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CliError(
            f"refusing to replace {file}: it is {describe(st.st_mode)}, not a regular file"
        )
    if not force:
        raise CliError(f"{file} already exists (--force replaces it)")
    return st


def _db_files(db: str) -> list[str]:
    return [] if db == ":memory:" else [db + suffix for suffix in _DB_SUFFIXES]


def _is_database(file: str, db: str) -> bool:
    """Whether ``file`` is the database or one of its files: the same resolved path
    (the file need not exist yet), the same inode (a hard or symbolic link), or a
    path inside its search index directory."""
    target = os.path.realpath(file)
    if db != ":memory:" and Path(target).is_relative_to(os.path.realpath(db + ".index")):
        return True
    for path in _db_files(db):
        if os.path.realpath(path) == target:
            return True
        try:
            if os.path.samefile(path, file):
                return True
        except OSError:  # either does not exist
            pass
    return False


def _check_stdout(db: str) -> None:
    """``export >> memory.db`` would append JSONL to the database: refused."""
    try:
        out = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (e.g. captured)
        return
    if not stat.S_ISREG(out.st_mode):
        return
    for path in _db_files(db):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            raise CliError(f"refusing to write into the database (--db {db}): stdout is that file")


@contextmanager
def export_file(file: str, db: str, *, force: bool) -> Iterator[IO[str]]:
    """stdout, or a temporary file beside ``file`` renamed over it once everything
    is written. Call :func:`check_target` first; it is checked again before the rename."""
    if file == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    target = Path(file)
    old = check_target(file, db, force=force)
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise CliError(f"cannot write {file}: {err.strerror or err}") from None
    try:
        _match_permissions(fd, old)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            yield out
        check_target(file, db, force=force)  # nothing was swapped in meanwhile
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _match_permissions(fd: int, old: os.stat_result | None) -> None:
    if not hasattr(os, "fchmod"):  # Windows: no permission bits to keep
        return
    if old is None:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        return
    if hasattr(os, "fchown") and (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except OSError:  # not allowed: the file becomes ours, as any rewrite would make it
            pass
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
