"""The structured comment: golden files per category, the size limit, and hostile text.

Golden files live in tests/bot/golden/; after an intended change, regenerate them with
`PT2_TRIAGE_UPDATE_GOLDEN=1 python -m pytest tests/bot/pipeline/test_comment.py` and review the diff the
way a maintainer would read the comment.
"""
import json
import os
from dataclasses import fields, is_dataclass, replace
import re

import pytest

from bot.core.classify import Classifier
from bot.pipeline.comment import (COMMENT_MARKER, MAX_COMMENT_CHARS, celebration, excerpt, fix_verified, is_bot_comment, render_comment,
                         render_pending_comment)
from bot.core.graph_breaks import load_registry
from bot.core.records import Classification, Evidence
from bot.core.report import (MachineEnvironment, MinimizedRepro, RegressionTest, Reproduction, RunRecord, TestSuggestion,
                        TriageReport)
from bot.core.ruleset import load_ruleset
from tests.bot.core.test_markdown import without_code_spans
from tests.bot.core.test_ruleset import CATEGORY_IDS
from tests import paths

GOLDEN = paths.GOLDEN
CORPUS = paths.CORPUS / "cases.jsonl"
COMMANDS = (("@pt2-triage run [cpu|gpu]", "reproduce on a runner"), ("@pt2-triage help", "list the commands"))
RULESET = load_ruleset()
REGISTRY = load_registry()
CLASSIFIER = Classifier(RULESET, REGISTRY, learned=None)  # the comment under test, not the text model (retrained often)


def first_case(category: str) -> dict:
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["category"] == category:
            return case
    raise LookupError(category)


def report_for(category: str) -> TriageReport:
    """A report as a runner writes it, built around a real corpus log of that category."""
    body = first_case(category)["body"]
    classification = CLASSIFIER.classify_text(body)
    run = RunRecord(purpose=f"diagnostics for {category}", env={}, status="failed", exit_code=1, signal=None,
                    duration_s=4.2, peak_rss_bytes=None, limits_fired=(), network_isolated=True, warm=False,
                    classification=classification, output_tail="\n".join(body.splitlines()[-120:]))
    reproduction = Reproduction(status="reproduced", reproduced=True, runs_total=1, runs_reproduced=1, device="cpu",
                                category_from_text=category, category_from_run=classification.category,
                                category_changed=False, summary=f"Reproduced on cpu with torch 2.13.0+cpu: {category} (1/1 runs).",
                                runs=(run,))
    repro = "import torch\n\n\ndef f(x):\n    return torch.relu(x) + 1\n\n\ntorch.compile(f)(torch.randn(8))\n"
    test = None if category in ("not_pt2", "performance") else RegressionTest(
        test_name="test_relu_issue_42", class_name="TestPT2Issue42", assertion="no_error", device="cpu",
        method_source="    def test_relu_issue_42(self):\n        pass\n",
        file_source="import torch\nfrom torch._dynamo.test_case import run_tests, TestCase\n",
        verification="fails_same", verification_note=f"fails as expected with {classification.signature}")
    suggestion = None if test is None else TestSuggestion(
        path=RULESET.categories[category].test_files[0], reason="the usual home of these repros",
        alternatives=RULESET.categories[category].test_files[1:3])
    return TriageReport(classification=classification, source="issue", reference="pytorch/pytorch#42",
                        machine=MachineEnvironment(torch_version="2.13.0+cpu", python_version="3.11.7"),
                        reproduction=reproduction, issue_number=42, repro_source=repro,
                        minimized=MinimizedRepro(repro, True, 30, 8, 220, 31, 140, 21.5, "fixpoint"),
                        test_suggestion=suggestion, regression_test=test, tool_version="golden")


@pytest.mark.parametrize("category", [c for c in CATEGORY_IDS if c != "unknown"])
def test_comment_matches_golden_file(category):
    comment = render_comment(report_for(category), RULESET, REGISTRY, commands=COMMANDS)
    assert_golden(comment, GOLDEN / f"comment_{category}.md")


def assert_golden(text: str, golden) -> None:
    """A missing golden file fails (an update writes it: PT2_TRIAGE_UPDATE_GOLDEN=1)."""
    if os.environ.get("PT2_TRIAGE_UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} is missing; write it with PT2_TRIAGE_UPDATE_GOLDEN=1 and review it"
    assert text == golden.read_text(encoding="utf-8")


def test_the_ladder_the_disposition_and_a_verified_workaround_in_the_comment():
    from bot.core.disposition import Disposition
    from bot.core.ladder import RungResult
    from bot.core.report import LadderReport, Workaround

    unsupported = "torch._dynamo.exc.Unsupported: Data-dependent branching\n  Explanation: ..."
    rungs = (RungResult("no_compiler", "compiler off", "passes"),
             RungResult("eager", 'backend="eager"', "fails", "graph_break", unsupported),
             RungResult("inductor", 'backend="inductor"', "fails", "graph_break", unsupported),
             RungResult("no_fullgraph", "fullgraph=False", "passes"))
    ladder = LadderReport(rungs=rungs, layer="dynamo", owner="Dynamo", category="graph_break", cheapest_backend="eager",
                          sentence='Fails already with backend="eager", so Dynamo\'s tracing or guards own it.',
                          workarounds=("fullgraph=False",), script="minimized")
    disposition = Disposition("limitation", "fundamental_graph_break", "the graph break is fundamental",
                              "documented behaviour with a workaround", ("torch_cond",),
                              ("Use `torch.cond` to express dynamic control flow.",))
    workaround = Workaround("torch_cond", "The `if` at line 5 became `torch.cond`", "import torch\n", True, "ran to completion")
    report = replace(report_for("graph_break"), regression_test=None, ladder=ladder, disposition=disposition,
                     workaround=workaround)
    comment = render_comment(report, RULESET, REGISTRY, commands=COMMANDS)
    assert "| backend=\"eager\" | fails | `torch._dynamo.exc.Unsupported: Data-dependent branching` |" in comment
    assert_golden(comment, GOLDEN / "comment_ladder_limitation.md")


@pytest.mark.parametrize("category", [c for c in CATEGORY_IDS if c not in ("unknown", "not_pt2")])
def test_comment_names_its_category_and_shows_the_evidence(category):
    report = report_for(category)
    comment = render_comment(report, RULESET, REGISTRY, commands=COMMANDS)
    assert comment.startswith(COMMENT_MARKER + "\n") and is_bot_comment(comment)
    assert f"(`{report.classification.category}`)" in comment.splitlines()[1]
    assert "reproduced (1/1 runs) on CPU with torch 2.13.0+cpu" in comment
    assert "#### Next steps" in comment and "Commands I understand" in comment


def test_graph_break_comment_explains_the_break_from_torchs_registry():
    comment = render_comment(report_for("graph_break"), RULESET, REGISTRY)
    assert re.search(r"\*\*Graph break \[GB\d{4}\]\(https://meta-pytorch\.github\.io/compile-graph-break-site/gb/gb\d{4}\.html\)", comment)


def test_log_excerpts_quote_the_lines_an_oncall_reads_first():
    log = "noise\nRecompiling function scale in /x.py:3\n    triggered by the following guard failure(s):\n" \
          "    - 0/0: factor == 0\nmore noise\nnoise\nnoise\nRecompiling function scale in /x.py:3\n"
    quoted = excerpt(log, ("Recompiling function", "guard failure"), context=2, max_lines=60)
    assert quoted.splitlines() == ["Recompiling function scale in /x.py:3",
                                   "    triggered by the following guard failure(s):",
                                   "    - 0/0: factor == 0", "more noise"]


def test_a_huge_log_is_trimmed_to_githubs_limit_and_the_comment_says_so():
    report = report_for("backend_compiler_failed")
    huge = "\n".join(f"error: line {i} " + "x" * 200 for i in range(60_000))  # ~13 MB of matching lines
    run = report.reproduction.runs[0]
    run = RunRecord(**{**run.__dict__, "output_tail": huge})
    report = TriageReport(**{**report.__dict__, "reproduction": Reproduction(**{**report.reproduction.__dict__, "runs": (run,)}),
                             "repro_source": "x = 1\n" * 30_000, "minimized": None})
    comment = render_comment(report, RULESET, REGISTRY, commands=COMMANDS)
    assert len(comment) <= MAX_COMMENT_CHARS
    assert "Trimmed to fit GitHub's comment limit" in comment
    assert comment.count("```") % 2 == 0  # every fence that opens, closes


def hostile_report() -> TriageReport:
    hostile = ("```\n</details><details open><summary>@pytorch/team look</summary>\n<script>alert(1)</script>\n"
               f"{COMMENT_MARKER}\ncc @ezyang #123\n")
    classification = Classification("graph_break", 0.9, "graph_break|Unsupported|x",
                                    (Evidence(3, "Unsupported: ``` @pytorch/team <img src=x onerror=alert(1)>"),))
    run = RunRecord(purpose="first run", env={}, status="failed", exit_code=1, signal=None, duration_s=1.0,
                    peak_rss_bytes=None, limits_fired=(), network_isolated=True, warm=True,
                    classification=classification, output_tail="Graph break in user code\n" + hostile * 3)
    reproduction = Reproduction(status="reproduced", reproduced=True, runs_total=1, runs_reproduced=1, device="cpu",
                                category_from_text=None, category_from_run="graph_break", category_changed=False,
                                summary="Reproduced @pytorch/team <b>bold</b>", runs=(run,))
    return TriageReport(classification=classification, source="issue", reproduction=reproduction,
                        repro_source="print('''" + hostile + "''')\n", title="@everyone ```")


def test_hostile_text_cannot_break_out_mention_or_inject_html():
    comment = render_comment(hostile_report(), RULESET, REGISTRY)
    outside_code = strip_code(comment)
    assert "@pytorch/team" not in outside_code and "@ezyang" not in outside_code
    assert "<script>" not in outside_code and "<img" not in outside_code
    assert "<details open>" not in outside_code
    assert comment.count(COMMENT_MARKER) == 1  # a repro printing our marker cannot fake a second one
    assert outside_code.count("<details>") == outside_code.count("</details>")


def strip_code(markdown: str) -> str:
    """The markdown with fenced blocks and code spans removed: what GitHub would interpret."""
    out, fence = [], None
    for line in markdown.splitlines():
        match = re.match(r"^(`{3,})", line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if line.strip() == fence:
                fence = None
            continue
        out.append(without_code_spans(line))
    assert fence is None, "a code fence was left open"
    return "\n".join(out)


def test_pending_comment_carries_the_marker_and_the_verdict_from_text():
    classification = CLASSIFIER.classify_text(first_case("graph_break")["body"])
    comment = render_pending_comment(classification, RULESET, "gpu", REGISTRY)
    assert is_bot_comment(comment) and "Reproducing on a gpu runner" in comment
    assert "(`graph_break`)" in comment


def test_a_plain_reproduction_is_said_once_in_the_verdict_line_not_again_below_it():
    comment = render_comment(report_for("graph_break"), RULESET, REGISTRY)
    assert "reproduced (1/1 runs) on CPU with torch 2.13.0+cpu**\n\n#### Evidence" in comment
    assert "Reproduced on cpu" not in comment


def test_the_reproduction_summary_is_shown_whenever_it_says_more_than_the_verdict():
    report = report_for("graph_break")
    plain = report.reproduction

    def summary_shown(**changes) -> bool:
        changed = replace(report, reproduction=replace(plain, **changes))
        return changes.get("summary", plain.summary) in render_comment(changed, RULESET, REGISTRY)

    assert summary_shown(status="flaky", runs_total=3, runs_reproduced=2,
                         summary="Flaky on cpu with torch 2.13.0+cpu: graph_break in 2 of 3 runs.")
    assert summary_shown(summary="Reproduced on cpu with torch 2.13.0+cpu: dynamic_shapes (1/1 runs).")
    assert summary_shown(summary="Reproduced on cpu with torch 2.13.0+cpu: graph_break (1/1 runs); the import of `math` was added.")
    assert summary_shown(status="not_reproduced", reproduced=False, runs_reproduced=0,
                         summary="Not reproduced here (on cpu with torch 2.13.0+cpu): it ran without failing.")
    no_version = replace(report, machine=None)
    assert plain.summary in render_comment(no_version, RULESET, REGISTRY)  # the verdict names no place then


def test_a_verified_fix_is_celebrated_with_a_stable_but_varied_line():
    lines = {celebration(TriageReport(classification=Classification("accuracy", 1, f"sig{i}"), source="issue",
                                      issue_number=i)) for i in range(40)}
    assert len(lines) > 2
    report = report_for("accuracy")
    assert celebration(report) in render_comment(report, RULESET, REGISTRY, fixed=True)
    assert celebration(report) not in render_comment(report, RULESET, REGISTRY)


def test_a_fix_is_verified_only_against_an_earlier_reproduction():
    before = report_for("accuracy")
    clean = Reproduction(**{**before.reproduction.__dict__, "status": "not_reproduced", "reproduced": False,
                            "runs_reproduced": 0})
    passing = RegressionTest(**{**before.regression_test.__dict__, "verification": "passes"})
    after = TriageReport(**{**before.__dict__, "reproduction": clean, "regression_test": passing})
    assert fix_verified(before, after)
    assert not fix_verified(None, after)  # never reproduced here: could be the environment, not a fix
    assert not fix_verified(before, before)
    still_failing = TriageReport(**{**after.__dict__, "regression_test": before.regression_test})
    assert not fix_verified(before, still_failing)


# Whatever a report's strings say, the comment shows them as text: a backtick cannot end a code span,
# a blank line cannot start a paragraph of the bot's own, and nothing becomes a mention, an image,
# HTML, a table cell or a marker of ours. The report is read from a runner's artifact: any string in
# it may be forged (tool_version and test names as much as the log).
PAYLOAD = ("x`\n\n@octo-org/team ![i](https://e.example/i.png) <img src=https://e.example/i> "
           f"{COMMENT_MARKER} <!-- pt2-triage:ci-failure --> a|b `")
MENTION = re.compile(r"(?<![\w.+-])@(?=[A-Za-z0-9])")
OUR_TAGS = {COMMENT_MARKER, "<details>", "<details open>", "<summary>", "</summary>", "</details>", "<sub>", "</sub>"}


def poisoned(value):
    """`value` with every string in it (fields of dataclasses, tuples, dict keys and values) replaced by PAYLOAD."""
    if isinstance(value, str):
        return PAYLOAD
    if is_dataclass(value):
        return replace(value, **{f.name: poisoned(getattr(value, f.name)) for f in fields(value) if f.init})
    if isinstance(value, tuple):
        return tuple(poisoned(item) for item in value)
    if isinstance(value, dict):
        return {poisoned(key): poisoned(item) for key, item in value.items()}
    return value


def fully_filled_report() -> TriageReport:
    """A report with every part the comment can show: a changed category, silent checks, a stage that
    stopped, the ladder, a disposition with a workaround, an unsure first guess, a test and its suggestion."""
    from bot.core.disposition import Disposition
    from bot.core.ladder import RungResult
    from bot.core.report import LadderReport, SilentCheck, Workaround

    report = report_for("graph_break")
    classification = replace(report.classification, unsure=True, runner_up="dynamic_shapes",
                             alternatives=(("graph_break", 0.5), ("dynamic_shapes", 0.3)))
    reproduction = replace(report.reproduction, category_changed=True, category_from_text="dynamic_shapes",
                           script_changed="import added", next_step="run it on a GPU", reason="needs_gpu",
                           silent=(SilentCheck("accuracy", True, "max abs diff 0.5"),))
    ladder = LadderReport(rungs=(RungResult("eager", 'backend="eager"', "fails", "graph_break", "Unsupported: x"),),
                          layer="dynamo", owner="Dynamo", sentence="Dynamo owns it.", workarounds=("fullgraph=False",))
    disposition = Disposition("limitation", "fundamental", "the break is fundamental", "documented", ("torch_cond",),
                              ("Use torch.cond.",))
    workaround = Workaround("torch_cond", "the if became torch.cond", "import torch\n", True, "ran clean")
    suggestion = replace(report.test_suggestion, test_class="TestRepros", alternatives=("test/a.py", "test/b.py"))
    return replace(report, classification=classification, reproduction=reproduction, ladder=ladder,
                   disposition=disposition, workaround=workaround, test_suggestion=suggestion,
                   stage_errors={"minimize": "RuntimeError: boom"})


def hostile_variants() -> list[TriageReport]:
    """The filled report with every string forged (its category stays one the ruleset knows), as it
    reproduced and as it did not (the verdict and header then say other things)."""
    forged = poisoned(fully_filled_report())
    forged = replace(forged, classification=replace(forged.classification, category="graph_break"))
    not_reproduced = replace(forged.reproduction, reproduced=False, status=PAYLOAD)
    return [forged, replace(forged, reproduction=not_reproduced)]


def assert_inert(markdown: str, marker: str | None = COMMENT_MARKER) -> None:
    """Nothing of PAYLOAD is live: no mention, image, tag or marker of its own, no table row split."""
    assert markdown.count("<!--") == (1 if marker else 0) and markdown.startswith(marker or "")
    live = strip_code(markdown)
    assert MENTION.search(live) is None, [line for line in live.splitlines() if MENTION.search(line)]
    assert "![" not in live and "](https://e.example" not in live
    assert set(re.findall(r"<[^<>]*>", live)) <= OUR_TAGS
    for table in re.findall(r"(?m)(?:^\|.*\n)+", markdown):
        cells = [len(re.findall(r"(?<!\\)\|", row)) for row in table.splitlines()]
        assert set(cells) == {cells[0]}, table  # each row has the header's columns


@pytest.mark.parametrize("variant", range(2))
def test_every_string_of_a_forged_report_stays_text_in_the_comment(variant):
    report = hostile_variants()[variant]
    assert_inert(render_comment(report, RULESET, REGISTRY, commands=COMMANDS))


@pytest.mark.parametrize("added_to_existing", (True, False))
def test_every_string_of_a_forged_report_stays_text_in_the_draft_pr_body(added_to_existing):
    """templates/draft_pr.md.j2, as the App renders it (bot/app/publish.py), from the same forged report."""
    from bot.app.publish import TestChange, pull_request_text

    report = hostile_variants()[0]
    _, body = pull_request_text(report, 12, TestChange(PAYLOAD, "", added_to_existing), RULESET)
    assert_inert(body, marker=None)
