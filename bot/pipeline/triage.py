"""The full local triage: extract → classify → reproduce → minimize → ladder → dispose → suggest → regress → report.

Each stage is a call into the module that owns it; this file only sequences them, times them and
decides what to skip (no repro in the issue: nothing to run; not reproduced: nothing to minimize).
Processes start only through the `runner` it is given (the sandbox, or warm workers).
"""
from __future__ import annotations

import logging
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from runners.safefs import remove_tree
from runners.sandbox import RunSpec

from bot.pipeline import outdir
from bot.pipeline.budget import Budget
from bot.core.classify import Classifier
from bot.core.commands_table import load_command_help
from bot.pipeline.comment import render_comment
from bot.core.extract import MAX_MARKDOWN_CHARS, request_from_text
from bot.pipeline.minimize import MinimizeResult, Minimizer, NotReproducible
from bot.pipeline.speculate import Speculation
from bot.core import disposition as disposition_rules
from bot.core import outcome
from bot.core.disposition import Disposition
from bot.core.records import Classification, TriageRequest
from bot.core.source import code_lines, with_backend
from bot.pipeline.regress import generate, one_line, verification_verdict
from bot.pipeline.test_patch import patch_adding
from bot.core.report import (LadderReport, MachineEnvironment, MinimizedRepro, RegressionTest, Reproduction, RunRecord,
                             TestSuggestion, TriageReport, Workaround)
from bot.pipeline.ladder import LadderRunner, Target, deciding_record, disposition_facts, try_workarounds
from bot.pipeline.reproduce import (ALWAYS_ENV, ReproduceOptions, Reproducer, Runner, needs_gpu, output_text,
                                    record_reproduces)
from bot.pipeline.placement import FailureTouches, frames_of, read_checkout, suggest_test_file

log = logging.getLogger(__name__)

STAGES = ("extract", "classify", "reproduce", "minimize", "ladder", "dispose", "suggest", "regress", "graph", "write")  # in report.stage_seconds
# Stages that refine what reproduce found: an internal error in one is reported (report.stage_errors)
# and the triage goes on without it, so the verdict and the reproduction are never lost to it.
REFINING_STAGES = frozenset({"minimize", "ladder", "dispose", "suggest", "regress", "graph"})
Progress = Callable[[str, str, float], None]  # (stage, what happened, seconds)


@dataclass(frozen=True)
class TriageOptions:
    out_dir: Path
    issue_number: int | None = None
    issue_url: str | None = None  # what the generated test and the PR name (never a local path)
    ladder: bool = True
    pytorch_root: Path | None = None
    device: str = "auto"
    minimize_budget_s: float = 300
    # A repro of this many code lines or fewer is already what a maintainer would write (issue 15's bar
    # for a minimized transformer): minimizing it costs runs (on a GPU, cold ones of 15-25 s) and gains nothing.
    minimize_above_lines: int = 8
    total_budget_s: float = 300  # the whole triage (bot/pipeline/budget.py splits it across the stages)
    run_timeout_s: float = 300
    minify_graph: bool = True
    graph_repro_min_lines: int = 20  # torch's FX-graph minifier only for a source repro still this long
    jobs: int = 2
    # minimize on warm workers beside the reproduction's cold run, kept when the reproduction shows
    # the failure it presumed (bot/pipeline/speculate.py)
    minimize_beside_reproduction: bool = True


@dataclass
class TriageRun:
    """What the stages have produced so far."""

    request: TriageRequest
    script: str | None
    text_classification: Classification
    classification: Classification
    budget: Budget
    reproduction: Reproduction | None = None
    minimized: MinimizedRepro | None = None
    minimize_result: MinimizeResult | None = None  # its runs of the result (the ladder's), its candidates' backend
    suggestion: TestSuggestion | None = None
    regression: RegressionTest | None = None
    ladder: LadderReport | None = None
    disposition: Disposition | None = None
    workaround: Workaround | None = None
    frames: tuple[str, ...] = ()
    reproducer: Reproducer | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # stage -> the internal error that stopped it
    cache_dir: str | None = None  # the minimizer's candidates' compile cache (not the reproduction's)
    # the result's own: the minimizer's last run of its result, then the ladder's, the rewrites' and
    # the test's runs; no candidate wrote in it (Minimizer.verified_result says why)
    verified_cache_dir: str | None = None
    speculation: Speculation | None = None  # the minimize begun beside the reproduction, until adopted or cancelled


def internal_error(exc: Exception) -> str:
    """One line for the report: the exception's type and the start of its message."""
    message = one_line(str(exc), 200)
    return f"internal error: {type(exc).__name__}" + (f": {message}" if message else "")


def read_input(path: Path) -> tuple[str, str | None]:
    """(issue text, script): a `.py` file is the repro itself; anything else is an issue's markdown."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return ("", text) if path.suffix == ".py" else (text, None)


class Triage:
    def __init__(self, classifier: Classifier, runner: Runner, machine: MachineEnvironment, options: TriageOptions,
                 progress: Progress = lambda stage, note, seconds: None):
        self.classifier = classifier
        self.runner = runner
        self.machine = machine
        self.options = options
        self.progress = progress

    def triage(self, input_path: Path) -> TriageReport:
        budget = Budget(self.options.total_budget_s)
        issue_text, script = read_input(input_path)
        # a log-sized input: only its head is searched for code blocks (the classifier scans all of it)
        request = request_from_text(issue_text[:MAX_MARKDOWN_CHARS], source="local_file", reference=str(input_path))
        from_text = self.classifier.classify_text(issue_text)
        run = TriageRun(request, script or next(iter(request.repro_scripts), None), from_text, from_text, budget)
        if run.script is not None and self.test_device(run) == "cpu" and hasattr(self.runner, "prewarm"):
            self.runner.prewarm()  # warm workers start while the cold diagnostic runs go on (GPU runs are all cold)
        run.cache_dir = tempfile.mkdtemp(prefix="pt2-triage-cache-")
        run.verified_cache_dir = tempfile.mkdtemp(prefix="pt2-triage-verified-cache-")
        try:
            self.run_stages(run, request, issue_text)
        finally:
            if run.speculation is not None:
                run.speculation.cancel()  # its runs write in the cache
            remove_tree(run.cache_dir)  # iterative, never through a link: the runs wrote in it
            remove_tree(run.verified_cache_dir)
        return self.report(run)

    def run_stages(self, run: TriageRun, request: TriageRequest, issue_text: str) -> None:
        text = run.text_classification
        self.timed(run, "extract", lambda r: f"{len(request.repro_scripts)} repro script(s) in the issue" if issue_text
                   else "the input is a script")
        self.timed(run, "classify", lambda r: f"from the text: {text.category} ({text.confidence:.2f})" if issue_text
                   else "deferred to the run's output")
        for name, step in (("reproduce", self.reproduce), ("minimize", self.minimize), ("ladder", self.ladder),
                           ("dispose", self.dispose), ("suggest", self.suggest), ("regress", self.regress),
                           ("graph", self.graph)):
            self.timed(run, name, step)
        self.timed(run, "write", lambda r: self.write(self.report(r)))

    def timed(self, run: TriageRun, name: str, step: Callable[[TriageRun], str]) -> None:
        started = time.monotonic()
        try:
            line = step(run)
        except Exception as exc:  # noqa: BLE001 (a refining stage's bug must not cost the verdict)
            if name not in REFINING_STAGES:
                raise
            log.exception("internal error in the %s stage", name)
            run.errors[name] = line = internal_error(exc)
        run.seconds[name] = round(time.monotonic() - started, 2)
        self.progress(name, line, run.seconds[name])

    # -- stages: each returns one line for the progress output ------------------------------------

    def reproduce(self, run: TriageRun) -> str:
        if run.script is None:
            return "skipped: no runnable repro (a fenced Python block that imports torch) in the input"
        options = ReproduceOptions(timeout_s=run.budget.run_timeout(self.options.run_timeout_s, share=0.5),
                                   device=self.options.device, minify_graph=self.options.minify_graph)
        reproducer = run.reproducer = Reproducer(self.classifier, self.runner, self.machine, options, self.options.out_dir)
        issue_text = run.request.text or None
        run.speculation = self.minimize_beside(run)
        run.reproduction = reproducer.reproduce(run.script, issue_text)
        run.classification = reproducer.final_classification(issue_text, run.reproduction)
        run.script = reproducer.script_used or run.script  # with an obvious missing import added, if it needed one
        deciding = next((r for r in run.reproduction.runs if record_reproduces(r)), None)
        if deciding is not None:
            run.frames = frames_of(self.classifier.final_error(deciding.output_tail))
            self.check_reported_error(run, deciding)
        return run.reproduction.summary

    def check_reported_error(self, run: TriageRun, deciding: RunRecord) -> None:
        """A run that fails with another exception, of another category, than the one the report
        shows did not reproduce the report: "not reproduced (fails_differently)", with both errors
        named and the text's category as the verdict."""
        text = run.text_classification
        reason = text.is_pt2 and outcome.reported_error_absent(
            text.exception_type, text.category, deciding.exception, deciding.classification.category,
            run.request.environment.torch_version, self.machine.torch_version)
        if reason:
            self.mark_not_reproduced(run, reason)
            run.classification = text

    def minimizer(self, run: TriageRun, runner: Runner, budget_s: float, presume: bool = False) -> Minimizer:
        return Minimizer(self.classifier, runner, budget_s=budget_s, timeout_s=min(self.options.run_timeout_s, 120),
                         parallelism=self.options.jobs, gpu=self.test_device(run) == "cuda", stop_when_eager_shares=True,
                         cache_dir=run.cache_dir, verify_cache_dir=run.verified_cache_dir, presume=presume)

    def minimize_beside(self, run: TriageRun) -> Speculation | None:
        """The minimize, begun now beside the reproduction, where the minimize stage would run one on
        warm workers (CPU): the reproduction's cold run leaves a core idle (bot/pipeline/speculate.py)."""
        if not (self.options.minimize_beside_reproduction and self.options.jobs and hasattr(self.runner, "prewarm")
                and self.test_device(run) == "cpu" and code_lines(run.script) > self.options.minimize_above_lines):
            return None
        budget_s = run.budget.minimize_budget(self.options.minimize_budget_s)
        if not budget_s:
            return None
        return Speculation.start(lambda gated: self.minimizer(run, gated, budget_s, presume=True), self.runner,
                                 run.script, self.options.jobs)

    def minimize(self, run: TriageRun) -> str:
        speculation, run.speculation = run.speculation, None
        try:
            return self.minimize_reproduced(run, speculation)
        finally:
            if speculation is not None:
                speculation.cancel()  # (nothing to stop once adopted)

    def minimize_reproduced(self, run: TriageRun, speculation: Speculation | None) -> str:
        if not (run.reproduction and run.reproduction.reproduced and run.script):
            return "skipped: nothing reproduced to minimize"
        deciding = next((r for r in run.reproduction.runs if record_reproduces(r)), None)
        if deciding is None:
            return "skipped: a silent failure (measured by a differential run); the minimizer shrinks failing runs"
        if code_lines(run.script) <= self.options.minimize_above_lines:
            return (f"skipped: the repro is {code_lines(run.script)} code lines already, what a maintainer would write "
                    f"(at most {self.options.minimize_above_lines}; `pt2-triage minimize` shrinks it anyway)")
        try:
            result = speculation.adopt(run.script, deciding) if speculation is not None else None
            begun = "; begun beside the reproduction" if result is not None else ""
            if result is None:
                budget_s = run.budget.minimize_budget(self.options.minimize_budget_s)
                if not budget_s:
                    return run.budget.spent_note()
                result = self.minimizer(run, self.runner, budget_s).minimize(run.script, reproduced=deciding)
        except NotReproducible as exc:
            return f"skipped: {exc}"
        stats, run.minimized, run.minimize_result = result.stats, result.record(), result
        return f"{stats.lines_before} → {stats.lines_after} lines in {stats.runs} runs ({stats.stop_reason}){begun}"

    def suggest(self, run: TriageRun) -> str:
        category = self.classifier.ruleset.categories[run.classification.category]
        rules, never = self.classifier.ruleset.test_files.rules, self.classifier.ruleset.test_files.never
        code = self.test_source(run) or ""
        touches = FailureTouches(frames=run.frames, code=code, device=self.test_device(run))
        checkout = None
        if self.options.pytorch_root:
            candidates = list(category.test_files) + [rule.file for rule in rules]
            checkout = read_checkout(self.options.pytorch_root, candidates)
        run.suggestion = suggest_test_file(category, touches, rules, never, checkout)
        return f"{run.suggestion.path}: {run.suggestion.reason}" if run.suggestion else f"no test for {category.id}"

    def graph(self, run: TriageRun) -> str:
        """torch's after_aot minifier, last and on the minimized repro: the report is written first
        (complete without it), then again with the FX-graph repro when it finishes."""
        category = self.classifier.ruleset.categories[run.classification.category]
        if not (self.options.minify_graph and run.reproducer and run.reproduction and run.reproduction.reproduced):
            return "skipped: " + ("turned off" if not self.options.minify_graph else "nothing reproduced")
        if "minifier" not in category.artifacts:
            return f"skipped: {category.id} needs no FX-graph repro"
        timeout_s = run.budget.graph_minifier_timeout(run.reproducer.options.minifier_timeout_s)
        lines = code_lines(self.test_source(run) or "")
        if lines < self.options.graph_repro_min_lines:
            return f"skipped: the {'minimized ' if run.minimized else ''}repro is {lines} code lines, small enough without an FX-graph repro"
        if not timeout_s:
            return run.budget.spent_note()
        self.write(self.report(run))
        result = run.reproducer.minify(self.test_source(run), category.id, timeout_s=timeout_s)
        run.reproduction = replace(run.reproduction, minifier=result, artifacts=tuple(run.reproducer.artifacts))
        if result is None:
            return "skipped"
        return f"{'verified' if result.verified else 'not verified'} FX-graph repro in {result.duration_s:.0f} s" \
            if result.repro_source else f"no FX-graph repro ({result.note})"

    def ladder(self, run: TriageRun) -> str:
        target = self.ladder_target(run)
        if target is None or not self.options.ladder:
            return "skipped: " + ("turned off" if target is not None else "nothing reproduced to localize")
        if not run.budget.has_room_for_runs():
            return run.budget.spent_note()
        budget = run.budget.ladder_timeout(min(self.options.run_timeout_s, 3 * target.record.duration_s + 60))
        gpu = self.test_device(run) == "cuda"
        # GPU runs are cold (no warm workers): the rungs run side by side, up to one per 4 cores.
        jobs = max(self.options.jobs, (os.cpu_count() or 1) // 4) if gpu else self.options.jobs
        climber = LadderRunner(self.classifier, self.runner, timeout_s=budget, jobs=jobs, gpu=gpu,
                               cache_dir=run.verified_cache_dir)
        with ThreadPoolExecutor(1) as beside:  # a limitation's workaround is verified while the rungs run
            early = beside.submit(self.workaround_for, run, self.disposition_of(run))
            run.ladder = climber.climb(target)
            run.workaround = early.result()
        if run.ladder.skipped:
            return f"skipped: {run.ladder.skipped}"
        reproduced = bool(run.reproduction and run.reproduction.reproduced)
        not_pt2 = self.classifier.ruleset.not_pt2
        if reproduced and run.ladder.category == not_pt2:
            self.unreproduce(run, target)
        elif not reproduced and run.ladder.category == not_pt2:
            run.classification = target.record.classification  # the run's own verdict, which eager confirms
        elif reproduced and run.ladder.category and run.ladder.category != run.classification.category:
            run.classification = replace(run.classification, category=run.ladder.category,
                                         rule=f"ladder:{run.ladder.layer} ({run.classification.rule})")
        rows = ", ".join(f"{r.rung} {r.outcome}" for r in run.ladder.rungs)
        return f"{run.ladder.owner or 'no rung owns it'}: {rows}"

    def unreproduce(self, run: TriageRun, target: Target) -> None:
        """The run failed, but with the compiler off it fails the same way: no PT2 failure was
        reproduced. The verdict is the text's when the text speaks of a PT2 failure (it may be
        fixed since), else the run's error, which eager shares: not PT2."""
        record = target.record
        reason = outcome.eager_shares_reason(record.exception, record.status, run.request.environment.torch_version,
                                             self.machine.torch_version, run.ladder.rungs[0].exception)
        self.mark_not_reproduced(run, reason)
        run.classification = run.text_classification if run.text_classification.is_pt2 else \
            replace(record.classification, category=self.classifier.ruleset.not_pt2, is_pt2=False,
                    rule=f"ladder:{run.ladder.layer}")

    def mark_not_reproduced(self, run: TriageRun, reason: outcome.Reason) -> None:
        reproduction = run.reproduction
        run.reproduction = replace(
            reproduction, status="not_reproduced", reproduced=False, runs_reproduced=0, category_changed=False, reason=reason.code,
            reason_text=reason.sentence, next_step=reason.next_step,
            summary=outcome.summary_sentence("not_reproduced", None, 0, reproduction.runs_total, reproduction.device,
                                     self.machine.torch_version, reason.sentence))

    def ladder_target(self, run: TriageRun) -> Target | None:
        """The minimized repro (else the repro) and its failure; a run that failed with an error the
        classifier calls not PT2 climbs too: the compiler-off rung tells the code's own error
        (user_error) from a compiler failure that looks like one. A run that stopped before the bug
        (an option of another torch) does not."""
        record = deciding_record(run.reproduction)
        category = run.classification.category
        last = run.reproduction.runs[-1] if run.reproduction and run.reproduction.runs else None
        if record is None and last is not None and last.failed and not last.blocked:
            record = last  # (a blocked run never reached the bug: nothing to localize)
            category = record.classification.category
        if record is None or run.script is None:
            return None
        if run.minimized and run.minimized.signature_preserved:
            return Target(run.minimized.source, "minimized", category, record,
                          known=run.minimize_result.runs if run.minimize_result else {})
        return Target(run.script, "repro", category, record)

    def dispose(self, run: TriageRun) -> str:
        run.disposition = self.disposition_of(run)
        if not run.disposition.workarounds:
            run.workaround = None  # verified beside the ladder for a disposition the ladder then changed
        elif run.workaround is None or run.workaround.kind not in run.disposition.workarounds:
            run.workaround = self.workaround_for(run, run.disposition)
        shown = f"; workaround {run.workaround.kind} {'verified' if run.workaround.verified else 'not verified'}" \
            if run.workaround else ""
        return f"{run.disposition.kind} ({run.disposition.rule}){shown}"

    def disposition_of(self, run: TriageRun) -> Disposition:
        """The first rule that holds. One that holds only on a run's word (`verified`: Inductor's
        random numbers explain a mismatch only if eager's make it go away) gets that run first: its
        workaround's rewrite of the script that ran, which must run clean where that script failed."""
        ran = self.ran_script(run)
        facts = disposition_facts(run.reproduction, run.script, run.request.text or "", run.ladder, ran)
        table = self.classifier.ruleset.dispositions
        kinds = disposition_rules.to_verify(table, facts)
        record = deciding_record(run.reproduction)
        if kinds and ran is not None and record is not None and record.failed:
            found = self.try_rewrites(run, kinds, ran)
            if found is not None and found.verified:
                facts, run.workaround = replace(facts, verified=(found.kind,)), found
        return disposition_rules.decide(table, facts)

    def ran_script(self, run: TriageRun) -> str | None:
        """The minimized repro where it fails as the script did, else the script."""
        return run.minimized.source if run.minimized and run.minimized.signature_preserved else run.script

    def workaround_for(self, run: TriageRun, disposition: Disposition) -> Workaround | None:
        if not disposition.workarounds or run.script is None:
            return None
        return self.try_rewrites(run, disposition.workarounds, run.script)

    def try_rewrites(self, run: TriageRun, kinds: tuple[str, ...], script: str) -> Workaround | None:
        record = deciding_record(run.reproduction)
        if record is None:
            return None
        return try_workarounds(kinds, script, record.output_tail, self.runner,
                               timeout_s=run.budget.run_timeout(self.options.run_timeout_s), gpu=self.test_device(run) == "cuda",
                               backend=run.minimize_result.backend if run.minimize_result else None)

    def regress(self, run: TriageRun) -> str:
        plan = self.classifier.ruleset.regression_plans.get(run.classification.category)
        source = self.test_source(run)
        if run.disposition and not run.disposition.wants_regression_test:
            return f"skipped: a {run.disposition.kind.replace('_', ' ')} gets no regression test ({run.disposition.rule})"
        if run.reproduction and run.reproduction.reason == "fails_differently":
            return "skipped: the script fails here with another error than the report's; a test would guard neither"
        if plan is None or source is None:
            return "skipped: " + ("no repro to turn into a test" if source is None else
                                  f"no regression test for {run.classification.category}")
        cheap = run.ladder.cheapest_backend if run.ladder else None
        if cheap and cheap != "inductor":
            test, (verdict, sentence, signature) = self.generate_and_verify(run, with_backend(source, cheap), plan)
            if verdict == "fails_same":
                return self.keep_test(run, test, verdict, f"{sentence} (backend={cheap!r}, the cheapest that fails)", signature)
        test, (verdict, sentence, signature) = self.generate_and_verify(run, source, plan)
        return self.keep_test(run, test, verdict, sentence, signature)

    def generate_and_verify(self, run: TriageRun, source: str, plan):
        graph_break = self.classifier.registry.get(run.classification.graph_break_id) \
            if self.classifier.registry and run.classification.category == "graph_break" else None
        test = generate(source, run.classification, plan, device=self.test_device(run),
                        issue_number=self.options.issue_number, graph_break_title=graph_break.gb_type if graph_break else None,
                        reference=self.reference(), torch_version=self.machine.torch_version)
        return test, self.verify(run, test.file_source)

    def reference(self) -> str | None:
        """How the generated test names the issue: its URL, else its number; never a local path."""
        if self.options.issue_url:
            return self.options.issue_url
        return f"issue #{self.options.issue_number}" if self.options.issue_number else None

    def keep_test(self, run: TriageRun, test, verdict: str, sentence: str, signature: str | None) -> str:
        run.regression = RegressionTest(
            test_name=test.test_name, class_name=test.class_name, assertion=test.assertion, device=test.device,
            method_source=test.method_source, file_source=test.file_source, verification=verdict,
            verification_note=sentence, failure_signature=signature, patch=self.patch(run, test))
        return f"{test.class_name}.{test.test_name}: {sentence}"

    def verify(self, run: TriageRun, test_source: str) -> tuple[str, str, str | None]:
        """Run the generated test in the sandbox; it must fail now, like the repro."""
        status = run.reproduction.status if run.reproduction else None
        if status not in ("reproduced", "flaky", "not_reproduced"):  # not_reproduced: the test shows a fix
            why = {"needs_gpu": "it needs a CUDA GPU; a GPU runner verifies it", None: "there was no repro to run"}
            return "not_run", f"not run: {why.get(status, f'the repro run ended with {status}')}", None
        result = self.runner(RunSpec(script=test_source, env=dict(ALWAYS_ENV), timeout_s=run.budget.run_timeout(self.options.run_timeout_s),
                                     gpu=self.test_device(run) == "cuda", cache_dir=run.verified_cache_dir))
        got = self.classifier.classify_text(output_text(result), context=test_source)
        verdict, sentence = verification_verdict(self.expected_failure(run), got, result.status)
        return verdict, sentence, got.signature if result.status != "ok" else None

    @staticmethod
    def expected_failure(run: TriageRun):
        """What the test must fail with: the failure of the script it was made from (the minimized
        repro's own, where its category matches on itself alone: an accuracy check's words)."""
        final = run.minimized.final_signature if run.minimized and run.minimized.signature_preserved else None
        return replace(run.classification, signature=final) if final else run.classification

    def patch(self, run: TriageRun, test) -> str | None:
        """A unified diff adding the method to the suggested file, when a checkout has that file."""
        suggestion = run.suggestion
        if not (self.options.pytorch_root and suggestion and suggestion.confirmed):
            return None
        before = (self.options.pytorch_root / suggestion.path).read_text(encoding="utf-8", errors="replace")
        return patch_adding(suggestion.path, before, test, suggestion.test_class)

    # -- helpers ------------------------------------------------------------------------------------

    def test_source(self, run: TriageRun) -> str | None:
        return run.minimized.source if run.minimized else run.script

    def test_device(self, run: TriageRun) -> str:
        if run.reproduction:
            return run.reproduction.device
        return "cuda" if run.script and needs_gpu(run.script, self.options.device) else "cpu"

    def report(self, run: TriageRun) -> TriageReport:
        return TriageReport(
            classification=run.classification, source="local_file", reference=run.request.reference,
            reporter_environment=run.request.environment, machine=self.machine, reproduction=run.reproduction,
            issue_number=self.options.issue_number, title=None, repro_source=run.script, minimized=run.minimized,
            test_suggestion=run.suggestion, regression_test=run.regression, ladder=run.ladder,
            disposition=run.disposition, workaround=run.workaround, stage_seconds=dict(run.seconds),
            stage_errors=dict(run.errors))

    def write(self, report: TriageReport) -> str:
        out = self.options.out_dir
        written = {"report.json": report.to_json(),
                   "comment.md": render_comment(report, self.classifier.ruleset, self.classifier.registry,
                                                commands=load_command_help())}
        if report.minimized or report.repro_source:
            written["repro_min.py"] = report.minimized.source if report.minimized else report.repro_source
        if report.regression_test:
            written["test_regression.py"] = report.regression_test.file_source
            if report.regression_test.patch:
                written["test.patch"] = report.regression_test.patch
        for name, text in written.items():
            outdir.write_text(out, name, text)
        return ", ".join(written)
