"""The labeled corpus: in sync with its sources, covering every category, and classified >= 95%."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from bot.cli import main
from bot.ruleset import CATEGORY_IDS
from tests.corpus.build_cases import render

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES = CORPUS / "cases.jsonl"


def load() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]


def test_cases_file_is_rebuilt_from_its_sources():
    assert CASES.read_text(encoding="utf-8") == render(), "run: python tests/corpus/build_cases.py"


def test_corpus_size_and_coverage():
    cases = load()
    counts = Counter(case["category"] for case in cases)
    assert len(cases) >= 60
    assert set(counts) == set(CATEGORY_IDS), set(CATEGORY_IDS) - set(counts)
    assert all(n >= 2 for n in counts.values()), counts
    assert sum(case["source"] == "recorded" for case in cases) >= 30


def test_every_recorded_log_comes_from_a_repro_with_the_same_label():
    for meta_path in (CORPUS / "recorded").glob("*.meta.json"):
        meta = json.loads(meta_path.read_text())
        script = (CORPUS.parents[1] / meta["script"]).read_text()
        assert re.search(rf"^# category: {meta['category']}$", script, re.M), meta_path


def test_classifier_accuracy_on_the_corpus_is_at_least_95_percent(capsys):
    assert main(["eval", str(CASES), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == len(load())
    assert result["accuracy"] >= 0.95, result["mistakes"]
