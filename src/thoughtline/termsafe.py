"""Text that is safe to write to a terminal.

Owns the one rule for printing text thoughtline does not control — model output, provider error
bodies, titles and names read from imported files, the request log: every character a terminal
would act on instead of showing is replaced by a visible escape (``ESC`` becomes ``\\x1b``), so a
reply cannot retitle the terminal, move the cursor, recolour the screen or hide text. Newlines
and tabs are kept. Only what is *shown* changes: stored and exported bytes stay exact.
"""

from __future__ import annotations

import re

#: C0 controls except tab and newline, DEL, C1 controls (8-bit CSI/OSC/...), the bidirectional
#: overrides and isolates that reorder what is shown ("Trojan Source", CVE-2021-42574), and lone
#: surrogates (undecodable bytes carried by ``surrogateescape``), which no terminal can print.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe(text: object) -> str:
    """``text`` (any value, shown with ``str``) with terminal-active characters made visible."""
    shown = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_visible, shown)


def safe_line(text: object) -> str:
    """Like ``safe``, but newlines too are escaped: for one-line fields (titles, names)."""
    return safe(text).replace("\n", "\\n").replace("\t", " ")
