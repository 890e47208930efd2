"""Reading and writing hwadvisor's documents: atomic writes, JSON read with one-line
errors (size limit, missing file, bad JSON), and YAML read as plain data; the version
check is :func:`hwadvisor.models.common.check_schema_version`'s."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from hwadvisor.errors import FactsError, HwadvisorError, OutputError

#: Reading a document refuses files larger than this: a facts or bench report is a few
#: hundred KiB at most, and a huge file is a mistake or an attack.
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: The mode of a new file: what ``open()`` gives, 0666 less the umask.
NEW_FILE_MODE = 0o666


def atomic_write_text(path: str | Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` through a dot-file in the same folder, then rename.

    Readers see the old file or the whole new one, never a half-written one; on any
    failure (read-only folder, full disk, a name too long) the temporary file is
    removed and an :class:`OutputError` names the path.

    - A symbolic link at ``path`` is refused (one line): writing through it would
      replace a file the user did not name, and replacing the link would break what
      it was for. A link to a device or pipe (``/dev/stdout``) is written to, as below.
    - A device or pipe (``/dev/null``, a FIFO) is written to directly, as a shell
      redirect would; renaming over it would replace the device node itself.
    - An existing file keeps its permission bits; a new file gets ``mode`` (default
      0666) less the umask, as ``open()`` would give it. ``mode`` is for formats that
      need more (the Ansible fact is executable by design).
    """
    target = Path(path)
    try:
        info = os.stat(target)  # follows links: what a write would reach
    except OSError:
        info = None  # absent (or unreachable: the write below reports it)
    if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
        # /dev/null, /dev/stdout, a FIFO: renaming over it would replace the device node
        # itself (run as root, `--output /dev/null` destroyed /dev/null). Write to it as a
        # shell redirect would; atomicity means nothing for a stream.
        _write_stream(target, text)
        return
    if _is_link(target):
        raise OutputError(
            "is a symbolic link; hwadvisor does not write through links: give the file "
            "it points to, or remove the link",
            where=str(target),
        )
    if info is not None and stat.S_ISREG(info.st_mode):
        final_mode = stat.S_IMODE(info.st_mode)  # an existing file keeps its mode
    else:
        final_mode = (mode if mode is not None else NEW_FILE_MODE) & ~_current_umask()
    folder = target.parent if str(target.parent) else Path(".")
    fd = -1
    tmp = ""
    try:
        # A short temporary name: the target's own may be up to 255 bytes, the longest
        # a name may be, and a prefix or suffix on it would be refused.
        fd, tmp = tempfile.mkstemp(prefix=".hwadvisor-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fd = -1
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), final_mode)  # mkstemp creates 0600
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        tmp = ""
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc), where=str(target)) from exc
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _is_link(path: Path) -> bool:
    """Whether ``path`` is a symbolic link (False where it cannot be looked at: the
    write reports why)."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _write_stream(target: Path, text: str) -> None:
    """Write ``text`` to a device or pipe at ``target`` (no temporary file, no rename)."""
    try:
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc), where=str(target)) from exc


#: The path that means standard input wherever a file is read.
STDIN = "-"


def read_regular_bytes(p: Path, limit: int, error: type[HwadvisorError], *, what: str) -> bytes:
    """The bytes of the regular file ``p`` (``-``: standard input), at most ``limit``.

    A device (``/dev/zero``, ``/dev/urandom``), FIFO or socket is refused without
    reading it: it is opened non-blocking (a FIFO with no writer would block the open)
    and checked with ``fstat`` on the open descriptor, so the check and the read see
    the same file. A file past ``limit`` is refused from its size, and the read stops
    at ``limit + 1`` bytes, so a file that grows meanwhile is refused too.
    """
    if str(p) == STDIN:
        data = sys.stdin.buffer.read(limit + 1)
    else:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(21, "Is a directory", str(p))
            if not stat.S_ISREG(info.st_mode):
                raise error(
                    f"{what} is not a regular file (a device, pipe or socket); give a file, "
                    "or - for standard input",
                    where=str(p),
                )
            if info.st_size > limit:
                raise error(
                    f"{what} is {info.st_size} bytes, over the {limit}-byte limit", where=str(p)
                )
            with os.fdopen(fd, "rb") as handle:
                fd = -1
                data = handle.read(limit + 1)
        finally:
            if fd >= 0:
                os.close(fd)
    if len(data) > limit:
        raise error(f"{what} is over the {limit}-byte limit", where=str(p))
    return data


def read_limited_text(
    p: Path,
    limit: int,
    error: type[HwadvisorError],
    *,
    what: str,
    missing: str,
    folder: str | None = None,
) -> str:
    """The UTF-8 text of the regular file ``p`` (``-``: standard input), refused (one
    ``error`` line naming ``what``) when over ``limit`` bytes, not a regular file
    (:func:`read_regular_bytes`), unreadable or not UTF-8; ``missing`` is the line for a file that is
    not there and ``folder`` (when given) the line for a folder."""
    try:
        return read_regular_bytes(p, limit, error, what=what).decode("utf-8")
    except FileNotFoundError as exc:
        raise error(missing, where=str(p)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        if folder is not None and isinstance(exc, IsADirectoryError):
            raise error(folder, where=str(p)) from exc
        raise error(f"cannot read {what}: {exc}", where=str(p)) from exc


def load_yaml(text: str) -> Any:
    """The plain data of one YAML document (``None`` when empty).

    libyaml's safe loader where PyYAML was built with it, several times faster than the
    pure-Python one it falls back to; both construct nothing but plain data. Nesting too
    deep is :class:`NestingError` from either: libyaml stops at 1,000 levels with a
    YAMLError, the Python composer recurses until RecursionError.
    """
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # a safe loader: plain data only
    except RecursionError as exc:
        raise NestingError from exc
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(getattr(exc, "problem", "") or ""):
            raise NestingError from exc
        raise


class NestingError(ValueError):
    """A YAML document nested deeper than the loader goes (see :func:`load_yaml`)."""


def read_json_document(path: str | Path, *, what: str = "document") -> dict[str, Any]:
    """Load a JSON object from ``path``; any problem is one :class:`FactsError` line."""
    p = Path(path)
    text = read_limited_text(
        p,
        MAX_DOCUMENT_BYTES,
        FactsError,
        what=what,
        missing=f"{what} file not found",
        folder=f"{what} path is a folder, not a file",
    )
    return parse_json_document(text, where=str(p), what=what)


def parse_json_document(text: str, *, where: str, what: str = "document") -> dict[str, Any]:
    """Parse JSON text into an object, turning every parser failure into one line."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FactsError(
            f"not valid JSON ({what}): {exc.msg} at line {exc.lineno} column {exc.colno}",
            where=where,
        ) from exc
    except RecursionError as exc:
        raise FactsError(f"{what} is nested too deeply", where=where) from exc
    except ValueError as exc:
        # Python's own limit: an integer of more than 4,300 digits is refused by the parser.
        raise FactsError(f"not valid JSON ({what}): {str(exc).split(';')[0]}", where=where) from exc
    if not isinstance(data, dict):
        raise FactsError(f"{what} must be a JSON object, not {type(data).__name__}", where=where)
    return data
