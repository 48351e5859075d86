"""Text made safe for a terminal: control and bidi characters shown as escapes.

Stored text is untrusted. Printed raw, an ESC starts a terminal sequence (clear
the screen, set the window title with OSC 0, hide a link with OSC 8), a CR
overwrites the line, and a bidi override (U+202E) reorders what follows it, such
as the rest of a table row. Human-readable output therefore shows these
characters as visible escapes (``\\x1b``, ``\\r``, ``\\u202e``); ``--json`` and
``export`` write text exactly as stored.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

# The bidi embeddings and overrides, isolates, the left-to-right, right-to-left
# and Arabic letter marks, and the line and paragraph separators (some terminals
# break lines on them).
_BIDI = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
# C0 controls, DEL and C1 controls.
_CONTROL = "\x00-\x1f\x7f-\x9f"
_ONE_LINE = re.compile(f"[{_CONTROL}{_BIDI}]")
_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")  # keeps \t and \n
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, block: bool = False) -> str:
    """``text`` with every control and bidi character as a visible escape.

    With ``block``, newlines and tabs are kept (content shown as a block of
    text); otherwise they are escaped too, so that the text stays on one line.
    """
    return (_BLOCK if block else _ONE_LINE).sub(_escape, text)
