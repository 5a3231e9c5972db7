"""Text from a run made safe to show: on a terminal, in a log, in a comment.

A repro's output, its exception messages and the names its probe reports are the script's to
choose. Printed as they are, an escape sequence in them sets the operator's terminal title, clears
the screen or recolours what follows, a lone carriage return overwrites the line before it, and a
bidirectional override makes text read differently from what it is. Here terminal sequences go,
and every other control character is shown as its escape (`\\x1b`), so nothing is hidden either.
"""
from __future__ import annotations

import re

# CSI (colours, cursor moves, clearing) and OSC (titles, hyperlinks) sequences, whole. An OSC counts
# only with its terminator, within one line and 2 KiB: "up to the next BEL or ESC" would let one stray
# `ESC ]` in a run's output swallow everything after it (the rest of a comment included); unterminated,
# its ESC is shown escaped like any other control character.
TERMINAL_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]{0,2048}(?:\x07|\x1b\\)|\x9b[0-?]*[ -/]*[@-~]")
# C0 but tab and newline, DEL, C1, and the bidirectional controls (Trojan Source)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with terminal sequences removed, CRLF as LF, and other control characters escaped."""
    text = TERMINAL_SEQUENCE.sub("", text.replace("\r\n", "\n"))
    return CONTROL.sub(_escaped, text)


def _escaped(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
