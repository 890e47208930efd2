"""Human output on a terminal or pipe whose encoding cannot carry every character.

hwadvisor's tables use a few characters outside ASCII ("·", "×", "→", "≤", "…"). Where
stdout's encoding cannot carry them (``PYTHONIOENCODING=ascii``, a legacy locale),
writing them would raise ``UnicodeEncodeError`` at the first table. :func:`install`
gives stdout and stderr an error handler that writes an ASCII stand-in instead ("·" is
"-", "×" is "x", "→" is "->"), else the character's decomposition without accents,
else "?". JSON is escaped instead (``\\u00b7``), which is the same JSON.
"""

from __future__ import annotations

import codecs
import contextlib
import sys
import unicodedata
from typing import Any

#: The name of the codec error handler :func:`install` registers.
HANDLER = "hwadvisor-ascii"
#: ASCII stand-ins for the characters hwadvisor's own text uses.
STAND_INS = {
    "·": "-",
    "×": "x",
    "→": "->",
    "←": "<-",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "±": "+/-",
    "…": "...",
    "–": "-",
    "—": "-",
    "−": "-",
    "’": "'",
    "‘": "'",
    "“": '"',
    "”": '"',
    "°": " deg",
    "µ": "u",
    "²": "^2",
    "³": "^3",
    "✓": "ok",
    "✗": "x",
    "█": "#",
    "▏": "|",
    "•": "*",
}


def stand_in(char: str) -> str:
    """An ASCII stand-in for one character."""
    if char in STAND_INS:
        return STAND_INS[char]
    plain = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
    return plain or "?"


def _handler(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    return "".join(stand_in(c) for c in text), exc.end


def can_carry(stream: Any, text: str) -> bool:
    """Whether ``stream``'s encoding can carry ``text``."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def install() -> None:
    """Give stdout and stderr the ASCII stand-ins where their encoding cannot carry
    hwadvisor's characters (a no-op on UTF-8 streams)."""
    codecs.register_error(HANDLER, _handler)
    for stream in (sys.stdout, sys.stderr):
        if stream is None or can_carry(stream, "·×→"):
            continue
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors=HANDLER)  # type: ignore[union-attr]
