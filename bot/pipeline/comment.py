"""The one structured comment the bot keeps per issue or PR, rendered from a TriageReport.

Pure: report in, markdown out. Everything that came from users or from the repro's output goes
through `bot.core.markdown` (fences that cannot be closed early, mentions and HTML defused), and the
comment always fits GitHub's 65,536-character limit: log excerpts are trimmed first, then the
repro and the test, and the comment says what it trimmed.
"""
from __future__ import annotations

import hashlib

import re2

from bot.core import outcome
from bot.core.graph_breaks import GraphBreakEntry, GraphBreakRegistry
from bot.core.markdown import cell_code, code_span, details, fence, inert_line, quoted, trim_lines
from bot.core.records import Classification
from bot.core.render import render
from bot.core.report import TriageReport
from bot.core.ruleset import Ruleset
from bot.core.tables import ExcerptRules

COMMENT_MARKER = "<!-- pt2-triage:report -->"
MAX_COMMENT_CHARS = 65_536
# Budgets for the parts users control, tried in order until the comment fits.
TRIM_STEPS = ((12_000, 20_000), (4_000, 12_000), (1_500, 6_000), (0, 2_500))
GRAPH_BREAK_PAGE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{id}.html"
CELEBRATIONS = (
    "🎉 Fixed: the regression test passes now. Thanks to everyone who dug into this one!",
    "✅ The repro no longer fails and the regression test passes. Nice work!",
    "🚀 Verified fixed: the test that failed before passes on the latest run.",
    "🥳 This one is fixed: same repro, no error, and the regression test is green.",
    "🧹 Fixed and pinned down by a regression test. One fewer PT2 bug!",
)
VERIFICATION_LINES = {
    "fails_same": "✅ fails now, for the same reason as the repro (it will pass once fixed)",
    "fails_similar": "☑️ fails now with the same category, but another message",
    "fails_differently": "⚠️ fails now, but for a different reason: review before merging",
    "passes": "❌ passes already, so it would not catch this bug: review the assertion",
    "not_run": "⏸️ not verified",
}


def excerpt(text: str, patterns: tuple[str, ...], context: int, max_lines: int) -> str:
    """The lines of `text` that match a pattern, each with `context` lines after; gaps marked `...`."""
    if not patterns or not text:
        return ""
    combined = re2.compile("|".join(f"(?:{p})" for p in patterns))
    lines = text.splitlines()
    keep: set[int] = set()
    quoted: set[str] = set()
    for index, line in enumerate(lines):
        if combined.search(line) and line not in quoted:  # a log repeats the error: quote it once
            quoted.add(line)
            keep.update(range(index, min(index + context + 1, len(lines))))
    picked, previous = [], None
    for index in sorted(keep):
        if previous is not None and index != previous + 1:
            picked.append("...")
        picked.append(lines[index])
        previous = index
        if len(picked) >= max_lines:
            picked.append("... (more matching lines in the run log)")
            break
    return "\n".join(picked)


def celebration(report: TriageReport) -> str:
    """A short, varied line for a verified fix; the same issue always gets the same one."""
    key = f"{report.reference}|{report.issue_number}|{report.classification.signature}"
    return CELEBRATIONS[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(CELEBRATIONS)]


def fix_verified(previous: TriageReport | None, current: TriageReport) -> bool:
    """A later run shows the bug gone: it reproduced before, the same repro runs clean now, and the
    regression test (when there is one) passes. A first run that does not reproduce is no fix."""
    if previous is None or previous.reproduction is None or not previous.reproduction.reproduced:
        return False
    if current.reproduction is None or current.reproduction.status != "not_reproduced":
        return False
    return current.regression_test is None or current.regression_test.verification == "passes"


def is_bot_comment(body: str | None) -> bool:
    return bool(body) and body.lstrip().startswith(COMMENT_MARKER)


def render_comment(report: TriageReport, ruleset: Ruleset, registry: GraphBreakRegistry | None = None, *,
                   commands: tuple[tuple[str, str], ...] = (), fixed: bool = False, pull_request=None,
                   excerpt_rules: ExcerptRules | None = None, max_chars: int = MAX_COMMENT_CHARS) -> str:
    """The full comment. `fixed`: a later run found the bug gone (celebrate once, in the verdict).
    `pull_request` (with `number` and `state`): the draft PR carrying the regression test."""
    rules = excerpt_rules or ruleset.excerpts
    category = ruleset.categories[report.classification.category]
    log_text = "\n".join(run.output_tail for run in (report.reproduction.runs if report.reproduction else ()))
    excerpts = excerpt(log_text, rules.patterns.get(category.id, ()), rules.context, rules.max_lines)
    for log_budget, code_budget in TRIM_STEPS:
        body = _render(report, category, registry, commands, fixed, excerpts, log_budget, code_budget, pull_request)
        if len(body) <= max_chars:
            return body
    note = "\n\n_(comment cut to GitHub's size limit)_\n"
    return body[: max_chars - len(note)] + note


def _render(report, category, registry, commands, fixed, excerpts, log_budget, code_budget, pull_request) -> str:
    trimmed: list[str] = []
    logs, dropped = trim_lines(excerpts, log_budget)
    if dropped:
        trimmed.append(f"{dropped} log lines")
    repro = _trimmed_code(report.minimized.source if report.minimized else report.repro_source, code_budget,
                          "repro", trimmed)
    test = report.regression_test
    test_source = _trimmed_code(test.file_source if test else None, code_budget, "test", trimmed)
    graph_break = registry.get(report.classification.graph_break_id) if registry else None
    return render("comment.md.j2", marker=COMMENT_MARKER, report=report, category=category, shown=shown(report),
                  verdict=verdict_line(report), evidence=_evidence(report.classification),
                  graph_break=_graph_break(graph_break), repro=repro, logs=logs, test=test, test_source=test_source,
                  suggestion=report.test_suggestion, commands=commands, trimmed=trimmed, pull_request=pull_request,
                  ladder_rows=ladder_rows(report), workaround_source=_trimmed_code(
                      report.workaround.source if report.workaround else None, code_budget, "workaround", trimmed),
                  celebration=celebration(report) if fixed else None,
                  fence=fence, inert_line=inert_line, details=details, code_span=code_span)


def shown(report: TriageReport) -> dict:
    """Every string of the report that the comment prints, made inert here, in one place.

    The App reads a report from a runner's artifact, written next to a stranger's script: any of its
    strings may be forged, a version or a test name as much as a log line. Printed raw, a backtick
    ends the template's code span and what follows is the bot's own markdown (`@org/team`, images, a
    marker of ours). So the template reads the report only for its structure (what is there, numbers,
    flags) and prints its words from here; names go in code (`quoted`), prose through `inert_line`.
    tests/bot/pipeline/test_comment.py forges every string of a full report to hold this.
    """
    repro, ladder, disposition, workaround = report.reproduction, report.ladder, report.disposition, report.workaround
    return {"alternatives": [(quoted(name, 60), p) for name, p in report.classification.alternatives[:2]],
            "reproduction": _shown_reproduction(repro, summary_adds_to_verdict(report)) if repro else None,
            "disposition": _shown_disposition(disposition) if disposition else None,
            "workaround": {"verification": inert_line(workaround.verification, 300),
                           "note": inert_line(workaround.note, 300)} if workaround else None,
            "ladder": _shown_ladder(ladder) if ladder else None,
            "suggestion": _shown_suggestion(report.test_suggestion) if report.test_suggestion else None,
            "test": _shown_test(report.regression_test) if report.regression_test else None,
            "stage_errors": [(inert_line(stage, 60), inert_line(error, 300)) for stage, error in report.stage_errors.items()],
            "tool_version": inert_line(report.tool_version, 40)}


def summary_adds_to_verdict(report: TriageReport) -> bool:
    """Whether the reproduction's summary says more than the verdict line above it (`verdict_line`).

    A plain reproduction's summary ("Reproduced on cpu with torch 2.13.0: graph_break (1/1 runs).")
    repeats the verdict line and the heading's category word for word. Only that exact sentence,
    made as the runner makes it from the same values, is left out: a flaky count, another category, a
    note the runner added or a reason it did not reproduce is shown."""
    repro, machine = report.reproduction, report.machine
    if repro is None or not repro.reproduced or machine is None or not machine.torch_version:
        return True
    verdict_says = outcome.summary_sentence("reproduced", report.classification.category, repro.runs_reproduced,
                                            repro.runs_total, repro.device, machine.torch_version)
    return repro.summary != verdict_says


def _shown_reproduction(repro, show_summary: bool = True) -> dict:
    return {"category_from_text": quoted(repro.category_from_text, 60),
            "category_from_run": quoted(repro.category_from_run, 60),
            "summary": inert_line(repro.summary, 400) if show_summary else "",
            "script_changed": inert_line(repro.script_changed or "", 200),
            "next_step": inert_line(repro.next_step or "", 400),
            "silent": [(inert_line(check.kind, 40), inert_line(check.summary, 400), check.reproduced)
                       for check in repro.silent]}


def _shown_disposition(disposition) -> dict:
    return {"kind": inert_line(disposition.kind.replace("_", " "), 60), "reason": inert_line(disposition.reason, 600),
            "meaning": inert_line(disposition.meaning, 200), "hints": [inert_line(h, 400) for h in disposition.hints]}


def _shown_ladder(ladder) -> dict:
    return {"owner": inert_line(ladder.owner or "", 80), "sentence": inert_line(ladder.sentence, 400),
            "workarounds": " or ".join(inert_line(w, 80) for w in ladder.workarounds),
            "skipped": inert_line(ladder.skipped or "", 300)}


def _shown_suggestion(suggestion) -> dict:
    return {"path": quoted(suggestion.path, 200), "test_class": quoted(suggestion.test_class or "", 100),
            "reason": inert_line(suggestion.reason, 300),
            "alternatives": ", ".join(quoted(path, 200) for path in suggestion.alternatives)}


def _shown_test(test) -> dict:
    """The verification is one of VERIFICATION_LINES' keys, or shown as code: it is the runner's word."""
    return {"name": quoted(f"{test.class_name}.{test.test_name}", 200),
            "verification": VERIFICATION_LINES.get(test.verification) or quoted(test.verification, 60),
            "note": inert_line(test.verification_note, 300)}


def ladder_rows(report: TriageReport) -> list[tuple[str, str, str]]:
    """(run, result, error) table cells, inert: each is the runner's word, the error its run's text;
    one line each, no pipes."""
    rows = []
    for rung in report.ladder.rungs if report.ladder else ():
        error = " ".join((rung.exception or "").split("\n", 1)[0].split())[:120]
        cell = cell_code(error) if error else ""
        rows.append((inert_line(rung.title, 80), inert_line(rung.outcome.replace("_", " "), 40), cell))
    return rows


def _trimmed_code(source: str | None, budget: int, what: str, trimmed: list[str]) -> str | None:
    if source is None:
        return None
    kept, dropped = trim_lines(source, budget, keep="head")
    if dropped:
        trimmed.append(f"the last {dropped} lines of the {what} (full text in report.json)")
    return kept


def _evidence(classification: Classification) -> list[dict]:
    return [{"line": e.line, "text": e.text} for e in classification.evidence[:3]]


def _graph_break(entry: GraphBreakEntry | None) -> dict | None:
    if entry is None:
        return None
    return {"id": entry.id, "type": entry.gb_type, "explanation": entry.explanation, "hints": entry.hints[:4],
            "url": GRAPH_BREAK_PAGE.format(id=entry.id.lower())}


def verdict_line(report: TriageReport) -> str:
    """One line: what it is, how sure, and whether (and where) it reproduced. Inert: the torch
    version, the device and the reason are the runner's words."""
    c = report.classification
    where = ""
    if report.machine and report.machine.torch_version:
        device = report.reproduction.device if report.reproduction else "cpu"
        shown_device = device.upper() if device == "cpu" else inert_line(device, 20)
        where = f" on {shown_device} with torch {inert_line(report.machine.torch_version, 40)}"
    repro = report.reproduction
    if repro is None:
        reproduced = "not run yet"
    elif repro.reproduced:
        reproduced = f"reproduced ({repro.runs_reproduced}/{repro.runs_total} runs){where}"
    else:
        why = inert_line((repro.reason or repro.status).replace("_", " "), 80)
        reproduced = f"not reproduced here ({why}){where}"
    return f"confidence {c.confidence:.2f} · {reproduced}"


def render_pending_comment(classification: Classification, ruleset: Ruleset, device: str,
                           registry: GraphBreakRegistry | None = None) -> str:
    """What the App posts on `pt2-triage` at once: the verdict from the text while a runner reproduces."""
    category = ruleset.categories[classification.category]
    graph_break = registry.get(classification.graph_break_id) if registry else None
    return render("comment_pending.md.j2", marker=COMMENT_MARKER, classification=classification, category=category,
                  device=device, evidence=_evidence(classification), graph_break=_graph_break(graph_break),
                  inert_line=inert_line, code_span=code_span)
