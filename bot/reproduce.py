"""Reproduce a repro the way a PT2 oncall would (policy; processes are started only by runners/).

1. Classify what the reporter said (if there is an issue) to pick the first diagnostics.
2. Run; classify the real output. If the category differs from the text's (or there was no
   text), say so and run again with the real category's diagnostics and artifact switches.
3. With `runs > 1`, run that configuration again to tell a steady failure from a flaky one.
4. For compile and accuracy failures, drive torch's after_aot minifier and check its repro.py
   still fails the same way.
Nothing here knows how to start a process: it builds RunSpecs and reads RunResults.
"""
from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from runners.artifacts import copy_tree_capped, render_tlparse
from runners.minifier import run_after_aot_minifier
from runners.sandbox import RunResult, RunSpec

from .classify import Classifier
from .extract import reporter_environment
from .logtext import clean_text
from .records import Classification
from .report import MachineEnvironment, MinifierResult, Reproduction, RunRecord
from .ruleset import Category

log = logging.getLogger(__name__)

Runner = Callable[[RunSpec], RunResult]
NOT_A_REPRO = ("not_pt2",)
MINIFIER_VARS = ("TORCHDYNAMO_REPRO_AFTER", "TORCHDYNAMO_REPRO_LEVEL")
ALWAYS_ENV = {"PYTHONFAULTHANDLER": "1"}  # a segfault then prints "Fatal Python error" and the stack
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
    """What the classifier reads of a run: stdout, then stderr, then how the process ended."""
    ending = f"\n[pt2-triage] process terminated by {result.signal}\n" if result.signal else ""
    return f"{result.stdout}\n{result.stderr}{ending}"


def reproduces(classification: Classification, run_status: str) -> bool:
    """A run shows the failure when the compiler stack is implicated, by an error or by logs."""
    if classification.category in NOT_A_REPRO:
        return False
    return run_status != "ok" or bool(classification.evidence)


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


def summary_sentence(status: str, category: str | None, hits: int, total: int, device: str, torch_version: str | None) -> str:
    where = f"on {device}" + (f" with torch {torch_version}" if torch_version else "")
    return {
        "reproduced": f"Reproduced {where}: {category} ({hits}/{total} runs).",
        "flaky": f"Flaky {where}: {category} in {hits} of {total} runs.",
        "timeout": f"Did not finish {where}: every run hit the time limit.",
        "limit": f"Did not reproduce {where}: a resource limit stopped the run.",
        "crashed": f"Crashed {where} without PT2 evidence (killed by a signal).",
        "not_reproduced": f"Did not reproduce {where}: the script ran without a PT2 failure.",
    }[status]


def machine_environment(probe: dict) -> MachineEnvironment:
    """The probe's plain dict (runners/probe.py) as a report record."""
    known = MachineEnvironment.__dataclass_fields__
    return MachineEnvironment(**{k: v for k, v in probe.items() if k in known})


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

    def reproduce(self, script: str, issue_text: str | None = None) -> Reproduction:
        from_text = self.classifier.classify_text(issue_text) if issue_text else None
        text_category = from_text.category if from_text and from_text.category not in ("not_pt2", "unknown") else None
        device = "cuda" if needs_gpu(script, self.options.device) else "cpu"
        if device == "cuda" and not self.machine.cuda_available:
            return Reproduction(
                status="needs_gpu", reproduced=False, runs_total=0, runs_reproduced=0, device="cuda",
                category_from_text=from_text.category if from_text else None, category_from_run=None,
                category_changed=False,
                summary="Not run: the repro needs a CUDA GPU and this machine has none; the category comes from the text only.")

        # With a category from the text, the first run already carries its diagnostics and artifact
        # switches: when the run agrees with the text (the common case) no second run is needed.
        collect = bool(self.out_dir)
        first_env = diagnostics_env(self.category(text_category), collect_artifacts=collect) if text_category else dict(ALWAYS_ENV)
        first = self.run(script, first_env, "first run" if not text_category else f"diagnostics for {text_category}",
                         keep=collect and text_category is not None)
        category = first.classification.category
        final = first
        changed = text_category is not None and category != text_category and category not in NOT_A_REPRO
        if changed:
            log.info("category changed from %s (text) to %s (run)", text_category, category)
        if category not in NOT_A_REPRO and (changed or text_category is None):
            final = self.run(script, diagnostics_env(self.category(category), collect_artifacts=collect),
                             f"diagnostics for {category}", keep=collect)
        checks = [final] + [self.run(script, final.env, "flakiness check") for _ in range(self.options.runs - 1)]
        hits = sum(1 for r in checks if reproduces(r.classification, r.status))
        status = decide_status(checks, hits)
        deciding = next((r for r in checks if reproduces(r.classification, r.status)), final)
        minifier = self.minify(script, deciding.classification.category) if hits else None
        return Reproduction(
            status=status, reproduced=hits > 0, runs_total=len(checks), runs_reproduced=hits, device=device,
            category_from_text=from_text.category if from_text else None,
            category_from_run=deciding.classification.category, category_changed=changed,
            summary=summary_sentence(status, deciding.classification.category, hits, len(checks), device, self.machine.torch_version),
            runs=tuple(self.records), artifacts=tuple(self.artifacts), minifier=minifier)

    def final_classification(self, issue_text: str | None) -> Classification:
        """The verdict the report leads with: the deciding run's, else the text's, else an empty one."""
        for record in self.records:
            if reproduces(record.classification, record.status) and record.purpose != "minifier repro.py":
                return record.classification
        if issue_text:
            return self.classifier.classify_text(issue_text)
        return self.records[0].classification if self.records else self.classifier.classify_text("")

    def category(self, category_id: str) -> Category:
        return self.classifier.ruleset.categories[category_id]

    def run(self, script: str, env: dict[str, str], purpose: str, keep: bool = False) -> RunRecord:
        spec = RunSpec(script=script, env=env, timeout_s=self.options.timeout_s, keep_workdir=keep)
        result = self.runner(spec)
        classification = self.classifier.classify_text(output_text(result), context=spec.script or "")
        record = RunRecord(
            purpose=purpose, env=dict(env), status=result.status, exit_code=result.exit_code, signal=result.signal,
            duration_s=round(result.duration_s, 3), peak_rss_bytes=result.peak_rss_bytes,
            limits_fired=tuple(result.limits_fired), network_isolated=result.network_isolated,
            warm=bool(getattr(result, "warm", False)), classification=classification,
            output_tail="\n".join(clean_text(output_text(result)).split("\n")[-OUTPUT_TAIL_LINES:]),
            output_dropped_bytes=result.stdout_dropped_bytes + result.stderr_dropped_bytes)
        self.records.append(record)
        record_index = len(self.records)
        self._save_log(record_index, result)
        if keep and result.workdir:
            self._collect(Path(result.workdir))
        return record

    def _save_log(self, index: int, result: RunResult) -> None:
        if self.out_dir:
            path = self.out_dir / "artifacts" / f"run-{index}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(output_text(result), encoding="utf-8", errors="replace")
            self.artifacts.append(str(path.relative_to(self.out_dir)))

    def _collect(self, workdir: Path) -> None:
        """Copy TORCH_COMPILE_DEBUG output and render TORCH_TRACE, then drop the kept workdir."""
        try:
            artifacts = self.out_dir / "artifacts"
            for stale in ("torch_compile_debug", "torch_trace", "tlparse"):  # a later run's artifacts replace an earlier's
                shutil.rmtree(artifacts / stale, ignore_errors=True)
            self.artifacts = [a for a in self.artifacts if not a.startswith(("artifacts/torch_", "artifacts/tlparse"))]
            debug = workdir / "torch_compile_debug"
            if debug.is_dir() and copy_tree_capped(debug, artifacts / "torch_compile_debug"):
                self.artifacts.append("artifacts/torch_compile_debug")
            trace = workdir / TRACE_DIR
            if trace.is_dir() and copy_tree_capped(trace, artifacts / "torch_trace"):
                self.artifacts.append("artifacts/torch_trace")
                rendered = render_tlparse(trace, artifacts / "tlparse")
                if rendered is not None and (artifacts / "tlparse" / "index.html").is_file():
                    self.artifacts.append("artifacts/tlparse/index.html")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def minify(self, script: str, category_id: str) -> MinifierResult | None:
        """torch's after_aot minifier, for the categories whose rules ask for it."""
        category = self.category(category_id)
        if not self.options.minify_graph or "minifier" not in category.artifacts:
            return None
        keep = self.out_dir / "artifacts" / "minifier" if self.out_dir else None
        outcome = run_after_aot_minifier(script, level=category.minifier_level, env=plain_diagnostics(category),
                                         timeout_s=self.options.minifier_timeout_s, keep_dir=keep)
        verified, signature = False, None
        if outcome.repro_source:
            check = self.run(outcome.repro_source, dict(ALWAYS_ENV), "minifier repro.py")
            verified = check.classification.category == category_id and check.status != "ok"
            signature = check.classification.signature
            if keep:
                self.artifacts.append("artifacts/minifier/repro.py")
        return MinifierResult(launcher_found=outcome.launcher_source is not None, repro_source=outcome.repro_source,
                              verified=verified, signature=signature, duration_s=round(outcome.duration_s, 1),
                              note=outcome.note)
