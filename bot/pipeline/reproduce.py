"""Reproduce a repro the way a PT2 oncall would (policy; processes are started only by runners/).

1. Classify what the reporter said (if there is an issue) to pick the first diagnostics.
2. Run. A failure is what the launcher saw (a non-zero exit, a signal, the bootstrap's record of an
   uncaught exception), never text the run printed. The output is classified with that record last.
   If the category differs from the text's (or there was no text), run again with the real
   category's diagnostics and artifact switches.
3. A snippet that fails with NameError for an obvious name (`nn`, `F`, `np`, ...) runs once more with
   that import added, and the report says so.
4. A run that passed is measured for the silent failures the text or the category calls for
   (accuracy, performance, recompilation), by the in-run probe: compiled against eager on the same
   inputs, per-call timings, recompile counters.
5. With `runs > 1`, run the reproducing configuration again to tell a steady failure from a flaky one.
6. For compile and accuracy failures, `minify` drives torch's after_aot minifier and checks its
   repro.py; the triage calls it last, on the minimized repro (on the full model it took minutes).
7. Not reproduced: say why (rules/reproduction.yaml and bot/outcome.py), with a next step.
Nothing here knows how to start a process: it builds RunSpecs and reads RunResults.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from runners.artifacts import collect_artifacts, render_tlparse
from runners.safefs import remove_tree
from runners.minifier import run_after_aot_minifier
from runners.sandbox import RunResult, RunSpec

from bot.core import outcome

from bot.pipeline import outdir
from bot.core.classify import Classifier
from bot.core.extract import reporter_environment
from bot.core.features import extract_features
from bot.core.logtext import clean_text
from bot.core.records import Classification, Evidence
from bot.core.report import MachineEnvironment, MinifierResult, Reproduction, RunRecord, SilentCheck
from bot.core.ruleset import Category, Ruleset
from bot.core.signature import make_signature

log = logging.getLogger(__name__)

Runner = Callable[[RunSpec], RunResult]
MINIFIER_VARS = ("TORCHDYNAMO_REPRO_AFTER", "TORCHDYNAMO_REPRO_LEVEL")
ALWAYS_ENV = {"PYTHONFAULTHANDLER": "1"}  # a segfault then prints "Fatal Python error" and the stack
PROBE_ENV = "TRIAGE_TORCH_PROBE"
# The compiler off the way the ladder's first rung turns it off: the in-run probe's
# torch.compiler.set_stance("force_eager"). (torch._dynamo.config.disable = True is not that: under
# fullgraph=True it raises "found no compiled frames", so every fullgraph repro "failed without the compiler".)
COMPILER_OFF_ENV = {PROBE_ENV: json.dumps({"compiler": "off"})}
COMPILED_ONLY_NOTE = "the error is raised in the script's own code, and only with the compiler on (it runs clean with the compiler off)"

# A call the compiler-off stance (torch.compiler.set_stance("force_eager")) turns off: torch.compile
# in any spelling (`@torch.compile`, `model.compile()`, `from torch import compile`) or Dynamo's
# optimize. torch.export and AOTInductor trace and build regardless of the stance. Loose on purpose:
# a false match (a comment, `re.compile`) only costs the compiler-off run it would have had anyway.
STANCE_ENTRY_RE = re.compile(r"(?<![\w.])compile\b|\.compile\b|_dynamo\.optimize\b")


# The torch.export and AOTInductor calls the probe's compiler-off run turns into the module run
# eagerly (runners/_torch_probe.py `_export_eagerly`). As loose as STANCE_ENTRY_RE, for the same reason.
EXPORT_ENTRY_RES = (("aoti", re.compile(r"\baoti_(?:compile_and_package|load_package)\b")),
                    ("export", re.compile(r"\bexport(?:_for_training)?\s*\(")))


def export_entry(script: str) -> str | None:
    """"aoti" or "export" where the script builds an AOTInductor package or exports, else None. Its
    compiler-off run replaces them by the module itself, run eagerly: where the script's own check
    fails only with them on, that run tells the failure theirs (fresh_issues_13's package that
    ignored a new value of an input export had fixed)."""
    return next((entry for entry, pattern in EXPORT_ENTRY_RES if pattern.search(script)), None)


def stance_reaches(script: str) -> bool:
    """Whether turning the compiler off can change how `script` runs. A script whose only PT2 calls
    are torch.export / AOTInductor fails the same way with the compiler "off": the run would cost a
    whole export (an AOTInductor C++ build, 13-30 s) and could never tell a candidate apart, and the
    triage read it as "the code's own failure" and minimized no export failure at all."""
    return bool(STANCE_ENTRY_RE.search(script))


TRACE_DIR = "torch_trace"
OUTPUT_TAIL_LINES = 200


@dataclass(frozen=True)
class ReproduceOptions:
    runs: int = 1
    timeout_s: float = 300
    device: str = "auto"  # auto | cpu | cuda
    minify_graph: bool = True
    minifier_timeout_s: float = 900


def plain_diagnostics(category: Category) -> dict[str, str]:
    """The category's variables minus the minifier's: minifying is a separate step."""
    return {**ALWAYS_ENV, **{k: v for k, v in category.diagnostics.env.items() if k not in MINIFIER_VARS}}


def diagnostics_env(category: Category, *, collect_artifacts: bool) -> dict[str, str]:
    """The env of a diagnostics run: `plain_diagnostics` plus the switches for the artifacts the
    category wants."""
    env = plain_diagnostics(category)
    if collect_artifacts and "compile_debug" in category.artifacts:
        env["TORCH_COMPILE_DEBUG"] = "1"
    if collect_artifacts and "trace" in category.artifacts:
        env["TORCH_TRACE"] = TRACE_DIR  # relative: lands in the run's working directory
    return env


def needs_gpu(script: str, device: str) -> bool:
    return device == "cuda" or (device == "auto" and reporter_environment(script).needs_gpu)


def output_text(result: RunResult) -> str:
    """What the classifier reads of a run (bot/outcome.py: the launcher's record of how it ended last)."""
    return outcome.evidence_text(result)


def reproduces(classification: Classification, run_status: str, failed: bool | None = None) -> bool:
    """A run shows the failure when the launcher saw it fail and the compiler stack is implicated.
    (`run_status` alone, for records written before `failed` existed: not "ok".)"""
    if not classification.is_pt2:  # the verdict "not a compiler failure" (categories.yaml `pt2: false`)
        return False
    return failed if failed is not None else run_status != "ok"


def record_reproduces(record: RunRecord) -> bool:
    return reproduces(record.classification, record.status, record.failed) and not record.blocked


def decide_status(records: list[RunRecord], hits: int) -> str:
    """reproduced / flaky / timeout / limit / crashed / not_reproduced (pure)."""
    if hits and hits == len(records):
        return "reproduced"
    if hits:
        return "flaky"
    statuses = {r.status for r in records}
    for status, name in (("timeout", "timeout"), ("limit", "limit"), ("crashed", "crashed")):
        if status in statuses:
            return name
    return "not_reproduced"


def silent_kinds(ruleset: Ruleset, text_category: str | None, run_category: str | None,
                 issue_text: str | None) -> tuple[str, ...]:
    """Which silent failures to measure (categories with a `differential` in categories.yaml): those
    the text's or the run's category is, and those the prose describes."""
    features = extract_features(issue_text, ruleset.features).names if issue_text else frozenset()
    return tuple(c.id for c in ruleset.categories.values() if c.differential
                 and (c.id in (text_category, run_category) or c.differential.prose in features))


def reproduces_report(kind: str, text_category: str | None, asked: tuple[str, ...]) -> bool:
    """Whether a silent finding of `kind` is the failure the report is about: the text's category,
    one its prose describes (`asked`), or any when the text names no PT2 category. A report of a
    crash whose run now passes with a graph break (#100697: frexp's `out=` asserted inside Dynamo
    and is a graph break on a later torch) is not reproduced by that graph break: the crash is gone,
    and the measurement is shown beside the verdict."""
    return text_category is None or kind in asked


def machine_environment(probe: dict) -> MachineEnvironment:
    """The probe's plain dict (runners/probe.py) as a report record."""
    known = MachineEnvironment.__dataclass_fields__
    return MachineEnvironment(**{k: v for k, v in probe.items() if k in known})


def silent_classification(check: SilentCheck) -> Classification:
    """The verdict a differential run gives: its kind, with the measurement as evidence."""
    return Classification(category=check.kind, confidence=0.9, signature=make_signature(check.kind, None, check.summary),
                          evidence=(Evidence(0, check.summary),), rule=f"differential:{check.kind}", decided_by="run")


class Reproducer:
    def __init__(self, classifier: Classifier, runner: Runner, machine: MachineEnvironment,
                 options: ReproduceOptions = ReproduceOptions(), out_dir: Path | None = None):
        self.classifier = classifier
        self.runner = runner
        self.machine = machine
        self.options = options
        self.out_dir = out_dir
        self.records: list[RunRecord] = []
        self.artifacts: list[str] = []
        self.script_used: str | None = None
        self.script_given: str | None = None
        self.device = "cpu"

    def reproduce(self, script: str, issue_text: str | None = None) -> Reproduction:
        self.script_used = self.script_given = script
        from_text = self.classifier.classify_text(issue_text) if issue_text else None
        text_category = from_text.category if from_text and self.ruleset.is_pt2_category(from_text.category) else None
        device = self.device = "cuda" if needs_gpu(script, self.options.device) else "cpu"
        base = dict(category_from_text=from_text.category if from_text else None, device=device)
        if device == "cuda" and not self.machine.cuda_available:
            return Reproduction(
                status="needs_gpu", reproduced=False, runs_total=0, runs_reproduced=0, category_from_run=None,
                category_changed=False, reason="needs_gpu", reason_text="the repro needs a CUDA GPU and this runner has none",
                next_step="A GPU runner reproduces it: `@pt2-triage run gpu`.",
                summary="Not run: the repro needs a CUDA GPU and this machine has none; the category comes from the text only.",
                **base)
        if outcome.notebook_only(issue_text or "", script):
            return self._not_reproduced(base, "notebook_only", "the repro is a notebook (IPython magics), not a script",
                                        "Post the notebook's code as a plain script.")

        first = self._first_runs(script, text_category)
        final = first
        category = first.classification.category
        changed = text_category is not None and category != text_category and first.classification.is_pt2
        if record_reproduces(first) and (changed or text_category is None):
            final = self.run(self.script_used, diagnostics_env(self.category(category), collect_artifacts=bool(self.out_dir)),
                             f"diagnostics for {category}", keep=bool(self.out_dir))
        checks = [final] + [self.run(self.script_used, final.env, "flakiness check") for _ in range(self.options.runs - 1)]
        hits = sum(1 for r in checks if record_reproduces(r))
        if hits:
            return self._reproduced(base, checks, hits, changed)
        # the run's category may come from a passing run's log lines: evidence that calls for a
        # measurement (Dynamo's own counters), never a reproduction by itself; and what it measures
        # reproduces the report only when the report asked for it (below)
        asked = silent_kinds(self.ruleset, text_category, None, issue_text)
        silent = tuple(check if not check.reproduced or reproduces_report(check.kind, text_category, asked)
                       else replace(check, reproduced=False, summary=f"{check.summary} (not the failure the report describes)")
                       for check in self._silent(text_category, category, issue_text))
        if any(check.reproduced for check in silent):
            found = next(check for check in silent if check.reproduced)
            failing = self._failing_beside_silent(checks, found.kind)
            if failing:  # the script's own check fails, and only compiled: a run the minimizer can shrink
                return self._reproduced(base, failing, len(failing), text_category not in (None, found.kind),
                                        note=COMPILED_ONLY_NOTE, silent=silent)
            return Reproduction(status="reproduced", reproduced=True, runs_total=1, runs_reproduced=1,
                                category_from_run=found.kind, category_changed=text_category not in (None, found.kind),
                                summary=outcome.summary_sentence("reproduced", found.kind, 1, 1, device, self.machine.torch_version,
                                                         silent=found.summary),
                                runs=tuple(self.records), artifacts=tuple(self.artifacts), silent=silent,
                                script_changed=self._script_note(script), **base)
        only_compiled = self._compiled_only(checks, text_category)
        if only_compiled:
            return self._reproduced(base, only_compiled, len(only_compiled),
                                    text_category not in (None, only_compiled[0].classification.category),
                                    note=COMPILED_ONLY_NOTE)
        status = decide_status(checks, 0)
        reason = self._reason(issue_text, status)
        return Reproduction(status=status, reproduced=False, runs_total=len(checks), runs_reproduced=0,
                            category_from_run=final.classification.category, category_changed=False,
                            summary=outcome.summary_sentence(status, None, 0, len(checks), device, self.machine.torch_version,
                                                     reason.sentence if reason else None),
                            runs=tuple(self.records), artifacts=tuple(self.artifacts), silent=silent,
                            reason=reason.code if reason else None, reason_text=reason.sentence if reason else None,
                            next_step=reason.next_step if reason else None, script_changed=self._script_note(script),
                            **base)

    # -- the stages of reproduce() --------------------------------------------------------------------

    def _first_runs(self, script: str, text_category: str | None) -> RunRecord:
        """The first run (with the text's diagnostics when it names a category), and once more with an
        obvious missing import added when the snippet failed only for the want of it."""
        collect = bool(self.out_dir)
        env = diagnostics_env(self.category(text_category), collect_artifacts=collect) if text_category else dict(ALWAYS_ENV)
        purpose = f"diagnostics for {text_category}" if text_category else "first run"
        first = self.run(script, env, purpose, keep=collect and text_category is not None)
        name = _name_error(first)
        fixed = outcome.with_obvious_import(script, name, self.ruleset.reproduction) if name else None
        if fixed is None:
            return first
        self.script_used = fixed
        return self.run(fixed, env, f"{purpose}, with the missing import of `{name}` added",
                        keep=collect and text_category is not None)

    def _failing_beside_silent(self, checks: list[RunRecord], kind: str) -> list[RunRecord] | None:
        """Where a differential run found `kind` (an accuracy mismatch) and the script's own check
        failed too, outside the compiler, in every run (an `assert` on compiled against eager): those
        runs as the reproduction, when the script runs clean with the compiler off. A silent finding
        alone gives the minimizer nothing to shrink; a failing run does (fresh_issues_12's frozen
        weights: 76 lines left whole before)."""
        if kind not in self.ruleset.reproduction["compiled_only"]["text_categories"]:
            return None
        return self._compiled_only(checks, kind)

    def _reproduced(self, base: dict, checks: list[RunRecord], hits: int, changed: bool, note: str = "",
                    silent: tuple = ()) -> Reproduction:
        status = decide_status(checks, hits)
        deciding = next(r for r in checks if record_reproduces(r))
        category = deciding.classification.category
        summary = outcome.summary_sentence(status, category, hits, len(checks), base["device"], self.machine.torch_version)
        return Reproduction(
            status=status, reproduced=True, runs_total=len(checks), runs_reproduced=hits, category_from_run=category,
            category_changed=changed, summary=f"{summary[:-1]}; {note}." if note else summary,
            runs=tuple(self.records), artifacts=tuple(self.artifacts), silent=silent,
            script_changed=self._script_note(None), **base)

    def _compiled_only(self, checks: list[RunRecord], text_category: str | None) -> list[RunRecord] | None:
        """The checks as a reproduction, where every one failed with an error the classifier puts
        outside the compiler (and not before the bug, `blocked`) and the script runs clean with the
        compiler off: the compiler's failure surfacing in the script's own code (outcome.compiled_only).
        One run more, with the compiler off (torch.compile's stance, and torch.export and AOTInductor
        replaced by the module itself); None when that run fails too or turns nothing off."""
        script = self.script_used or ""
        reaches = stance_reaches(script)
        entry = None if reaches else export_entry(script)
        if not checks or not (reaches or entry) or any(
                not r.failed or r.blocked or r.classification.is_pt2 for r in checks):
            return None
        off = self.run(self.script_used, dict(COMPILER_OFF_ENV), "compiler off (the error is outside the compiler)")
        if off.status != "ok":
            return None
        category = outcome.compiled_only_category(text_category, self.ruleset.reproduction["compiled_only"], entry)
        relabelled = {id(r): replace(r, classification=outcome.compiled_only(r.classification, category)) for r in checks}
        self.records = [relabelled.get(id(r), r) for r in self.records]
        return [relabelled[id(r)] for r in checks]

    def _silent(self, text_category: str | None, run_category: str | None, issue_text: str | None) -> tuple[SilentCheck, ...]:
        """Differential runs for the silent failures the text or the category calls for."""
        kinds = silent_kinds(self.ruleset, text_category, run_category, issue_text)
        if not kinds:
            return ()
        switches: dict = {}
        for kind in kinds:
            switches.update(self.category(kind).differential.probe)
        env = {**plain_diagnostics(self.category(kinds[0])), PROBE_ENV: json.dumps(switches, sort_keys=True)}
        record = self.run(self.script_used, env, f"differential run ({', '.join(kinds)})")
        return tuple(SilentCheck(f.kind, f.reproduced, f.summary, dict(f.numbers))
                     for f in outcome.silent_findings(record.probe, tuple((k, self.category(k).differential.judge)
                                                                          for k in kinds), self.ruleset.reproduction))

    def _reason(self, issue_text: str | None, status: str) -> outcome.Reason | None:
        """Why it did not reproduce: the last run's exception, else the reporter's GPU or torch."""
        if status == "timeout":
            return outcome.Reason("timeout", f"every run hit the {self.options.timeout_s:.0f} s time limit",
                                  "Run it with a larger --timeout, or post a smaller repro.")
        if status == "limit":
            return outcome.Reason("limit", "a resource limit stopped the run (memory, processes or file size)",
                                  "Post a smaller repro (smaller shapes or model).")
        last = self.records[-1] if self.records else None
        blocked = next((r for r in reversed(self.records) if r.blocked), None)
        found = outcome.blocking_reason(_exception_of(blocked), self.script_used, self.ruleset.reproduction) \
            if blocked else outcome.reason_from_exception(_exception_of(last), self.ruleset.reproduction)
        if found:
            return found
        if last is not None and last.failed:
            return outcome.outside_pt2_reason(last.exception, last.status)
        reporter = reporter_environment(issue_text or "")
        return outcome.clean_run_reason(reporter.torch_version, self.machine.torch_version, reporter.needs_gpu,
                                        self.device)

    def _not_reproduced(self, base: dict, code: str, sentence: str, next_step: str) -> Reproduction:
        return Reproduction(status="not_reproduced", reproduced=False, runs_total=0, runs_reproduced=0,
                            category_from_run=None, category_changed=False,
                            summary=outcome.summary_sentence("not_reproduced", None, 0, 0, base["device"],
                                                     self.machine.torch_version, sentence),
                            reason=code, reason_text=sentence, next_step=next_step, **base)

    def _script_note(self, original: str | None) -> str | None:
        original = original if original is not None else self.script_given
        if self.script_used is None or self.script_used == original:
            return None
        added = [line for line in self.script_used.split("\n")[:8] if line.startswith(("import ", "from "))]
        return f"ran with `{added[0]}` added (the snippet used it without importing it)" if added else None

    # -- helpers ----------------------------------------------------------------------------------------

    def final_classification(self, issue_text: str | None, reproduction: Reproduction | None = None) -> Classification:
        """The verdict the report leads with: the deciding run's, a differential run's, else the text's."""
        for record in self.records:
            if record_reproduces(record) and record.purpose != "minifier repro.py":
                return record.classification
        if reproduction is not None:
            for check in reproduction.silent:
                if check.reproduced:
                    return silent_classification(check)
        if issue_text:
            return self.classifier.classify_text(issue_text)
        return self.records[0].classification if self.records else self.classifier.classify_text("")

    @property
    def ruleset(self) -> Ruleset:
        return self.classifier.ruleset

    def category(self, category_id: str) -> Category:
        return self.ruleset.categories[category_id]

    def run(self, script: str, env: dict[str, str], purpose: str, keep: bool = False) -> RunRecord:
        spec = RunSpec(script=script, env=env, timeout_s=self.options.timeout_s, keep_workdir=keep, gpu=self.device == "cuda")
        result = self.runner(spec)
        text = output_text(result)
        classification = self.classifier.classify_text(text, context=spec.script or "")
        exception = uncaught_exception(result)
        failed = outcome.launcher_failed(result)
        blocked = outcome.blocking_reason(_exception_of_text(exception), script, self.ruleset.reproduction) if failed else None
        record = RunRecord(
            purpose=purpose, env=dict(env), status=result.status, exit_code=result.exit_code, signal=result.signal,
            duration_s=round(result.duration_s, 3), peak_rss_bytes=result.peak_rss_bytes,
            limits_fired=tuple(result.limits_fired), network_isolated=result.network_isolated,
            warm=bool(getattr(result, "warm", False)), classification=classification,
            output_tail="\n".join(clean_text(text).split("\n")[-OUTPUT_TAIL_LINES:]),
            output_dropped_bytes=result.stdout_dropped_bytes + result.stderr_dropped_bytes,
            failed=failed, sandbox=getattr(result, "sandbox", ""),
            limits_mechanism=getattr(result, "limits_mechanism", ""),
            exception=exception, probe=getattr(result, "probe", None), blocked=blocked.code if blocked else None)
        self.records.append(record)
        self._save_log(len(self.records), text)
        if keep and result.workdir:
            self._collect(Path(result.workdir))
        return record

    def _save_log(self, index: int, text: str) -> None:
        if self.out_dir:
            relative = f"artifacts/run-{index}.log"
            outdir.write_text(self.out_dir, relative, text)
            self.artifacts.append(relative)

    def _collect(self, workdir: Path) -> None:
        """Copy TORCH_COMPILE_DEBUG output and render TORCH_TRACE (safely: the workdir is the
        script's), then drop the kept workdir. A later run's artifacts replace an earlier one's."""
        try:
            artifacts = self.out_dir / "artifacts"
            for stale in ("torch_compile_debug", "torch_trace", "tlparse"):
                remove_tree(artifacts / stale)
            self.artifacts = [a for a in self.artifacts if not a.startswith(("artifacts/torch_", "artifacts/tlparse"))]
            if collect_artifacts(workdir, "torch_compile_debug", artifacts / "torch_compile_debug").bytes:
                self.artifacts.append("artifacts/torch_compile_debug")
            if collect_artifacts(workdir, TRACE_DIR, artifacts / "torch_trace").bytes:
                self.artifacts.append("artifacts/torch_trace")
                rendered = render_tlparse(artifacts / "torch_trace", artifacts / "tlparse")
                if rendered is not None and (artifacts / "tlparse" / "index.html").is_file():
                    self.artifacts.append("artifacts/tlparse/index.html")
        finally:
            remove_tree(workdir)

    def minify(self, script: str, category_id: str, timeout_s: float | None = None) -> MinifierResult | None:
        """torch's after_aot minifier, for the categories whose rules ask for it."""
        category = self.category(category_id)
        if not self.options.minify_graph or "minifier" not in category.artifacts:
            return None
        keep = self.out_dir / "artifacts" / "minifier" if self.out_dir else None
        outcome_ = run_after_aot_minifier(script, level=category.minifier_level, env=plain_diagnostics(category),
                                          timeout_s=timeout_s or self.options.minifier_timeout_s, keep_dir=keep)
        verified, signature = False, None
        if outcome_.repro_source:
            check = self.run(outcome_.repro_source, dict(ALWAYS_ENV), "minifier repro.py")
            verified = check.classification.category == category_id and check.failed
            signature = check.classification.signature
            if keep:
                self.artifacts.append("artifacts/minifier/repro.py")
        return MinifierResult(launcher_found=outcome_.launcher_source is not None, repro_source=outcome_.repro_source,
                              verified=verified, signature=signature, duration_s=round(outcome_.duration_s, 1),
                              note=outcome_.note)


def uncaught_exception(result: RunResult, limit: int = 300) -> str | None:
    """The uncaught exception the launcher's bootstrap reported, as "Type: message" (None without one)."""
    uncaught = getattr(result, "uncaught_exception", None)
    return f"{uncaught.get('type', '')}: {str(uncaught.get('message', ''))[:limit]}" if uncaught else None


def _exception_of(record: RunRecord | None) -> dict | None:
    """The run's uncaught exception as type and message (what `outcome.reason_from_exception` reads)."""
    return _exception_of_text(record.exception) if record is not None else None


def _exception_of_text(exception: str | None) -> dict | None:
    if not exception:
        return None
    kind, _, message = exception.partition(": ")
    return {"type": kind, "message": message}


def _name_error(record: RunRecord) -> str | None:
    return outcome.missing_name(_exception_of(record)) if record.failed else None


