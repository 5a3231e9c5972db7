"""Turning raw bytes from issues and CI logs into clean lines (pure).

CI logs arrive as bytes of any encoding, with CRLF line ends, ANSI colours and a GitHub Actions
timestamp in front of every line. Only the lines a decision looks at are cleaned: the scan runs
over raw bytes so a 200 MB log is never copied into a str.
"""
from __future__ import annotations

import re

# ESC [ ... final-byte (colours, cursor moves) and ESC ] ... BEL/ST (hyperlinks, titles).
ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# What launchers and loggers put in front of each line of a traceback, so that a traceback pasted
# from a multi-GPU job or a logging framework reads like a plain one. Any run of these, in order:
#   2026-11-20T10:11:12.1234567Z   GitHub Actions (and other ISO) timestamps
#   [rank0]: / [default3]:          torchrun / torch.distributed.elastic per-rank prefixes
#   (RayWorkerWrapper pid=123)     Ray actor prefixes
#   W0923 22:43:08.375000 1832 torch/_dynamo/exc.py:525] [5/0_2]   glog lines of TORCH_LOGS
#   ERROR 05-01 12:00:00 [core.py:12]   vLLM's logger
LINE_PREFIX = (r"(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z? ?"
               r"|\[(?:rank|default)\d+\]: ?"
               r"|\(\w+ pid=\d+(?:, ip=[\d.]+)?\) "
               r"|[IWEFVD]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] (?:\[[^\]\n]*\] )*"
               r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?: \[[^\]\n]+\])? )")
LINE_PREFIX_RE = re.compile(f"^(?:{LINE_PREFIX})+")
# Other bytes that must not reach a terminal or a comment: C0 controls except tab.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def decode(data: bytes | bytearray | memoryview) -> str:
    """Decode as UTF-8, never failing: undecodable bytes become U+FFFD, CRLF becomes LF."""
    text = bytes(data).decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_line(line: str) -> str:
    """One log line as a person would read it: no timestamp or launcher prefix, colours or control bytes."""
    line = ANSI_RE.sub("", line.rstrip("\r\n"))
    line = LINE_PREFIX_RE.sub("", line)
    return CONTROL_RE.sub("", line)


def clean_text(text: str) -> str:
    """`clean_line` over every line of a (small) text."""
    return "\n".join(clean_line(line) for line in decode_if_bytes(text).split("\n"))


def decode_if_bytes(text: str | bytes) -> str:
    return decode(text) if isinstance(text, (bytes, bytearray, memoryview)) else text.replace("\r\n", "\n")
