"""One pass over a whole input (issue or 200 MB CI log) that finds the lines worth deciding on.

Python's `re` runs a many-way alternation ~30x slower than grep, so the pass uses RE2 (a DFA):
one union of every `line`-scope rule plus the structural anchors (traceback headers, chain
separators, exception heads, pytest FAILED lines). Each hit costs a few C-level calls; the rest of
the log is never looked at from Python. Memory is the input itself (an mmap for files) plus
bounded hit tables, so it stays under 2x the input size.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import re2

from .graph_breaks import GB_ID_RE
from .logtext import LINE_PREFIX, clean_line
from .records import Evidence
from .ruleset import Pattern, Ruleset

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


def count_newlines(buf, start: int, end: int, chunk: int = 8 << 20) -> int:
    """Newlines in buf[start:end] for any buffer (an mmap has no .count), copying 8 MB at a time."""
    if isinstance(buf, bytes):
        return buf.count(b"\n", start, end)
    return sum(bytes(buf[i:min(i + chunk, end)]).count(b"\n") for i in range(start, end, chunk))


class Scanner:
    """Compiled once per ruleset; `scan` may then run on any number of inputs."""

    def __init__(self, ruleset: Ruleset):
        self.line_patterns: tuple[Pattern, ...] = ruleset.in_scope("line")
        alternatives = [p.regex for p in self.line_patterns] + [TRACEBACK, CHAIN_SEPARATOR, EXCEPTION_HEAD, FAILED_TEST]
        self.union = re2.compile("(?m)" + "|".join(f"(?:{a})" for a in alternatives), _OPTIONS)
        self.line_set = re2.Set.SearchSet(re2.Options())
        for pattern in self.line_patterns:
            self.line_set.Add(pattern.regex)
        self.line_set.Compile()
        self.traceback = re2.compile(TRACEBACK)
        self.chain_separator = re2.compile(CHAIN_SEPARATOR)
        self.exception_head = re2.compile("^" + EXCEPTION_HEAD)
        self.failed_test = re2.compile("^" + _TS + r"(?:FAILED|ERROR) +(\S+::\S+)")
        self.pt2_mention = re2.compile(PT2_MENTION, _OPTIONS)

    def scan(self, buf: bytes) -> ScanResult:
        """Find every interesting line of `buf` (bytes or an mmap) in one forward pass."""
        result = ScanResult(size=len(buf), total_lines=0)
        search, find, rfind = self.union.search, buf.find, buf.rfind
        count = buf.count if isinstance(buf, bytes) else lambda sub, a, b: count_newlines(buf, a, b)
        pos, line_no, counted_to = 0, 1, 0
        while True:
            match = search(buf, pos)
            if match is None:
                break
            start = rfind(b"\n", 0, match.start()) + 1
            end = find(b"\n", match.start())
            end = len(buf) if end < 0 else end
            line_no += count(b"\n", counted_to, start)
            counted_to = start
            self._record(result, bytes(buf[start:min(end, start + 8 * MAX_LINE_CHARS)]), start, line_no)
            pos = end + 1
            if pos >= len(buf):
                break
        result.total_lines = line_no + count(b"\n", counted_to, len(buf)) - (1 if buf[-1:] == b"\n" else 0)
        return result

    def _record(self, result: ScanResult, raw: bytes, offset: int, line_no: int) -> None:
        text = raw.decode("utf-8", errors="replace")
        cleaned = clean_line(text)[:MAX_LINE_CHARS]
        for index in self.line_set.Match(text) or ():
            name = self.line_patterns[index].name
            hit = result.pattern_hits.get(name)
            evidence = Evidence(line=line_no, text=cleaned)
            if hit is None:
                result.pattern_hits[name] = PatternHits(first=evidence, last=evidence)
            else:
                hit.last, hit.count = evidence, hit.count + 1
        if self.traceback.search(text):
            result.tracebacks.append(Mark(offset, line_no))
        elif self.chain_separator.search(text):
            result.chain_separators.append(Mark(offset, line_no))
        elif self.exception_head.search(text):
            result.exception_heads.append(Mark(offset, line_no, cleaned))
        for gb_digits in GB_ID_RE.findall(text):
            gb_id = f"GB{gb_digits}"
            if gb_id not in result.graph_break_ids and len(result.graph_break_ids) < MAX_FAILING_TESTS:
                result.graph_break_ids.append(gb_id)
        failed = self.failed_test.search(text)
        if failed and len(result.failing_tests) < MAX_FAILING_TESTS:
            test_id = clean_line(failed.group(1))
            if test_id not in result.failing_tests:
                result.failing_tests.append(test_id)

    def mentions_pt2(self, buf: bytes) -> bool:
        """Whether the text talks about the compiler stack at all (one more pass, only when asked)."""
        return self.pt2_mention.search(buf) is not None
