"""The final error of a text: the traceback chain, pytest failure or bare exception line that
surfaced last, and where the log's part that belongs to it begins (pure).

A log of a run can hold many failures; the one that ended the run is what the rules and the
comment are about. An issue-sized text whose traceback is missing or cut off is read for its
shape instead: frames pasted without their header, the exception its title names.
"""
from __future__ import annotations

from bot.core.extract import code_blocks
from bot.core.logtext import clean_line, decode
from bot.core.records import ExceptionChain, RaisedException
from bot.core.scan import ScanResult, count_newlines
from bot.core.tracebacks import (CUT_OFF_TYPE, NumberedLine, parse_bare_exception, parse_loose_frames, parse_pytest_failure,
                                 parse_python_chain, parse_title_exception)

MAX_REGION_BYTES = 4 << 20
CODE_SCOPE_MAX_BYTES = 2 << 20


def final_chain(buf: bytes, scan: ScanResult) -> ExceptionChain | None:
    """The error that surfaced last: a traceback chain, a pytest failure or a bare exception line."""
    candidates = []
    if scan.tracebacks:
        start = _chain_start(scan)
        chain = parse_python_chain(region(buf, start.offset, start.line))
        if chain:
            candidates.append(chain)
    if scan.exception_heads:
        last_head = scan.exception_heads[-1]
        end_of_tb = max((e.line for c in candidates for e in c.exceptions), default=0)
        if last_head.line > end_of_tb and not _inside_message(candidates, last_head.line):
            region_start = _region_start_before(buf, last_head.offset)
            lines = region(buf, region_start, last_head.line - count_newlines(buf, region_start, last_head.offset))
            chain = parse_pytest_failure(lines) or parse_bare_exception(
                [(n, t) for n, t in lines if n <= last_head.line + 200])
            if chain and chain.final.line >= last_head.line:
                candidates.append(chain)
    found = max(candidates, key=lambda c: c.final.line, default=None)
    if len(buf) <= CODE_SCOPE_MAX_BYTES and (found is None or found.final.type_name == CUT_OFF_TYPE):
        return _from_report_shape(buf, found)
    return found


def _from_report_shape(buf: bytes, found: ExceptionChain | None) -> ExceptionChain | None:
    """For an issue-sized text whose traceback is missing or cut off: frames pasted without their
    header, and the exception its title names ("# ... UserError: Could not guard on ...")."""
    lines = region(buf, 0, 1)
    frames_only = found or parse_loose_frames(lines)
    title = parse_title_exception(lines[0]) if lines and lines[0][1].startswith("# ") else None
    if title is None:
        return frames_only
    if frames_only is None:
        return title
    named = title.final
    return ExceptionChain((RaisedException(named.type_name, named.head, named.message, named.line, frames_only.frames),))


def _inside_message(chains: list[ExceptionChain], line: int) -> bool:
    return any(e.line <= line <= e.line + e.message.count("\n") for c in chains for e in c.exceptions)


def _chain_start(scan: ScanResult):
    """The first traceback of the last chain: walk back while a chain separator links them."""
    tracebacks = list(scan.tracebacks)
    separators = [s.line for s in scan.chain_separators]
    index = len(tracebacks) - 1
    while index > 0 and len(tracebacks) - index < 8:
        previous, current = tracebacks[index - 1], tracebacks[index]
        if not any(previous.line < s < current.line for s in separators):
            break
        index -= 1
    return tracebacks[index]


def _region_start_before(buf: bytes, offset: int, span: int = 256 << 10) -> int:
    start = max(0, offset - span)
    return buf.rfind(b"\n", 0, start) + 1 if start else 0


def region(buf: bytes, start: int, first_line: int) -> list[NumberedLine]:
    """Cleaned, numbered lines from byte `start` on, at most MAX_REGION_BYTES of them."""
    text = decode(buf[start:start + MAX_REGION_BYTES])
    return [(first_line + i, clean_line(line)) for i, line in enumerate(text.split("\n"))]


def segment_start(scan: ScanResult, chain: ExceptionChain) -> int:
    """The line after which a log's text belongs to its final error: the last exception line printed
    before that error's traceback (an earlier failure's end); 0 when nothing failed before it. A
    kernel's device-assert lines printed just before the traceback are part of the final error."""
    start = chain.start
    return max((head.line for head in scan.exception_heads if head.line < start), default=0)



def code_lines(buf: bytes) -> list[NumberedLine]:
    """Lines of an issue's Python code blocks (only small, markdown-looking inputs)."""
    if len(buf) > CODE_SCOPE_MAX_BYTES or b"```" not in buf[:CODE_SCOPE_MAX_BYTES]:
        return []
    lines: list[NumberedLine] = []
    for block in code_blocks(decode(buf)):
        if block.is_python:
            lines.extend((block.line + i, t) for i, t in enumerate(block.text.split("\n")))
    return lines
