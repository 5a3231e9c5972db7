"""bot/actions_io: what the action tells the runner, from values (no runner needed)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from bot.cli.actions_io import (ActionInputError, Annotation, annotations, ci_annotations, ci_outputs, escape_data,
                            escape_property, issue_markdown, main, output_block, publish_outputs, repro_line,
                            step_outputs, summary_markdown)
from bot.core.report import TriageReport
from tests.actions.harness import parse_file_command, workflow_commands
from tests import paths

ROOT = paths.ROOT
REPORT_DIR = ROOT / "tests" / "actions" / "fixtures" / "report_graph_break"


@pytest.fixture
def report() -> TriageReport:
    return TriageReport.from_dict(json.loads((REPORT_DIR / "report.json").read_text()))


def test_workflow_command_escaping_round_trips_through_the_runner():
    hostile = "50% done\r\n::set-env name=X::1, file=a:b"
    command = Annotation("error", "title: with, commas", hostile, "dir/x,y.py", 7).command()
    assert "\n" not in command
    [parsed] = workflow_commands(command)
    assert parsed.data == hostile
    assert parsed.properties == {"file": "dir/x,y.py", "line": "7", "title": "title: with, commas"}
    assert escape_data("%") == "%25" and escape_property(":,") == "%3A%2C"


def test_output_block_survives_any_value():
    value = "line one\ncategory=pwned\nEOF"
    assert parse_file_command(output_block("category", value)) == {"category": value}
    with pytest.raises(ValueError):
        output_block("x", "a ghadelimiter_1 b", delimiter="ghadelimiter_1")


def test_step_outputs_are_strings_if_expressions_can_use(report):
    assert step_outputs(report, "out/report.json") == {
        "category": "graph_break", "confidence": "0.93", "reproduced": "true", "report-path": "out/report.json"}
    not_run = dataclasses.replace(report, reproduction=None)
    assert step_outputs(not_run, "r")["reproduced"] == "false"


def test_the_error_annotation_points_at_the_repro_line(report):
    assert repro_line(report) == 7  # `if x.sum() > 0:` in tests/repros/graph_break_fullgraph.py
    [error] = annotations(report, "tests/repros/graph_break_fullgraph.py", "Graph break")
    assert (error.level, error.file, error.line) == ("error", "tests/repros/graph_break_fullgraph.py", 7)
    assert error.message == "torch._dynamo.exc.Unsupported: Data-dependent branching"
    assert annotations(report, None, "Graph break")[0].line is None  # issue mode: the repro is not a workspace file


def test_warnings_say_what_a_maintainer_must_know(report):
    reproduction = dataclasses.replace(report.reproduction, status="needs_gpu", reproduced=False,
                                       summary="Needs CUDA; this runner has none.",
                                       runs=tuple(dataclasses.replace(r, network_isolated=False) for r in report.reproduction.runs))
    found = annotations(dataclasses.replace(report, reproduction=reproduction), None, "Graph break")
    assert [a.level for a in found] == ["warning", "warning", "warning"]
    assert "Needs CUDA" in found[1].message and "pt2-triage doctor" in found[2].message
    not_pt2 = dataclasses.replace(report, classification=dataclasses.replace(report.classification, category="not_pt2",
                                                                                 is_pt2=False),
                                  reproduction=None)
    assert [a.level for a in annotations(not_pt2, None, "Not a PT2 problem")] == ["notice"]


def test_summary_keeps_hostile_text_inert(report, ruleset):
    hostile = dataclasses.replace(report, title="@pytorch/team please </details> <script>",
                                  minimized=dataclasses.replace(report.minimized, source="x = '```'\n@everyone\n"))
    text = summary_markdown(hostile, ruleset, "pt2-triage-report", ["report.json"])
    assert "@pytorch/team" not in text and "<script>" not in text
    assert "\n````python\nx = '```'\n@everyone\n````" in text  # the fence is longer than any run inside
    assert "## PT2 triage: Graph break" in text and "`pt2-triage-report`" in text


def test_issue_markdown_from_the_event():
    event = json.loads((ROOT / "tests" / "bot" / "fixtures" / "webhooks" / "issues_labeled.json").read_text())
    number, text = issue_markdown(event, None)
    assert number == event["issue"]["number"] and text.startswith(f"# {event['issue']['title']}\n\n")
    assert issue_markdown(event, number)[0] == number
    with pytest.raises(ActionInputError, match="is not the event's issue"):
        issue_markdown(event, number + 1)
    with pytest.raises(ActionInputError, match="needs an `issues` or `issue_comment` event"):
        issue_markdown({"workflow_run": {}}, None)


def test_ci_and_publish_outputs():
    ci = {"findings": [{"is_pt2": False, "category": "not_pt2", "confidence": 0.9, "job_name": "lint", "title": "x"},
                       {"is_pt2": True, "category": "graph_break", "confidence": 0.875, "job_name": "test (dynamo)",
                        "title": "Graph break", "failing_tests": ["test/x.py::T::test_a"], "error_line": "Unsupported: ..."}],
          "comments": [{"url": "https://github.com/o/r/pull/7#issuecomment-1"}]}
    assert ci_outputs(ci, "d/ci_report.json") == {"category": "graph_break", "confidence": "0.88",
                                                  "report-path": "d/ci_report.json",
                                                  "comment-url": "https://github.com/o/r/pull/7#issuecomment-1"}
    [error] = ci_annotations(ci)
    assert error.title == "PT2 triage: test (dynamo): Graph break"
    assert error.message == "test/x.py::T::test_a: Unsupported: ..."
    assert ci_outputs({"findings": []}, "")["category"] == ""
    assert publish_outputs({"comment_url": "u", "pr_url": None}) == {"comment-url": "u", "pr-url": ""}


def test_report_command_writes_outputs_summary_and_annotations(tmp_path, capsys):
    environ = {"GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    assert main(["report", str(REPORT_DIR), "--repro-file", "repro.py", "--artifact-name", "a"], environ) == 0
    outputs = parse_file_command((tmp_path / "out").read_text())
    assert outputs["category"] == "graph_break" and outputs["report-path"] == str(REPORT_DIR / "report.json")
    assert "### Next steps" in (tmp_path / "summary").read_text()
    [error] = workflow_commands(capsys.readouterr().out)
    assert error.properties["file"] == "repro.py"


def test_a_missing_report_is_one_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)], {}) == 2
    assert "no report (did the triage step fail before writing one?)" in capsys.readouterr().out


def test_summary_keeps_every_string_of_a_forged_report_inert(ruleset):
    """The summary is rendered from the runner's report.json: each of its strings may be forged."""
    from tests.bot.pipeline.test_comment import assert_inert, hostile_variants

    for forged in hostile_variants():
        assert_inert(summary_markdown(forged, ruleset, "pt2-triage-report", ["report.json"]), marker=None)
