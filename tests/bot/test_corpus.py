"""The classifier on the labeled corpus (its integrity is checked in test_corpus_integrity.py)."""
from __future__ import annotations

import json
from pathlib import Path

from bot.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES = CORPUS / "cases.jsonl"


def load() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]


def test_classifier_accuracy_on_the_corpus_is_at_least_95_percent(capsys):
    assert main(["eval", str(CASES), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == len(load())
    assert result["accuracy"] >= 0.95, result["mistakes"]
