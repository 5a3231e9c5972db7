"""One pass over a whole input (issue or 200 MB CI log) that finds the lines worth deciding on.

Python's `re` runs a many-way alternation ~30x slower than grep, so the pass uses RE2 (a DFA):
one union of every `line`-scope rule plus the structural anchors (traceback headers, chain
separators, exception heads, pytest FAILED lines). Each hit costs a few C-level calls; the rest of
the log is never looked at from Python. Memory is the input itself (an mmap for files) plus
bounded hit tables, so it stays under 2x the input size.
"""
from __future__ import annotations

import mmap
from collections import deque
from typing import Callable
from dataclasses import dataclass, field, replace

import re2

from bot.core.graph_breaks import GB_ID_RE
from bot.core.logtext import LINE_PREFIX, clean_line
from bot.core.records import Evidence
from bot.core.ruleset import Pattern, Ruleset

_TS = f"(?:{LINE_PREFIX}|\\x1b\\[[0-9;]*m)*"
# CPython's header, and IPython's ("KeyError      Traceback (most recent call last)", no colon).
TRACEBACK = r"Traceback \(most recent call last\)(?::|[ \t\r]*$)"
CHAIN_SEPARATOR = (r"The above exception was the direct cause of the following exception:"
                   r"|During handling of the above exception, another exception occurred:")
# A line that starts like "pkg.mod.SomethingError: message" (optionally pytest's "E   " prefix):
# a name with an exception-like suffix, or any CamelCase class behind a dotted module path
# (torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: ...).
EXCEPTION_HEAD = (_TS + r"(?:E {1,8})?(?:\x1b\[[0-9;]*m)*(?:[A-Za-z_][\w.]*"
                  r"(?:Error|Exception|Unsupported|Exit|Interrupt|Failure|Failed|LimitHit|Violation|Issue|Missing)"
                  r"|[a-z_]\w*(?:\.[a-z_]\w*)+\.[A-Z]\w*)"
                  r"(?:\x1b\[[0-9;]*m)*(?::|[ \t\r]*$)")
FAILED_TEST = _TS + r"(?:FAILED|ERROR) +\S+::\S+"
# A graph break's registry id (GB_ID_RE's), on any line: the first one logged is the fallback id of
# a logged break, so the scan of a log's head looks for it until it has one.
GB_ID = r"(?i:\bGB\d{4}\b)"
PT2_MENTION = (r"torch\.compile|torch\._dynamo|torch\._inductor|torch\.export|torch\._export|torch\._functorch"
               r"|TORCHDYNAMO|TORCHINDUCTOR|TORCH_COMPILE|TORCH_LOGS|TORCH_TRACE|torchinductor|[Ii]nductor|[Dd]ynamo"
               r"|[Aa][Oo][Tt][_ ]?[Aa]utograd|aoti_|AOTI|fullgraph|triton_(?:poi|red|per|tem)_|torch\._higher_order_ops"
               r"|\b[Cc]ompiled\b|_compiled\b|\bcompiled_")

_OPTIONS = re2.Options()
_OPTIONS.max_mem = 256 << 20  # room for the union's DFA so it never falls back to the slow NFA
_OPTIONS.never_capture = True

MAX_TRACEBACKS = 256
MAX_EXCEPTION_HEADS = 256
MAX_FAILING_TESTS = 200
MAX_LINE_CHARS = 2000
FULL_SCAN_BYTES = 4 << 20  # inputs up to this size are scanned whole; bigger ones from their end
TAIL_WINDOW_BYTES = 1 << 20
RESIDENT_BYTES = 8 << 20  # how much of a mapped log behind the scan stays resident (for the line just hit)
CHAIN_MARGIN_BYTES = 64 << 10  # the tail window reaches this far before the final chain's first traceback


@dataclass
class PatternHits:
    """Where one `line` rule matched: first and last place, and how often."""

    first: Evidence
    last: Evidence
    count: int = 1


@dataclass(frozen=True)
class Mark:
    """A structural line: its byte offset (for slicing the input later) and 1-based line number."""

    offset: int
    line: int
    text: str = ""


@dataclass
class ScanResult:
    size: int
    total_lines: int
    pattern_hits: dict[str, PatternHits] = field(default_factory=dict)
    tracebacks: deque = field(default_factory=lambda: deque(maxlen=MAX_TRACEBACKS))
    chain_separators: deque = field(default_factory=lambda: deque(maxlen=MAX_TRACEBACKS))
    exception_heads: deque = field(default_factory=lambda: deque(maxlen=MAX_EXCEPTION_HEADS))
    failing_tests: list[str] = field(default_factory=list)
    graph_break_ids: list[str] = field(default_factory=list)  # GBxxxx seen in hit lines, in order
    # For a log read from its end: how to read the rest (where each `line` rule first fired before
    # the tail window). None once the scan is complete.
    rest: Callable[[], "ScanResult"] | None = field(default=None, repr=False, compare=False)

    def complete(self) -> "ScanResult":
        return self.rest() if self.rest is not None else self


def count_newlines(buf, start: int, end: int, chunk: int = 8 << 20) -> int:
    """Newlines in buf[start:end] for any buffer (an mmap has no .count), copying 8 MB at a time.
    An mmap's pages are handed back once counted, so counting a big log does not keep it resident."""
    if isinstance(buf, (bytes, bytearray)):
        return buf.count(b"\n", start, end)
    total = 0
    for offset in range(start, end, chunk):
        total += bytes(buf[offset:min(offset + chunk, end)]).count(b"\n")
        _release(buf, offset, min(offset + chunk, end))
    return total


def _release(buf, start: int, end: int, keep: int = 0) -> None:
    """Drop the resident pages of a read-only file mapping in [start, end - keep) (they are re-read
    from the page cache if needed): a scan of a 1 GB log then holds a few MB of it at a time."""
    page = mmap.PAGESIZE
    first = -(-start // page) * page
    end -= keep
    if isinstance(buf, mmap.mmap) and end - first >= page:
        try:
            buf.madvise(mmap.MADV_DONTNEED, first, (end - first) // page * page)
        except (OSError, ValueError, AttributeError):
            pass


class Scanner:
    """Compiled once per ruleset; `scan` may then run on any number of inputs."""

    def __init__(self, ruleset: Ruleset):
        self.line_patterns: tuple[Pattern, ...] = ruleset.in_scope("line")
        self.structure = [TRACEBACK, CHAIN_SEPARATOR, EXCEPTION_HEAD, FAILED_TEST, GB_ID]
        self.union = self._union(range(len(self.line_patterns)), self.structure)
        self.line_set = re2.Set.SearchSet(re2.Options())
        for pattern in self.line_patterns:
            self.line_set.Add(pattern.regex)
        self.line_set.Compile()
        self.traceback = re2.compile(TRACEBACK)
        self.chain_separator = re2.compile(CHAIN_SEPARATOR)
        self.exception_head = re2.compile("^" + EXCEPTION_HEAD)
        self.failed_test = re2.compile("^" + _TS + r"(?:FAILED|ERROR) +(\S+::\S+)")
        self.pt2_mention = re2.compile(PT2_MENTION, _OPTIONS)
        self._unions: dict[frozenset, object] = {}

    def _union(self, pattern_indexes, extra) -> object:
        alternatives = [self.line_patterns[i].regex for i in pattern_indexes] + list(extra)
        return re2.compile("(?m)" + "|".join(f"(?:{a})" for a in alternatives), _OPTIONS) if alternatives else None

    def scan(self, buf: bytes, lazy: bool = False) -> ScanResult:
        """Find the interesting lines of `buf` (bytes or an mmap).

        An issue-sized input is scanned forward, whole. A log is read from its end: the final error
        and what surrounds it are found in a tail window that grows backwards only until it holds
        that error's chain and the end of the failure before it; the rest of the log is only asked
        where each `line` rule first fired and which tests failed, with a union that drops every
        rule once it has fired. A log dense with torch output is then not parsed line by line.
        With `lazy`, that second part waits until `result.complete()` is called: a caller whose
        verdict the final error already decides never reads the rest of the log."""
        if len(buf) <= FULL_SCAN_BYTES:
            result = ScanResult(size=len(buf), total_lines=0)
            self._forward(result, buf, 0, len(buf), 1)
            result.total_lines = count_newlines(buf, 0, len(buf)) + (0 if buf[-1:] == b"\n" or not buf else 1)
            return result
        result = self._scan_tail_first(buf)
        return result if lazy else result.complete()

    def _scan_tail_first(self, buf) -> ScanResult:
        size = len(buf)
        window_start = _line_start(buf, size - TAIL_WINDOW_BYTES)
        tail = ScanResult(size=size, total_lines=0)
        self._forward(tail, buf, window_start, size, 1)  # line numbers relative to the window until the end
        while window_start > 0 and not _holds_final_error(tail, window_start):
            grown = _line_start(buf, max(0, window_start - 3 * (size - window_start)))
            prefix = ScanResult(size=size, total_lines=0)
            self._forward(prefix, buf, grown, window_start, 1)
            tail = _merge(prefix, _shifted(tail, count_newlines(buf, grown, window_start)))
            window_start = grown
        head_lines = count_newlines(buf, 0, window_start)
        tail = _shifted(tail, head_lines)
        tail.total_lines = head_lines + count_newlines(buf, window_start, size) + (0 if buf[-1:] == b"\n" else 1)
        if window_start == 0:
            return tail
        tail.rest = lambda: self._with_head(buf, tail, window_start)
        return tail

    def _with_head(self, buf, tail: ScanResult, window_start: int) -> ScanResult:
        """The tail scan completed with what lies before its window."""
        chain_start = _last_chain_start(tail)
        wants_last_head = not any(h.offset < chain_start for h in tail.exception_heads)
        head = ScanResult(size=tail.size, total_lines=0)
        self._first_hits(head, buf, window_start, wants_last_head)
        result = _merge(head, tail, structure_from_second=True)
        result.exception_heads.extendleft(list(head.exception_heads)[-1:])  # the failure before the window
        result.total_lines = tail.total_lines
        return result

    def _forward(self, result: ScanResult, buf, start: int, end: int, first_line: int) -> None:
        """Every interesting line of buf[start:end] (which starts at a line start), in order."""
        search, find, rfind = self.union.search, buf.find, buf.rfind
        pos, line_no, counted_to = start, first_line, start
        while pos < end:
            match = search(buf, pos, end)
            _release(buf, start, match.start() if match else end, keep=RESIDENT_BYTES)
            if match is None:
                break
            line_start = rfind(b"\n", 0, match.start()) + 1
            line_end = find(b"\n", match.start(), end)
            line_end = end if line_end < 0 else line_end
            line_no += count_newlines(buf, counted_to, line_start)
            counted_to = line_start
            text_start, raw = _hit_text(buf, line_start, line_end, match.start())
            self._record(result, raw, text_start, line_no)
            pos = line_end + 1

    def _first_hits(self, result: ScanResult, buf, end: int, wants_last_head: bool) -> int:
        """Where each `line` rule first fired in buf[:end], the failed tests there, the first graph
        break id and (when asked) the last exception line: one search per hit line, with a union
        that loses each rule as soon as it has fired, and the id once it is found (it is often on
        a later line of the first logged break than the one its rule fired on). Returns the number
        of newlines in buf[:end]."""
        remaining = set(range(len(self.line_patterns)))
        pos, line_no, counted_to = 0, 1, 0
        wants_gb = True
        union = self._cached_union(remaining, wants_last_head, wants_gb)
        while pos < end and union is not None:
            match = union.search(buf, pos, end)
            _release(buf, 0, match.start() if match else end, keep=RESIDENT_BYTES)
            if match is None:
                break
            line_start = buf.rfind(b"\n", 0, match.start()) + 1
            line_end = buf.find(b"\n", match.start(), end)
            line_end = end if line_end < 0 else line_end
            line_no += count_newlines(buf, counted_to, line_start)
            counted_to = line_start
            text_start, raw = _hit_text(buf, line_start, line_end, match.start())
            fired = self._record(result, raw, text_start, line_no, structure=False)
            if wants_last_head and self.exception_head.search(raw.decode("utf-8", errors="replace")):
                result.exception_heads.append(Mark(text_start, line_no))
            if fired & remaining or (wants_gb and result.graph_break_ids):
                remaining -= fired
                wants_gb = not result.graph_break_ids
                union = self._cached_union(remaining, wants_last_head, wants_gb)
            pos = line_end + 1
        return line_no - 1 + count_newlines(buf, counted_to, end)

    def _cached_union(self, remaining: set[int], with_heads: bool = False, with_gb: bool = False):
        key = (frozenset(remaining), with_heads, with_gb)
        if key not in self._unions:
            extra = [FAILED_TEST] + ([EXCEPTION_HEAD] if with_heads else []) + ([GB_ID] if with_gb else [])
            self._unions[key] = self._union(sorted(remaining), extra)
        return self._unions[key]

    def _record(self, result: ScanResult, raw: bytes, offset: int, line_no: int, structure: bool = True) -> set[int]:
        """Note what one line is; returns the indexes of the `line` rules that fired on it."""
        text = raw.decode("utf-8", errors="replace")
        cleaned = clean_line(text)[:MAX_LINE_CHARS]
        fired = set(self.line_set.Match(text) or ())
        for index in fired:
            name = self.line_patterns[index].name
            hit = result.pattern_hits.get(name)
            evidence = Evidence(line=line_no, text=cleaned)
            if hit is None:
                result.pattern_hits[name] = PatternHits(first=evidence, last=evidence)
            else:
                hit.last, hit.count = evidence, hit.count + 1
        if structure:
            if self.traceback.search(text):
                result.tracebacks.append(Mark(offset, line_no))
            elif self.chain_separator.search(text):
                result.chain_separators.append(Mark(offset, line_no))
            elif self.exception_head.search(text):
                result.exception_heads.append(Mark(offset, line_no, cleaned))
        for gb_digits in GB_ID_RE.findall(text):  # the ids of the breaks a hit line names
            gb_id = f"GB{gb_digits}"
            if gb_id not in result.graph_break_ids and len(result.graph_break_ids) < MAX_FAILING_TESTS:
                result.graph_break_ids.append(gb_id)
        failed = self.failed_test.search(text)
        if failed and len(result.failing_tests) < MAX_FAILING_TESTS:
            test_id = clean_line(failed.group(1))
            if test_id not in result.failing_tests:
                result.failing_tests.append(test_id)
        return fired

    def mentions_pt2(self, buf: bytes) -> bool:
        """Whether the text talks about the compiler stack at all (one more pass, only when asked)."""
        return self.pt2_mention.search(buf) is not None


def _hit_text(buf, line_start: int, line_end: int, hit: int) -> tuple[int, bytes]:
    """Where the text of a hit line starts, and that text, capped. In a pathological line (megabytes
    without a newline) it starts at the hit, not at the line's start, so the hit is never cut away."""
    start = line_start if hit - line_start < 4 * MAX_LINE_CHARS else hit
    return start, bytes(buf[start:min(line_end, start + 8 * MAX_LINE_CHARS)])


def _line_start(buf, offset: int) -> int:
    if offset <= 0:
        return 0
    return buf.rfind(b"\n", 0, offset) + 1


def _last_chain_start(tail: ScanResult) -> int:
    """Offset of the first traceback of the last chain (walking back over "The above exception ..."
    separators), or of the last exception line when there is no traceback."""
    if not tail.tracebacks:
        return tail.exception_heads[-1].offset if tail.exception_heads else 0
    tracebacks, separators = list(tail.tracebacks), [m.offset for m in tail.chain_separators]
    index = len(tracebacks) - 1
    while index > 0 and any(tracebacks[index - 1].offset < s < tracebacks[index].offset for s in separators):
        index -= 1
    return tracebacks[index].offset


def _holds_final_error(tail: ScanResult, window_start: int) -> bool:
    """Whether a tail window holds the final error whole: the first traceback of its last chain,
    with some margin before it. A window with no error in it grows to the whole log."""
    if not tail.tracebacks and not tail.exception_heads:
        return False
    return _last_chain_start(tail) - window_start >= CHAIN_MARGIN_BYTES


def _shifted(result: ScanResult, lines: int) -> ScanResult:
    """The same scan with every line number moved down by `lines` (it started that far into the input)."""
    if not lines:
        return result
    for hit in result.pattern_hits.values():
        hit.first = replace(hit.first, line=hit.first.line + lines)
        hit.last = replace(hit.last, line=hit.last.line + lines)
    for attribute in ("tracebacks", "chain_separators", "exception_heads"):
        marks = getattr(result, attribute)
        moved = [replace(m, line=m.line + lines) for m in marks]
        marks.clear()
        marks.extend(moved)
    return result


def _merge(first: ScanResult, second: ScanResult, structure_from_second: bool = False) -> ScanResult:
    """Two scans of adjacent ranges as one (`first` comes earlier in the input)."""
    merged = ScanResult(size=second.size, total_lines=0)
    for name in {**first.pattern_hits, **second.pattern_hits}:
        a, b = first.pattern_hits.get(name), second.pattern_hits.get(name)
        merged.pattern_hits[name] = (PatternHits(a.first, b.last, a.count + b.count) if a and b else a or b)
    for attribute in ("tracebacks", "chain_separators", "exception_heads"):
        target = getattr(merged, attribute)
        if not structure_from_second:
            target.extend(getattr(first, attribute))
        target.extend(getattr(second, attribute))
    for test in first.failing_tests + second.failing_tests:
        if test not in merged.failing_tests and len(merged.failing_tests) < MAX_FAILING_TESTS:
            merged.failing_tests.append(test)
    merged.graph_break_ids = list(dict.fromkeys(first.graph_break_ids + second.graph_break_ids))[:MAX_FAILING_TESTS]
    return merged
