"""The scan: a log is read from its end, and that must find what a whole forward scan finds."""
from __future__ import annotations

import random
import re

import pytest

from bot.core import scan as scan_module
from bot.core.final_error import final_chain
from tests import paths

RECORDED = paths.CORPUS / "recorded"


def dense_log(size: int, ending: bytes, seed: int = 0) -> bytes:
    """Real torch outputs of every category back to back (a CI job that ran many failing scripts)."""
    outputs = [p.read_bytes() for p in sorted(RECORDED.glob("*.log"))]
    rng, parts, total = random.Random(seed), [], 0
    while total < size:
        part = rng.choice(outputs)
        parts.append(part)
        total += len(part)
    return b"".join(parts) + b"\n" + ending


@pytest.mark.parametrize("seed", [0, 1])
def test_reading_from_the_end_finds_what_a_forward_scan_finds(classifier, fixture_bytes, monkeypatch, seed):
    log = dense_log(6 << 20, fixture_bytes("fullgraph_data_dependent_branch.log"), seed)
    from_end = classifier.scanner.scan(log)
    monkeypatch.setattr(scan_module, "FULL_SCAN_BYTES", len(log) + 1)
    whole = classifier.scanner.scan(log)
    assert from_end.total_lines == whole.total_lines
    assert final_chain(log, from_end) == final_chain(log, whole)
    assert {n: h.first for n, h in from_end.pattern_hits.items()} == {n: h.first for n, h in whole.pattern_hits.items()}
    # the last hit is exact for the rules that fired near the end; elsewhere it is only known to be earlier
    tail_start = whole.tracebacks[0].line
    for name, hit in whole.pattern_hits.items():
        if hit.last.line >= from_end.tracebacks[0].line:
            assert from_end.pattern_hits[name].last == hit.last, name
        assert from_end.pattern_hits[name].last.line <= hit.last.line
    assert from_end.failing_tests == whole.failing_tests
    # GB ids: the first one logged (the fallback id of a logged break) and every one near the end
    assert from_end.graph_break_ids[0] == whole.graph_break_ids[0]
    assert set(from_end.graph_break_ids) <= set(whole.graph_break_ids)
    assert tail_start <= from_end.tracebacks[0].line


def test_the_first_graph_break_id_is_found_where_its_break_names_it(classifier, fixture_bytes, monkeypatch):
    """A logged break names its id on its ninth line, after the rule that reads it has fired: the
    scan of a log's head kept that rule's first line only, and took a later break's id for the first."""
    head = (RECORDED / "gb_logged_logger_call.log").read_bytes()
    filler = b"".join(b"step %d loss 0.3\n" % i for i in range(400_000))
    log = head + filler + (RECORDED / "gb_logged_data_dependent_if.log").read_bytes() + \
        fixture_bytes("fullgraph_data_dependent_branch.log")
    from_end = classifier.scanner.scan(log)
    monkeypatch.setattr(scan_module, "FULL_SCAN_BYTES", len(log) + 1)
    whole = classifier.scanner.scan(log)
    first_id = "GB" + re.search(rb"(?i)\bGB(\d{4})\b", head).group(1).decode()
    assert from_end.graph_break_ids[0] == whole.graph_break_ids[0] == first_id


def test_a_log_without_any_error_is_scanned_whole(classifier):
    log = b"".join(b"2026-11-20T10:11:12.0000000Z step %d loss 0.3\n" % i for i in range(200_000))
    log += b"Graph break in user code at /w/train.py:12\n" + log[:1000]
    result = classifier.scanner.scan(log)
    assert result.pattern_hits["graph_break_log"].first.line == 200_001
    assert result.total_lines == log.count(b"\n") + 1  # the last line has no newline
