"""A report.json is read as untrusted input: every field is checked against its type where it is read,
and a category this side does not know is shown as `unknown` with a note."""
from __future__ import annotations

import json

import pytest

from bot.core.report import UNKNOWN_CATEGORY, ReportError, TriageReport, with_known_category
from tests.paths import FIXTURES


def report_json() -> dict:
    return json.loads((FIXTURES / "reports" / "graph_break.json").read_text(encoding="utf-8"))


def broken(path: str, value) -> dict:
    """The fixture report with the field at dotted `path` (list indexes as numbers) set to `value`."""
    data = report_json()
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[int(last) if isinstance(target, list) else last] = value
    return data


@pytest.mark.parametrize("path, value, message", [
    ("classification.confidence", "0.9", "report.classification.confidence: expected a number, got str"),
    ("classification.confidence", float("nan"), "report.classification.confidence: expected a number"),
    ("classification.category", 7, "report.classification.category: expected a string, got int"),
    ("classification.evidence", {"line": 1}, "report.classification.evidence: expected an array, got dict"),
    ("classification.evidence.0.line", True, r"report.classification.evidence\[0\].line: expected an integer, got bool"),
    ("reproduction.summary", ["a"], "report.reproduction.summary: expected a string, got list"),
    ("reproduction.reproduced", "yes", "report.reproduction.reproduced: expected true or false, got str"),
    ("reproduction.runs.0.env", {"A": 1}, r"report.reproduction.runs\[0\].env\['A'\]: expected a string, got int"),
    ("reproduction", "reproduced", "report.reproduction: expected an object, got str"),
    ("classification.signature", None, "report.classification.signature: expected a string, got NoneType"),
    ("schema_version", True, "schema version True is not supported"),
])
def test_a_field_of_the_wrong_type_is_refused_by_name(path, value, message):
    with pytest.raises(ReportError, match=message):
        TriageReport.from_dict(broken(path, value))


def test_a_missing_field_or_a_report_that_is_no_object_is_refused():
    data = report_json()
    del data["classification"]["signature"]
    with pytest.raises(ReportError, match="report.classification: missing signature"):
        TriageReport.from_dict(data)
    for not_an_object in ([1, 2], None, "report"):
        with pytest.raises(ReportError, match="a report is a JSON object"):
            TriageReport.from_dict(not_an_object)


def test_free_form_objects_may_not_nest_without_end():
    deep = json.loads('{"a": ' * 40 + "1" + "}" * 40)
    with pytest.raises(ReportError, match=r"report.reproduction.runs\[0\].probe: expected a shallow object"):
        TriageReport.from_dict(broken("reproduction.runs.0.probe", deep))
    shallow = TriageReport.from_dict(broken("reproduction.runs.0.probe", {"max_abs_diff": [1.5, {"at": 3}]}))
    assert shallow.reproduction.runs[0].probe == {"max_abs_diff": [1.5, {"at": 3}]}


def test_an_integer_reads_as_a_float_where_a_float_is_meant():
    confidence = TriageReport.from_dict(broken("classification.confidence", 1)).classification.confidence
    assert confidence == 1.0 and isinstance(confidence, float)


def test_a_category_this_side_does_not_know_is_shown_as_unknown_with_a_note(ruleset):
    known = frozenset(ruleset.categories)
    report = TriageReport.from_dict(broken("classification.category", "quantum_graph_break"))
    shown = with_known_category(report, known)
    assert shown.classification.category == UNKNOWN_CATEGORY
    assert shown.stage_errors["category"].startswith("unknown category 'quantum_graph_break'")
    ours = TriageReport.from_dict(report_json())
    assert with_known_category(ours, known) is ours
    with pytest.raises(ReportError, match="unknown category 'quantum_graph_break'"):
        with_known_category(report, known - {UNKNOWN_CATEGORY})
