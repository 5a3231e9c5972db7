"""Integrity of the labeled corpus (tests/corpus/): the cases file matches its sources, every category
is covered, and every recorded output carries the label of the script that produced it.

Rebuild after changing a scenario, a recording or an issue text:
    python tests/corpus/record.py --set scenarios --only NAME   # real torch output of a scenario
    python tests/corpus/build_cases.py                     # cases.jsonl
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.corpus.build_cases import render

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
ROOT = CORPUS.parents[1]
CASES = CORPUS / "cases.jsonl"
SCENARIOS = CORPUS / "scenarios"
RECORDED = CORPUS / "recorded"
ISSUES = CORPUS / "issues"

# The 14 triage categories, spelled exactly as the classifier reports them.
CATEGORIES = frozenset({
    "graph_break", "backend_compiler_failed", "recompilation", "accuracy", "dynamo_internal_error",
    "runtime_crash", "triton_kernel_bug", "export_failure", "aoti_failure", "aot_autograd_failure",
    "dynamic_shapes", "performance", "not_pt2", "unknown",
})
SCRIPT_CATEGORY_RE = re.compile(r"^# category: (\S+)\s*$", re.M)
ISSUE_HEADER_RE = re.compile(r"^<!-- category: (\w+) -->\n")


def load_cases() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]


def script_category(path: Path) -> str | None:
    match = SCRIPT_CATEGORY_RE.search(path.read_text(encoding="utf-8"))
    return match.group(1) if match else None


def test_cases_file_is_byte_identical_to_a_rebuild():
    assert CASES.read_bytes() == render().encode("utf-8"), "stale: run python tests/corpus/build_cases.py"


def test_cases_have_the_expected_shape():
    cases = load_cases()
    ids = [case["id"] for case in cases]
    assert ids == sorted(ids), "cases.jsonl must be sorted by id"
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    for case in cases:
        assert set(case) == {"id", "category", "source", "body"}, case["id"]
        assert case["source"] in ("recorded", "issue"), case["id"]
        assert case["id"].startswith("recorded/" if case["source"] == "recorded" else "issues/"), case["id"]
        assert case["category"] in CATEGORIES, (case["id"], case["category"])
        assert case["body"].strip(), case["id"]
        assert "<!-- category:" not in case["body"].splitlines()[0], f"{case['id']}: header not stripped"


def test_corpus_size_and_category_coverage():
    cases = load_cases()
    counts = Counter(case["category"] for case in cases)
    assert len(cases) >= 60, len(cases)
    missing = {c: counts.get(c, 0) for c in CATEGORIES if counts.get(c, 0) < 2}
    assert not missing, f"categories with fewer than 2 cases: {missing}"


def test_every_issue_text_has_a_valid_header():
    for issue in sorted(ISSUES.glob("*.md")):
        match = ISSUE_HEADER_RE.match(issue.read_text(encoding="utf-8"))
        assert match, f"{issue.name}: first line must be <!-- category: <id> -->"
        assert match.group(1) in CATEGORIES, (issue.name, match.group(1))


def test_every_recorded_log_has_a_meta_and_every_meta_a_log():
    logs = {p.name[: -len(".log")] for p in RECORDED.glob("*.log")}
    metas = {p.name[: -len(".meta.json")] for p in RECORDED.glob("*.meta.json")}
    assert logs == metas, {"log without meta": sorted(logs - metas), "meta without log": sorted(metas - logs)}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS.glob("*.py")), ids=lambda p: p.stem)
def test_every_scenario_is_recorded_with_its_header_category(scenario: Path):
    category = script_category(scenario)
    assert category in CATEGORIES, f"{scenario.name}: needs a '# category: <id>' header with a known id"
    assert re.search(r"^# about: \S", scenario.read_text(encoding="utf-8"), re.M), f"{scenario.name}: no '# about:'"
    meta_path = RECORDED / f"{scenario.stem}.meta.json"
    assert meta_path.exists(), f"not recorded: python tests/corpus/record.py --set scenarios --only {scenario.stem}"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    assert meta["category"] == category, (scenario.name, meta["category"], category)
    assert meta["script"] == str(scenario.relative_to(ROOT)), meta["script"]
    for key in ("about", "exit_code", "torch_version", "recorded"):
        assert key in meta, (scenario.name, key)


def test_every_recorded_meta_matches_the_header_of_its_script():
    for meta_path in sorted(RECORDED.glob("*.meta.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        script = ROOT / meta["script"]
        assert script.exists(), f"{meta_path.name}: script {meta['script']} is gone"
        assert script_category(script) == meta["category"], (meta_path.name, meta["category"], script_category(script))
