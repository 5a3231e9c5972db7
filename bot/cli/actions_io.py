"""Glue between a triage report and the GitHub Actions runner: step outputs, job summary, annotations.

The composite action (`action.yml`) runs the `pt2-triage` CLI, then this module turns what the
CLI wrote into what the runner understands. Everything that decides is a pure function of values
(`step_outputs`, `annotations`, `summary_markdown`, `issue_markdown`); only `main()` reads files and
environment variables and writes to `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY` and stdout.

Text from a report is untrusted (it came from running someone's script), so every value that
reaches a workflow command is escaped the way the runner unescapes it, and every value written to
`$GITHUB_OUTPUT` uses a random heredoc delimiter that the value is checked not to contain.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from bot.core.records import Classification
from bot.core.markdown import cell_code, code_span, fence, inert_line, trim_lines
from bot.core.render import render
from bot.core.report import TriageReport
from bot.core.ruleset import Ruleset, load_ruleset

log = logging.getLogger(__name__)

# A frame of the script the sandbox ran (it always runs the repro as `repro.py` in its workdir).
SANDBOX_SCRIPT_NAME = "repro.py"
REPRO_FRAME = re.compile(r'File "(?P<path>[^"]*?)", line (?P<line>\d+)')
EVIDENCE_LINES_SHOWN = 8
REPRO_CHARS_SHOWN = 6000
# Statuses a person should look at even though nothing crashed in our code.
WARNING_STATUSES = {"not_reproduced", "flaky", "needs_gpu", "timeout", "limit", "error"}


class ActionInputError(Exception):
    """The workflow gave the action something it cannot use; the message says what to change."""


# --- workflow commands -------------------------------------------------------------------------
def escape_data(text: str) -> str:
    """A workflow command's message, escaped exactly as the runner unescapes it (%, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (file=, title=): also `:` and `,` are escaped."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@dataclass(frozen=True)
class Annotation:
    """One `::error`/`::warning`/`::notice` line; `file` is relative to the workspace so GitHub links it."""

    level: str  # error | warning | notice
    title: str
    message: str
    file: str | None = None
    line: int | None = None

    def command(self) -> str:
        properties = [f"title={escape_property(self.title)}"]
        if self.file:
            properties.insert(0, f"file={escape_property(self.file)}")
            if self.line:
                properties.insert(1, f"line={self.line}")
        return f"::{self.level} {','.join(properties)}::{escape_data(self.message)}"


def output_block(name: str, value: str, delimiter: str | None = None) -> str:
    """One `$GITHUB_OUTPUT` entry in the multiline form, safe whatever `value` contains."""
    delimiter = delimiter or f"ghadelimiter_{secrets.token_hex(16)}"
    if delimiter in value or delimiter in name:
        raise ValueError("output value contains its delimiter")
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def stop_commands_token() -> str:
    """A fresh token for `::stop-commands::`, so untrusted output cannot issue workflow commands."""
    return f"pt2-triage-{secrets.token_hex(16)}"


# --- decisions ---------------------------------------------------------------------------------
def step_outputs(report: TriageReport, report_path: str) -> dict[str, str]:
    """The action's outputs; booleans are the strings `true`/`false`, as `if:` expressions expect."""
    reproduction = report.reproduction
    return {
        "category": report.classification.category,
        "confidence": f"{report.classification.confidence:.2f}",
        "reproduced": "true" if reproduction and reproduction.reproduced else "false",
        "report-path": report_path,
    }


def repro_line(report: TriageReport) -> int | None:
    """The line of the repro script the failure surfaced from: the innermost frame of `repro.py`
    in the first run's output (traceback frames are printed outermost first, so the last one)."""
    if not report.reproduction:
        return None
    for run in report.reproduction.runs:
        lines = [int(m["line"]) for m in REPRO_FRAME.finditer(run.output_tail)
                 if Path(m["path"]).name == SANDBOX_SCRIPT_NAME]
        if lines:
            return lines[-1]
    return None


def annotations(report: TriageReport, repro_file: str | None, category_title: str,
                line: int | None = None) -> list[Annotation]:
    """What the job's annotations say: the failure (an error, at the repro's line when known, or at
    `line` of a log), and warnings for anything a maintainer must know before trusting the verdict."""
    classification = report.classification
    reproduction = report.reproduction
    headline = classification.evidence[0].text.strip() if classification.evidence else classification.signature
    title = f"PT2 triage: {category_title} ({classification.confidence:.0%})"
    found = []
    if classification.is_pt2:
        level = "error" if not reproduction or reproduction.reproduced else "warning"
        where = line or (repro_line(report) if repro_file else None)
        found.append(Annotation(level, title, headline, repro_file, where))
    else:
        found.append(Annotation("notice", title, "no PyTorch 2 compiler failure found: " + headline))
    if reproduction and reproduction.status in WARNING_STATUSES:
        found.append(Annotation("warning", f"PT2 triage: {reproduction.status}", reproduction.summary))
    if reproduction and any(not run.network_isolated for run in reproduction.runs):
        found.append(Annotation("warning", "PT2 triage: no network isolation",
                                "the repro ran without its own network namespace on this runner; "
                                "run `pt2-triage doctor` there and see runners/setup/README.md"))
    return found


def summary_markdown(report: TriageReport, ruleset: Ruleset, artifact_name: str | None,
                     artifact_files: Iterable[str]) -> str:
    """The job summary a person reads on the run page (templates/step_summary.md.j2)."""
    category = ruleset.categories[report.classification.category]
    evidence = report.classification.evidence[-EVIDENCE_LINES_SHOWN:]
    minimized = report.minimized
    repro_source = minimized.source if minimized else report.repro_source
    repro_text, repro_dropped = trim_lines(repro_source or "", REPRO_CHARS_SHOWN, keep="head")
    return render("step_summary.md.j2", report=report, category=category, evidence=evidence,
                  reproduction=report.reproduction, minimized=minimized, repro_text=repro_text,
                  repro_dropped=repro_dropped, artifact_name=artifact_name, artifact_files=list(artifact_files),
                  fence=fence, inert=inert_line, code=cell_code)


def publish_outputs(result: Mapping) -> dict[str, str]:
    """`pt2-triage publish --json` -> the action's comment-url and pr-url outputs."""
    return {"comment-url": str(result.get("comment_url") or ""), "pr-url": str(result.get("pr_url") or "")}


def ci_outputs(ci_report: Mapping, report_path: str) -> dict[str, str]:
    """`pt2-triage ci-failure --json` -> outputs: the first PT2 finding decides category and confidence."""
    findings = [f for f in ci_report.get("findings", ()) if f.get("is_pt2")]
    first = findings[0] if findings else {}
    comments = ci_report.get("comments") or []
    return {"category": str(first.get("category", "")), "confidence": f"{first['confidence']:.2f}" if first else "",
            "report-path": report_path, "comment-url": str(comments[0]["url"]) if comments else ""}


def ci_annotations(ci_report: Mapping) -> list[Annotation]:
    """One error per failed job with a PT2 finding, titled with the job, saying what failed."""
    found = []
    for finding in ci_report.get("findings", ()):
        if not finding.get("is_pt2"):
            continue
        tests = finding.get("failing_tests") or []
        message = finding.get("error_line") or finding.get("signature") or finding["category"]
        if tests:
            message = f"{tests[0]}: {message}"
        found.append(Annotation("error", f"PT2 triage: {finding['job_name']}: {finding['title']}", message))
    return found


def ci_summary_markdown(ci_report: Mapping) -> str:
    return render("step_summary_ci.md.j2", report=ci_report, findings=list(ci_report.get("findings", ())),
                  comments=list(ci_report.get("comments") or ()), fence=fence, inert=inert_line, code=cell_code)


def issue_markdown(event: Mapping, issue_number: int | None) -> tuple[int, str]:
    """The issue a triggering `issues`/`issue_comment` event is about, as markdown: (number, text).

    `issue_number`, when given, must be that issue: a workflow that passes another number has to
    check that issue's text out itself (the event only carries the one it is about).
    """
    issue = event.get("issue") if isinstance(event, Mapping) else None
    if not isinstance(issue, Mapping) or not isinstance(issue.get("number"), int):
        raise ActionInputError("mode: issue needs an `issues` or `issue_comment` event, or `repro-path` "
                               "pointing at the issue's markdown")
    if issue_number is not None and issue_number != issue["number"]:
        raise ActionInputError(f"issue-number {issue_number} is not the event's issue #{issue['number']}; "
                               "for another issue give its markdown as `repro-path`")
    title = issue.get("title") or ""
    body = issue.get("body") or ""
    return issue["number"], f"# {title}\n\n{body}\n"


def artifact_listing(report: TriageReport, top_level_files: Iterable[str]) -> list[str]:
    """What the summary lists: the files next to report.json, then the artifacts the run declared
    (a debug directory is one entry, not its thousand files)."""
    declared = report.reproduction.artifacts if report.reproduction else ()
    return sorted(top_level_files) + [path for path in declared if "/" in path]


# --- I/O at the edge ---------------------------------------------------------------------------
def append(path_variable: str, text: str, environ: Mapping[str, str]) -> None:
    """Append to the file a runner variable names; outside a runner (unset) log it instead."""
    path = environ.get(path_variable)
    if not path:
        log.info("%s is not set; not writing:\n%s", path_variable, text)
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def load_report(report_dir: Path) -> TriageReport:
    path = report_dir / "report.json"
    try:
        return TriageReport.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ActionInputError(f"{path}: no report (did the triage step fail before writing one?)") from None
    except (ValueError, TypeError) as exc:
        raise ActionInputError(f"{path}: not a triage report ({exc})") from None


def cmd_report(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    report_dir = Path(args.report_dir)
    report = load_report(report_dir)
    ruleset = load_ruleset()
    for name, value in step_outputs(report, str((report_dir / "report.json").resolve())).items():
        append("GITHUB_OUTPUT", output_block(name, value), environ)
    top_level = (path.name for path in report_dir.iterdir() if path.is_file())
    summary = summary_markdown(report, ruleset, args.artifact_name, artifact_listing(report, top_level))
    append("GITHUB_STEP_SUMMARY", summary, environ)
    title = ruleset.categories[report.classification.category].title
    for annotation in annotations(report, args.repro_file, title):
        print(annotation.command())
    return 0


def cmd_classification(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """`pt2-triage classify --json` output for a log: the same outputs, summary and annotations,
    the error annotation on the log's first evidence line."""
    try:
        data = json.loads(Path(args.classification_json).read_text(encoding="utf-8"))
        classification = Classification.from_dict(data)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ActionInputError(f"{args.classification_json}: not `pt2-triage classify --json` output ({exc})") from None
    report = TriageReport(classification=classification, source="ci_job", reference=args.log_file)
    ruleset = load_ruleset()
    for name, value in step_outputs(report, "").items():
        if name != "report-path":
            append("GITHUB_OUTPUT", output_block(name, value), environ)
    append("GITHUB_STEP_SUMMARY", summary_markdown(report, ruleset, None, ()), environ)
    first_line = classification.evidence[0].line if classification.evidence else None
    title = ruleset.categories[classification.category].title
    for annotation in annotations(report, args.log_file, title, first_line):
        print(annotation.command())
    return 0


def read_json(path: str, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ActionInputError(f"{path}: not {what} ({exc})") from None
    if not isinstance(data, dict):
        raise ActionInputError(f"{path}: not {what} (not a JSON object)")
    return data


def cmd_published(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    result = read_json(args.publish_json, "`pt2-triage publish --json` output")
    outputs = publish_outputs(result)
    for name, value in outputs.items():
        append("GITHUB_OUTPUT", output_block(name, value), environ)
    lines = [f"- comment: {outputs['comment-url'] or 'none'}", f"- draft PR: {outputs['pr-url'] or result.get('pr_note') or 'none'}",
             f"- labels: {', '.join(code_span(label) for label in result.get('labels') or []) or 'none'}"]
    append("GITHUB_STEP_SUMMARY", "## PT2 triage: published\n\n" + "\n".join(lines) + "\n", environ)
    return 0


def cmd_ci(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    ci_report = read_json(args.ci_json, "`pt2-triage ci-failure --json` output")
    report_path = str(Path(args.report_path).resolve()) if args.report_path else ""
    for name, value in ci_outputs(ci_report, report_path).items():
        append("GITHUB_OUTPUT", output_block(name, value), environ)
    append("GITHUB_STEP_SUMMARY", ci_summary_markdown(ci_report), environ)
    for annotation in ci_annotations(ci_report):
        print(annotation.command())
    return 0


def cmd_issue_text(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    event_path = environ.get("GITHUB_EVENT_PATH")
    if not event_path:
        raise ActionInputError("GITHUB_EVENT_PATH is not set: run this inside a workflow, or give `repro-path`")
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ActionInputError(f"{event_path}: cannot read the event payload ({exc})") from None
    if args.issue_number and not args.issue_number.isdigit():
        raise ActionInputError(f"issue-number must be a number, not {args.issue_number!r}")
    number, text = issue_markdown(event, int(args.issue_number) if args.issue_number else None)
    Path(args.out).write_text(text, encoding="utf-8")
    append("GITHUB_OUTPUT", output_block("issue-number", str(number)), environ)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot.cli.actions_io",
                                     description="Runner glue for the pt2bash/triage action.")
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="outputs, job summary and annotations from REPORT_DIR/report.json")
    report.add_argument("report_dir")
    report.add_argument("--repro-file", help="the repro, relative to the workspace, for annotations to point at")
    report.add_argument("--artifact-name", help="the artifact the report is uploaded as, named in the summary")
    report.set_defaults(handler=cmd_report)
    logs = commands.add_parser("classification", help="outputs, summary and annotations from `classify --json`")
    logs.add_argument("classification_json")
    logs.add_argument("--log-file", help="the log, relative to the workspace, for annotations to point at")
    logs.set_defaults(handler=cmd_classification)
    published = commands.add_parser("published", help="outputs and summary from `publish --json`")
    published.add_argument("publish_json")
    published.set_defaults(handler=cmd_published)
    ci = commands.add_parser("ci", help="outputs, summary and annotations from `ci-failure --json`")
    ci.add_argument("ci_json")
    ci.add_argument("--report-path", help="where ci_report.json was written")
    ci.set_defaults(handler=cmd_ci)
    issue = commands.add_parser("issue-text", help="write the event's issue as markdown")
    issue.add_argument("--out", required=True)
    issue.add_argument("--issue-number", help="must match the event's issue when given")
    issue.set_defaults(handler=cmd_issue_text)
    return parser


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args, os.environ if environ is None else environ)
    except ActionInputError as exc:
        print(f"::error title=pt2-triage::{escape_data(str(exc))}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
