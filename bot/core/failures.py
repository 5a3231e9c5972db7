"""Every distinct failure in a log that holds many (pure: bytes and a classifier in, records out).

A CI job runs hundreds of tests; its verdict is the error the log ended with, but a reviewer also
wants to know which test failed how. Failures are found by their headers: pytest's
`____ TestX.test_y ____` sections, unittest's `ERROR: test_y (mod.TestX.test_y)` blocks, and, outside
any test, each traceback chain. Each region is classified on its own, as a run's output (the rules
decide), and failures with the same signature are listed once with their count.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import re2

from bot.core.logtext import LINE_PREFIX, clean_line
from bot.core.scan import count_newlines

_PREFIX = f"(?:{LINE_PREFIX}|\\x1b\\[[0-9;]*m)*"
ANCHORS = re2.compile(
    "(?m)^" + _PREFIX + r"(?:"
    r"_{3,} (?P<pytest>[^\n_][^\n]*?) _{3,}\s*$"
    r"|(?:ERROR|FAIL): (?P<unittest>test\w*) \((?P<where>[\w.]+)\)"
    r"|(?P<traceback>Traceback \(most recent call last\):)"
    r"|(?:FAILED|ERROR) (?P<summary>\S+::\S+)(?: - (?P<message>[^\n]*))?"
    r"|(?P<end>Ran \d+ tests? in |={5,} [^\n]* ={5,}\s*$)"  # unittest's and pytest's closing lines
    r")")
MAX_FAILURES = 64  # regions classified, the last ones of the log
MAX_REGION_BYTES = 256 << 10
MAX_LISTED = 50


@dataclass(frozen=True)
class Failure:
    """One distinct failure: the first test that showed it, what it is, how often it recurred."""

    test: str | None
    category: str
    signature: str
    exception_type: str | None
    line: int  # 1-based line of its header in the log
    head: str  # the exception line (or the summary's message)
    count: int = 1

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Region:
    start: int
    end: int
    line: int
    test: str | None
    summary: str | None = None  # pytest's one-line "FAILED id - Type: message"


def _regions(buf) -> list[_Region]:
    """Failure regions: a test section up to the next anchor of a test, else a traceback chain."""
    anchors, line, counted = [], 1, 0
    for match in ANCHORS.finditer(buf):
        line += count_newlines(buf, counted, match.start())
        counted = match.start()
        anchors.append((match.start(), line, match))
    next_any, next_test = [len(buf)] * len(anchors), [len(buf)] * len(anchors)
    for index in range(len(anchors) - 2, -1, -1):  # where each region ends, in one backward pass
        offset, _, match = anchors[index + 1]
        next_any[index] = offset
        next_test[index] = offset if match["traceback"] is None else next_test[index + 1]
    regions: list[_Region] = []
    in_test = False
    for index, (offset, line_no, match) in enumerate(anchors):
        is_test = match["pytest"] is not None or match["unittest"] is not None
        if match["end"] is not None:
            in_test = False
            continue
        if match["summary"] is not None:
            in_test = False  # pytest's short summary comes after every section
            regions.append(_Region(offset, offset, line_no, _text(match["summary"]), _text(match["message"] or "")))
            continue
        if not is_test and in_test:
            continue  # a traceback inside a test's section belongs to that test
        in_test = in_test or is_test
        end = next_test[index] if is_test else next_any[index]  # a test ends at the next test
        regions.append(_Region(offset, end, line_no, _test_id(match) if is_test else None))
    return regions


def _short(test_id: str) -> str:
    """`test/x.py::TestA::test_one[cpu]` -> `TestA.test_one[cpu]`: how pytest titles that test's section."""
    parts = test_id.split("::")
    return ".".join(parts[1:]) if len(parts) > 1 else test_id


def _test_id(match) -> str:
    if match["pytest"] is not None:
        return _text(match["pytest"])
    where, name = _text(match["where"]), _text(match["unittest"])
    return where if where.endswith(name) else f"{where}.{name}"


def _text(value) -> str:
    return clean_line(value.decode("utf-8", "replace") if isinstance(value, bytes) else value)


def distinct_failures(buf, classifier) -> tuple[Failure, ...]:
    """The distinct failures of a log, in order of first appearance (pure)."""
    regions = _regions(buf)
    sections = {r.test for r in regions if r.summary is None and r.test}
    sections |= {_short(t) for t in sections}
    by_signature: dict[str, Failure] = {}
    for region in regions[-MAX_FAILURES:]:
        if region.summary is not None and (region.test in sections or _short(region.test) in sections):
            continue  # the section already told this test's failure in full
        text = region.summary if region.summary is not None else bytes(buf[region.start:min(region.end, region.start + MAX_REGION_BYTES)])
        verdict = classifier.classify_text(text, report=False)
        if verdict.exception_type is None and verdict.rule is None:
            continue  # a section header without a failure in it (a passing test's captured output)
        head = next((e.text for e in verdict.evidence), verdict.exception_type or "")
        known = by_signature.get(verdict.signature)
        if known:
            by_signature[verdict.signature] = Failure(**{**asdict(known), "count": known.count + 1})
            continue
        by_signature[verdict.signature] = Failure(region.test, verdict.category, verdict.signature,
                                                  verdict.exception_type, region.line, head[:300])
    return tuple(sorted(by_signature.values(), key=lambda f: f.line)[:MAX_LISTED])
