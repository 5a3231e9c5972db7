"""The classifier on the labeled regression corpus (its integrity is checked in test_corpus_integrity.py).

Recorded cases are a run's output: the rules alone decide, and each must be decided by the rule its
meta names (`rule`, null when the fallback decides), not only land in the right category. Issue
texts are reports (rules + the text model) and are scored together in the accuracy test.
"""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from bot.cli.main import main
from tests import paths

CORPUS = paths.CORPUS
CASES = CORPUS / "cases.jsonl"


def load() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]


RECORDED_CASES = [case for case in load() if case["source"] == "recorded"]


# The hand-written corpus is a regression suite; the real corpus (tests/corpus/real/) is what the
# model is trained and scored on. Retrained on 1218 real reports it scores 94.8% here (147/155;
# 95.5% with 1033): what it still misses are the five `unknown` texts, a category no real report
# was given, and two look-alikes. The floor catches a regression of more than one case.
HAND_CORPUS_FLOOR = 0.94


def test_classifier_accuracy_on_the_hand_written_corpus_holds(capsys):
    assert main(["eval", str(CASES), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == len(load())
    assert result["accuracy"] >= HAND_CORPUS_FLOOR, result["mistakes"]


@pytest.mark.parametrize("case", RECORDED_CASES, ids=lambda case: case["id"])
def test_a_recorded_output_is_decided_by_its_expected_rule(case, classifier):
    verdict = classifier.classify_text(case["body"], report=False)
    assert (verdict.category, verdict.rule) == (case["category"], case["rule"]), verdict.signature


def test_no_two_recorded_cases_are_the_same_failure(classifier):
    """One case per category and signature: a second recording of the same failure adds nothing."""
    groups = defaultdict(list)
    for case in RECORDED_CASES:
        groups[(case["category"], classifier.classify_text(case["body"], report=False).signature)].append(case["id"])
    duplicates = {f"{category} {signature}": ids for (category, signature), ids in groups.items() if len(ids) > 1}
    assert not duplicates, duplicates
