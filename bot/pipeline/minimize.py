"""Minimize a failing repro (policy): keep shrinking while it still fails *the same way*.

"The same way" = the run's classification has the original category and failure signature
(bot/signature.py drops sizes, paths and line numbers, so shrinking a tensor keeps it). Slipping
into another bug is never interesting: a NameError after a definition was deleted changes the
signature, and user-level errors such as NameError or ImportError are refused outright.
When the original runs clean with the compiler off, so must every candidate: that is what makes
the failure the compiler's. Without it `torch.testing.assert_close(torch.randn(1), torch.ones(1))`
would pass for a minimized accuracy bug, and dropping the `try`/`except` around an error Dynamo
mishandles would pass for a Dynamo bug (the error then escapes in eager too).
The search itself is runners/reduce/; every candidate runs in the sandbox (warm workers).
"""
from __future__ import annotations

import ast
import json
import logging
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Mapping

from runners.reduce import ReduceStats, Reducer, Reserve, count_tokens
from runners.reduce.dead import without_dead_code
from runners.reduce.hoist import hoisted_programs
from runners.reduce.replay import replayed_programs
from bot.core.source import tidy
from runners.safefs import remove_tree
from runners.sandbox import RunResult, RunSpec

from bot.core import ladder as ladder_rules
from bot.core.classify import Classifier
from bot.core.disposition import explanations
from bot.core.outcome import COMPILED_ONLY_RULE, compiled_only
from bot.core.records import Classification
from bot.core.report import MinimizedRepro, RunRecord
from bot.pipeline.ladder import observed
from bot.pipeline.reproduce import (ALWAYS_ENV, COMPILER_OFF_ENV, PROBE_ENV, export_entry, output_text, reproduces,
                                    stance_reaches)
from bot.core.signature import short_type

log = logging.getLogger(__name__)

Runner = Callable[[RunSpec], RunResult]
# What a tensor-producing call may become while shrinking (the PT2 knowledge the generic reducer lacks).
TENSOR_REPLACEMENTS = ("torch.randn(1)", "torch.randn(2, 2)", "torch.ones(1)", "torch.zeros(1)")
# For a failure judged by comparing compiled with eager values: no random tensors. `torch.randn(1)`
# put inside a `forward` draws anew on each call, so compiled and eager differ by the draw alone,
# and the compiler-off run (eager against eager) passes only when both draws happen to agree (a
# relu of two negatives): the tabular MLP of benchmarks/realistic_issues shrank to exactly that,
# 17 lines with no compiler bug in them, which its re-check then refused.
DETERMINISTIC_REPLACEMENTS = ("torch.ones(1)", "torch.ones(2, 2)", "torch.zeros(1)")
SLIPPAGE_TYPES = frozenset({"NameError", "UnboundLocalError", "ImportError", "ModuleNotFoundError", "SyntaxError",
                            "IndentationError", "TabError"})


# Runs after the reducer on the candidates' backend: its re-check of the result and the tidied text's
# check; then one more on the script's own backend, the final classification (Minimizer.reserve).
RESERVE_CHECKS = 2
RECENT_RUNS_KEPT = 16  # the re-check's walk back goes at most three steps, each with a run or two per backend
CONFIRM_GRACE_S = 5.0
# A candidate still running well past every run that failed the same way is cut (runs_cut): it got
# past the point where the failure happens, into work the failure never reaches. An AOTI repro
# fails in 0.4-0.5 s while serializing its output spec; a candidate without the cause builds the
# whole package, 6-7 s. Cut at CUT_FACTOR times the slowest such run of the search, never before
# CUT_FLOOR_S. The slowest, not the latest: where the failure comes after the package build, the
# latest same-failure runs may have reused an earlier build (1 s) while the next candidate needs a
# new one (6-14 s); cut after the latest three, fresh_issues_9's AOTI repro lost 59 such runs and
# stopped at its budget at 44 lines, where it reaches 12 uncut.
CUT_FACTOR = 3.0
CUT_FLOOR_S = 3.0
# an eager run that records what each of the script's modules was given (runners/reduce/hoist.py)
MODULES_ENV = {PROBE_ENV: json.dumps({"compiler": "off", "modules": True})}
# the same, going on through the compiled module's first 16 calls (a failure across calls)
REPLAY_ENV = {PROBE_ENV: json.dumps({"compiler": "off", "modules": True, "replay": 16})}


class NotReproducible(Exception):
    """The original script does not fail with a PT2 error here, so there is nothing to preserve."""


class Cancelled(Exception):
    """The caller cancelled the minimize (one begun before the reproduction's verdict, which did not
    confirm the failure it presumed: bot/pipeline/speculate.py)."""


@dataclass(frozen=True)
class MinimizeResult:
    source: str
    original: Classification
    final: Classification
    stats: ReduceStats
    checked_compiler_off: bool = False  # every accepted candidate also ran clean with the compiler off
    match: str = "signature"  # what "the same failure" compared (Category.minimize_same, as the search used it)
    # the runs of `source` the search made, by probe (None: the script's own backend): the ladder's
    # rungs on the minimized repro that need not run again (bot/pipeline/ladder.py)
    runs: Mapping[str | None, tuple[Classification, RunResult]] = field(default_factory=dict, compare=False)
    backend: str | None = None  # the candidates' backend, when cheaper than the script's own (backend_env)
    runs_cut: int = 0  # candidate runs stopped at Minimizer.cut_after

    @property
    def same_failure(self) -> bool:
        return self.final.category == self.original.category and (
            self.match == "category" or self.final.signature == self.original.signature)

    def to_dict(self) -> dict:
        return {"source": self.source, "original": self.original.to_dict(), "final": self.final.to_dict(),
                "signature_preserved": self.same_failure, "match": self.match,
                "checked_compiler_off": self.checked_compiler_off, "stats": self.stats.to_dict(), "runs_cut": self.runs_cut}

    def record(self) -> MinimizedRepro:
        """What the report keeps of it."""
        stats = self.stats
        return MinimizedRepro(
            source=self.source, signature_preserved=self.same_failure, final_signature=self.final.signature,
            lines_before=stats.lines_before, lines_after=stats.lines_after, tokens_before=stats.tokens_before,
            tokens_after=stats.tokens_after, runs=stats.runs, wall_s=round(stats.wall_s, 1), stop_reason=stats.stop_reason,
            runs_by_pass=dict(stats.pass_runs), seconds_by_pass=dict(stats.pass_seconds),
            progress=tuple(stats.progress), runs_cut=self.runs_cut)


IMPORTS_TORCH_RE = re.compile(r"^\s*(?:import torch\b|from torch\b)", re.M)
PT2_ENTRY_RE = re.compile(r"torch\.compile\b|\bcompile\(|torch\.export\b|\bexport\(|_dynamo\.optimize\(|aoti_compile_and_package"
                          r"|aoti_load_package|torch\._inductor\.aot_compile|torch\._export\.aot_compile|\.compile\(")


def keeps_pt2(script: str) -> bool:
    """A candidate still imports torch and calls a PT2 entry point (torch.compile, torch.export,
    AOTInductor): a shrink that prints a forged traceback without them is not the same repro."""
    return bool(IMPORTS_TORCH_RE.search(script) and PT2_ENTRY_RE.search(script))


def env_key(env: dict[str, str] | None) -> str:
    return json.dumps(env or {}, sort_keys=True)


def probe_backend(env: Mapping[str, str]) -> str | None:
    """The backend an env's probe switches to (None: the script's own)."""
    return json.loads(env[PROBE_ENV]).get("backend") if PROBE_ENV in env else None


class RecentRuns:
    """The latest few runs, by (env, script) with their verdicts (thread-safe: candidates run side by
    side). The final classification of the result is the re-check's run when that ran on the
    script's own backend (`Minimizer.verified_result`), and the ladder reuses the result's runs."""

    def __init__(self, kept: int = RECENT_RUNS_KEPT):
        self.kept = kept
        self._runs: dict[tuple[str, str], tuple[Classification, RunResult]] = {}
        self._clean: set[tuple[str, str]] = set()  # runs in a compile cache no candidate wrote in
        self._lock = threading.Lock()

    def remember(self, env: dict[str, str] | None, script: str, classification: Classification, result: RunResult,
                 clean_cache: bool = False) -> None:
        key = (env_key(env), script)
        with self._lock:
            self._runs.pop(key, None)
            self._runs[key] = (classification, result)
            (self._clean.add if clean_cache else self._clean.discard)(key)
            while len(self._runs) > self.kept:
                self._clean.discard(gone := next(iter(self._runs)))
                self._runs.pop(gone)

    def clean_cache(self, env: dict[str, str] | None, script: str) -> bool:
        """Whether the latest run of `script` there ran in a compile cache no candidate wrote in."""
        with self._lock:
            return (env_key(env), script) in self._clean

    def get(self, env: dict[str, str] | None, script: str) -> tuple[Classification, RunResult] | None:
        with self._lock:
            return self._runs.get((env_key(env), script))

    def of(self, script: str) -> dict[str | None, tuple[Classification, RunResult]]:
        """The runs of `script`, by their probe (None: no probe, the script's own backend)."""
        with self._lock:
            return {json.loads(key).get(PROBE_ENV): run for (key, text), run in self._runs.items() if text == script}

    def __len__(self) -> int:
        return len(self._runs)


def record_env(hoist_mode: str) -> dict[str, str]:
    """The eager run that records what each module was given, for a `minimize_hoist` mode."""
    return REPLAY_ENV if hoist_mode == "replay" else MODULES_ENV


def hoisted_from(tree: ast.Module, hoist_mode: str, run: RunResult) -> list[str]:
    """The leaps the recording `run` gives (runners/reduce/hoist.py, replay.py)."""
    records = (run.probe or {}).get("modules") or []
    if hoist_mode == "replay":
        return replayed_programs(tree, records, (run.probe or {}).get("entry"))
    return hoisted_programs(tree, records, compare=hoist_mode == "compare")


def same_code(a: str, b: str) -> bool:
    """Whether two sources differ only in layout (blank lines, spacing): the same program, no run
    needed to know it fails the same way."""
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


def same_failure(target: Classification, candidate: Classification, run_status: str, match: str = "signature") -> bool:
    """The policy: same category and (unless `match` is "category", see Category.minimize_same)
    signature, a real failure, and no user-level slippage."""
    if target.rule == COMPILED_ONLY_RULE and not candidate.is_pt2 and run_status != "ok":
        # the compiler's failure in the script's own code: the candidate ran clean with the compiler
        # off first (a compiled-only target always has that check), so its error is the compiler's too
        candidate = compiled_only(candidate, target.category)
    if run_status in ("timeout", "limit") or not reproduces(candidate, run_status):
        return False
    if short_type(candidate.exception_type) in SLIPPAGE_TYPES:
        return False
    return candidate.category == target.category and (match == "category" or candidate.signature == target.signature)


class Minimizer:
    def __init__(self, classifier: Classifier, runner: Runner, *, budget_s: float = 600, timeout_s: float = 120,
                 parallelism: int = 1, gpu: bool = False, stop_when_eager_shares: bool = False,
                 cache_dir: str | None = None, verify_cache_dir: str | None = None, presume: bool = False):
        self.gpu = gpu  # candidates see the GPU (a CUDA repro)
        # Begun before the reproduction's verdict (bot/pipeline/speculate.py): the failure to keep is
        # presumed from the cheapest backend that shows one (presumed_failure), and the caller adopts
        # the result only when the reproduction's run failed that same way.
        self.presume = presume
        self.cancelled = threading.Event()  # cancel(): no run starts after it, and the search ends
        self.target_known = threading.Event()  # set once the failure to keep is known (or none is)
        self.target: Classification | None = None
        self._lock = threading.Lock()  # the reserve's tail (know_full_run) against the reducer's start
        self.full_run_s: float | None = None  # the script's own run's seconds, once the caller knows them
        self.reducer: Reducer | None = None
        self.check_compiler_off = False
        # the triage's choice: a failure eager shares is the code's own, with nothing of the compiler's to shrink
        self.stop_when_eager_shares = stop_when_eager_shares
        self.classifier = classifier
        self.runner = runner
        self.budget_s = budget_s
        self.timeout_s = timeout_s
        self.parallelism = parallelism
        self.given_cache_dir = cache_dir  # the caller's job cache (kept), else one of its own per minimize (removed)
        self.cache_dir: str | None = None
        # where the result's last run goes: a cache no candidate wrote in (verified_result); the
        # caller's (which its later runs of the result use), else one of its own (removed)
        self.verify_cache_dir = verify_cache_dir
        self.verify_dir: str | None = None
        self.refused: str | None = None  # why the search's result was not kept (verified_result)
        self.deadline: float | None = None  # the budget's end; candidate runs in flight stop there
        self.backend_env: dict[str, str] = {}  # the cheapest backend the original fails the same way on
        self.original_output = ""  # the original's run output: what a candidate's must still show (keeps_cause)
        self.compiler_off_checked = False  # candidates must run clean with the compiler off (needs_compiler_off_check)
        # the original's own failure with the compiler off, where it fails otherwise than with it:
        # candidates may fail that way there too, or run clean, and no other way (runs_as_original_without_compiler)
        self.eager_failure: Classification | None = None
        self.run_seconds: dict[str, float] = {}  # env_key -> the latest run's duration there (reserve)
        self.recent = RecentRuns()  # the latest runs: the result's final classification and the ladder read them
        self.slowest_failing_s = 0.0  # the slowest candidate run that failed the same way (cut_after)
        self.slowest_off_s = 0.0  # the slowest compiler-off run that passed its check, the original's included
        self.runs_cut = 0  # candidate runs stopped at cut_after

    def run_timeout(self) -> float:
        """A run never outlasts the budget, bar the reducer's re-check of its result: cut short, it
        read as a flaky predicate, and an AOTInductor repro's whole search (55 runs, 645 -> 585
        tokens) was thrown away for the original when its four re-checks got 5 s each."""
        if self.deadline is None or (self.reducer is not None and self.reducer.confirming):
            return self.timeout_s
        return max(CONFIRM_GRACE_S, min(self.timeout_s, self.deadline - time.monotonic()))

    def cut_after(self, limit: float, off: bool = False) -> float:
        """A search candidate's time limit: `limit` (run_timeout), or less once candidates have failed
        the same way (CUT_FACTOR), or with `off`, once compiler-off runs have passed their check.
        Never for the re-checks of a result, which must not be lost to a slow run."""
        with self._lock:
            slowest = self.slowest_off_s if off else self.slowest_failing_s
        if not slowest or self.deadline is None or (self.reducer is not None and self.reducer.confirming):
            return limit
        return min(limit, max(CUT_FLOOR_S, CUT_FACTOR * slowest))

    def cancel(self) -> None:
        """Stop: the search ends as at its budget's end, and no run starts after this (Cancelled)."""
        self.cancelled.set()

    def know_full_run(self, seconds: float) -> None:
        """The script's run on its own backend took `seconds` (the reproduction's, which a presumed
        minimize began without): the reserve for the result's final classification follows it."""
        with self._lock:
            self.full_run_s = seconds
            if self.reducer is not None and self.backend_env:
                self.reducer.reserve = self.reserve(seconds, self.guarded_without_compiler(self.check_compiler_off))

    def classify_run(self, script: str, env: dict[str, str] | None = None,
                     cache_dir: str | None = None, timeout_s: float | None = None) -> tuple[Classification, RunResult]:
        if self.cancelled.is_set():
            raise Cancelled("the minimize was cancelled")
        if cache_dir is None and self.reducer is not None and self.reducer.confirming:
            cache_dir = self.verify_dir  # the re-check of the result: in the cache its final verdict trusts
        result = self.runner(RunSpec(script=script, env={**ALWAYS_ENV, **(env or {})}, timeout_s=timeout_s or self.run_timeout(),
                                     cache_dir=cache_dir or self.cache_dir, gpu=self.gpu))
        self.run_seconds[env_key(env)] = result.duration_s
        classification = self.classifier.classify_text(output_text(result), context=script)
        self.recent.remember(env, script, classification, result, clean_cache=cache_dir is not None and cache_dir == self.verify_dir)
        return classification, result

    def classify_original(self, script: str) -> tuple[Classification, RunResult]:
        """The original's run, classified; its output is kept for the candidates' keeps_cause check."""
        original, result = self.classify_run(script)
        self.original_output = output_text(result)
        return original, result

    def fails_same(self, target: Classification, script: str, env: dict[str, str] | None = None) -> bool:
        """Same category and signature (same_failure), and the cause the original's run showed still
        shows (the category's `minimize_keeps`: a recompile's failed guard). A category whose
        failure the script's own check words (`minimize_same: category`) matches on the category
        alone, and only while the compiler-off run guards every candidate."""
        run_env = self.backend_env if env is None else env
        classification, run, cut_short = self.cut_run(script, run_env)
        passed = same_failure(target, classification, run.status, self.match(target))
        self.count_cut_run(run, passed, cut_short)
        return passed and self.keeps_cause(target.category, output_text(run))

    def cut_run(self, script: str, env: dict[str, str], off: bool = False) -> tuple[Classification, RunResult, bool]:
        """A search candidate's run under its cut (cut_after), and whether the cut stopped it."""
        uncut = self.run_timeout()
        limit = self.cut_after(uncut, off)
        classification, run = self.classify_run(script, env, timeout_s=limit)
        return classification, run, run.status == "timeout" and limit < uncut

    def count_cut_run(self, run: RunResult, passed: bool, cut_short: bool, off: bool = False) -> None:
        """A run that passed its check raises the cut for later ones (the slowest so far); one
        stopped at its cut counts in runs_cut."""
        with self._lock:
            if passed and off:
                self.slowest_off_s = max(self.slowest_off_s, run.duration_s)
            elif passed:
                self.slowest_failing_s = max(self.slowest_failing_s, run.duration_s)
            else:
                self.runs_cut += cut_short

    def keeps_cause(self, category: str, output: str) -> bool:
        """Whether a run's output still shows what the original's showed of the failure's cause:
        the category's `minimize_keeps`, and the documented causes a disposition rule reads in it
        (a 0/1-specialized `Dim` is not a `Dim` the code specialized, whatever the error line)."""
        ruleset, original = self.classifier.ruleset, self.original_output
        return ruleset.categories[category].keeps_cause(original, output) and \
            (not original or explanations(ruleset.dispositions, output) == explanations(ruleset.dispositions, original))

    def verified_result(self, source: str, script: str, original: Classification) -> tuple[str, Classification]:
        """The result and its verdict on the script's own backend, from a run in a compile cache no
        candidate wrote in. Every candidate shares the job's cache, and a candidate that still holds
        the script's code can write there (a kernel rewritten to raise, a failed build remembered)
        so that a later, cleaner candidate fails without failing at all: a hostile script would get
        a clean five-line "repro" published as its bug. A result whose verdict differs between the
        two caches is not kept: the original is, with its own verdict. The reducer's re-check of its
        result ran there already (classify_run): on the script's own backend it is that run, free."""
        if source == script:
            return script, original
        known = self.recent.get({}, source)
        if known is not None and self.recent.clean_cache({}, source):
            return source, known[0]
        verdict, run = self.classify_run(source, cache_dir=self.verify_dir)
        if known is None and same_failure(original, verdict, run.status, self.match(original)):
            return source, verdict
        in_job_cache = known[0] if known is not None else self.classify_run(source)[0]
        if (verdict.category, verdict.signature) == (in_job_cache.category, in_job_cache.signature):
            self.recent.remember({}, source, verdict, run, clean_cache=True)
            return source, verdict
        log.warning("the minimized repro is %s with the candidates' compile cache and %s without it: the original is kept",
                    in_job_cache.signature, verdict.signature)
        self.refused = (f"refused: the result fails as {in_job_cache.category} only with the compile cache its "
                        f"candidates wrote ({verdict.category} without it)")
        return script, original

    def match(self, original: Classification) -> str:
        """What "the same failure" compares for this category: its `minimize_same`, while the
        compiler-off run guards every candidate; the signature otherwise."""
        if original.rule == COMPILED_ONLY_RULE or not self.compiler_off_checked:
            return "signature"  # (a compiled-only failure is the script's own error: its words are all there is)
        return self.classifier.ruleset.categories[original.category].minimize_same

    def cheapest_backend_env(self, original: Classification, script: str) -> dict[str, str]:
        """The probe of the cheapest backend on which the original already fails the same way
        (backend="eager" for a graph break: Dynamo fails before any backend runs), so candidates
        that lose the failure do not each pay an Inductor compile. The PT2 guides minimize the
        same way. {} when the script names its backend or only Inductor shows the failure."""
        for env, classification, run in self.cheaper_rung_runs(original.category, script):
            if same_failure(original, classification, run.status, self.match(original)) and \
                    self.keeps_cause(original.category, output_text(run)):
                return env
        return {}

    def cheaper_rung_runs(self, category: str, script: str) -> list[tuple[dict[str, str], Classification, RunResult]]:
        """The script run on each backend cheaper than Inductor that can show `category` (in
        parallel), cheapest first; none when the script names its backend."""
        if not ladder_rules.switchable(self.classifier.ruleset.ladder, script):
            return []
        envs = self.rung_envs(category)
        with ThreadPoolExecutor(max(1, self.parallelism)) as pool:
            runs = list(pool.map(lambda env: self.classify_run(script, env), envs))
        return [(env, classification, run) for env, (classification, run) in zip(envs, runs)]

    def rung_envs(self, category: str | None) -> list[dict[str, str]]:
        """The probes of the backends cheaper than Inductor that can show `category` (any, for None),
        cheapest first."""
        return [{PROBE_ENV: json.dumps(dict(rung.probe), sort_keys=True)}
                for rung in ladder_rules.cheaper_rungs(self.classifier.ruleset.ladder, category)]

    def presumed_failure(self, script: str) -> tuple[Classification, RunResult, dict] | None:
        """The failure of the cheapest backend that shows one of the categories it can show, tried
        one at a time, cheapest first: what the reproduction's Inductor run most likely shows too
        (original_failure picks that same rung when it does). None when no cheaper backend fails
        that way, or the script names its backend."""
        if not ladder_rules.switchable(self.classifier.ruleset.ladder, script):
            return None
        for env in self.rung_envs(None):
            classification, run = self.classify_run(script, env)
            if reproduces(classification, run.status) and env in self.rung_envs(classification.category):
                self.original_output = output_text(run)
                return classification, run, env
        return None

    def original_failure(self, script: str, reproduced: RunRecord | None) -> tuple[Classification, RunResult, dict | None]:
        """(the failure to keep, the run that shows it, the candidates' backend env or None when
        still to be found). Given the reproduction's run, a cheaper backend that fails the way it
        did stands in for the original's own run: the whole script is not compiled by Inductor
        once more to see what the reproduction already saw (15-27 s of the realistic reports'
        minimize). That rung's run is what candidates, run on it, are held to (keeps_cause)."""
        if reproduced is not None and reproduces(reproduced.classification, reproduced.status):
            target = reproduced.classification
            for env, classification, run in self.cheaper_rung_runs(target.category, script):
                if same_failure(target, classification, run.status):
                    self.original_output = output_text(run)
                    return target, run, env
        elif self.presume and (presumed := self.presumed_failure(script)) is not None:
            return presumed
        original, result = self.classify_original(script)
        if (reproduced is not None and reproduced.classification.rule == COMPILED_ONLY_RULE
                and same_failure(reproduced.classification, original, result.status)):
            # the compiler's failure in the script's own code, on Inductor alone (no cheaper rung shows
            # it): the run's own error is the failure to keep, as the reproduction found it
            return reproduced.classification, result, None
        if not reproduces(original, result.status):
            raise NotReproducible(f"the script does not fail with a PT2 error here ({result.status}, {original.category})")
        return original, result, None

    def is_interesting(self, original: Classification, candidate: str, check_compiler_off: bool) -> bool:
        """The reducer's predicate: `candidate` keeps `import torch` and a PT2 entry point, (when
        checked) runs clean with the compiler off, and fails as `original` did. The runs happen
        only for candidates that pass the checks before them, cheapest first: most candidates a
        pass makes are broken programs (an argument a call needs, a shape that no longer fits),
        which fail without the compiler too, and that run compiles nothing. On fresh_issues_9's
        wrong-result report, 327 of 463 compiled runs failed, most of them so (TypeError 139,
        a shape error in fake tensors 121), at 0.2-0.3 s each against 0.16 s without the compiler."""
        if not keeps_pt2(candidate):
            return False
        if self.guarded_without_compiler(check_compiler_off) and not self.runs_as_original_without_compiler(candidate):
            return False
        return self.fails_same(original, candidate)

    def guarded_without_compiler(self, check_compiler_off: bool) -> bool:
        """Whether each candidate runs with the compiler off too: to run clean there, or to fail
        there only as the original does (eager_failure)."""
        return check_compiler_off or self.eager_failure is not None

    def runs_as_original_without_compiler(self, script: str) -> bool:
        """Clean with the compiler off; or, where the original itself fails without the compiler
        (otherwise than with it), failing there as the original does. No candidate may add a
        failure of its own that only eager reaches: fresh_issues_10's flex-attention repro fails
        in Inductor before anything runs, and it ended calling `.transpose()` with no arguments
        on the result; its regression test, which compares with eager, then failed in eager.
        A run still going well past every compiler-off run that passed is cut, as in fails_same
        (fresh_issues_10's wrong-result report: a candidate that ran 100 s)."""
        classification, run, cut_short = self.cut_run(script, COMPILER_OFF_ENV, off=True)
        passed = run.status == "ok" or (self.eager_failure is not None
                                        and classification.signature == self.eager_failure.signature)
        self.count_cut_run(run, passed, cut_short, off=True)
        return passed

    def needs_compiler_off_check(self, original: Classification, script: str, result: RunResult | None = None,
                                 off_run: tuple[Classification, RunResult] | None = None) -> bool:
        """Whether candidates must also run clean with the compiler off: whenever the original does
        (one run here unless `off_run` is that run already, and one per candidate that already fails
        the same way). When the original fails without the compiler too, otherwise than with it,
        candidates may fail there only as it does (`eager_failure`, checked though this says False);
        when it fails the same way (the ladder's judgement, given the original's
        `result`) and the caller asked, there is nothing to minimize: NotReproducible. A script the
        compiler-off stance does not reach (stance_reaches) has no such run, nothing is checked,
        unless its failure is compiled-only through torch.export or AOTInductor (export_entry),
        which that run also turns off: each candidate must then still run clean without them."""
        if not stance_reaches(script) and not (original.rule == COMPILED_ONLY_RULE and export_entry(script)):
            log.info("no torch.compile call for the compiler-off stance to turn off (torch.export and "
                     "AOTInductor ignore it); not checking candidates that way")
            return False
        classification, off = off_run or self.classify_run(script, COMPILER_OFF_ENV)
        self.slowest_off_s = off.duration_s
        if off.status == "ok":
            self.compiler_off_checked = True
            return True
        if off.status == "failed" and classification.signature != original.signature:
            self.eager_failure = classification
        if self.stop_when_eager_shares and result is not None:
            table = self.classifier.ruleset.ladder
            target, seen = observed(result, original), observed(off, classification)
            if ladder_rules.rung_outcome(table.compiler_off, target, seen, table.same_refusal) == ladder_rules.FAILS:
                raise NotReproducible(f"it fails the same way with the compiler off ({seen.exception or off.status}): "
                                      "the code's own failure, with nothing of the compiler's to minimize")
        log.warning("the script fails with the compiler off too; candidates may fail there only as it does")
        return False

    def first_runs(self, script: str, reproduced: RunRecord | None
                   ) -> tuple[Classification, RunResult, dict | None, tuple[Classification, RunResult] | None]:
        """original_failure, and beside it (in parallel when there are workers for both) the script's
        compiler-off run that needs_compiler_off_check reads: neither run needs the other's result,
        and side by side the cheap one costs no wall time. None for the second where the stance
        reaches nothing."""
        if not stance_reaches(script):
            return *self.original_failure(script, reproduced), None
        if self.parallelism < 2:
            original = self.original_failure(script, reproduced)
            return *original, self.classify_run(script, COMPILER_OFF_ENV)
        with ThreadPoolExecutor(1) as pool:
            off_run = pool.submit(self.classify_run, script, COMPILER_OFF_ENV)
            original = self.original_failure(script, reproduced)
            return *original, off_run.result()

    def backend_and_leaps(self, original: Classification, script: str, backend_env: dict | None) -> tuple[dict, list[str]]:
        """(the candidates' backend env, the hoisted leaps): the cheaper backends' runs and the eager
        run that records the modules' inputs, all at once (each needs only the original's verdict
        and whether the compiler-off check is on). Only the sandboxed runs go to threads: CPython
        3.11's ast.parse is not thread-safe ("AST constructor recursion depth mismatch",
        cpython#106905), so the parsing stays on this one."""
        tree = ast.parse(script)
        mode = self.hoist_mode(original, tree)
        with ThreadPoolExecutor(1) as pool:
            record = pool.submit(self.classify_run, script, record_env(mode)) if mode is not None else None
            backend_env = self.cheapest_backend_env(original, script) if backend_env is None else backend_env
            return backend_env, hoisted_from(tree, mode, record.result()[1]) if record is not None else []

    def reserve(self, full_s: float, check_compiler_off: bool) -> Reserve:
        """What the search leaves for the runs after it: the reducer's uncached re-check of its
        result and the tidied text's check, each on the candidates' backend (and with the compiler
        off where that is checked), then the final classification on the script's own backend
        (`full_s`: as long as the original's run; none when the candidates run there, verified_result).
        A check is first estimated by the latest run of its kind before the search, then (in the
        reducer) by the recent interesting candidates. Three runs as long as the original's kept
        56 s of a 120 s budget back for 20 s of runs, with the candidates on backend="eager" (1 s)
        after an 18 s cold Inductor run, and left an AOTInductor package (a 30 s cold build, 13 s
        warm) no search at all."""
        check_s = self.run_seconds.get(env_key(self.backend_env), full_s)
        if check_compiler_off:
            check_s += self.run_seconds.get(env_key(COMPILER_OFF_ENV), 0.0)
        return Reserve(checks=RESERVE_CHECKS, check_s=check_s, tail_s=full_s + 1 if self.backend_env else 0.0)

    def hoisted(self, original: Classification, script: str) -> list[str]:
        """Programs that compile one of the script's modules alone, on inputs like those it was
        given in an eager run of the script (runners/reduce/hoist.py), and for a difference of
        values (`minimize_hoist: compare`) check the result against eager's; for a failure across
        calls (`replay`), the compiled module called as the script called it. None, and no run,
        for a script that defines no class or a category hoisting cannot show (`off`)."""
        tree = ast.parse(script)
        mode = self.hoist_mode(original, tree)
        if mode is None:
            return []
        return hoisted_from(tree, mode, self.classify_run(script, record_env(mode))[1])

    def hoist_mode(self, original: Classification, tree: ast.Module) -> str | None:
        """The category's `minimize_hoist`, or None where hoisting cannot apply."""
        mode = self.classifier.ruleset.categories[original.category].minimize_hoist
        if mode == "off" or not any(isinstance(node, ast.ClassDef) for node in tree.body):
            return None
        if mode == "compare" and not self.compiler_off_checked:  # the check's words differ from the script's
            return None
        return mode

    def keeps_branch(self, original: Classification) -> bool:
        """Whether candidates must keep a branch on the input (runners/reduce/shape.py): for the
        categories whose failures a branch causes (`minimize_branch`)."""
        category = self.classifier.ruleset.categories.get(original.category)
        return bool(category and category.minimize_branch)

    def replacements_for(self, original: Classification, script: str) -> tuple[str, ...]:
        """Small tensors the reducer may put for a tensor-making call: deterministic ones when the
        category's failure is a difference of values (its differential compares outputs)."""
        if "torch" not in script:
            return ()
        differential = self.classifier.ruleset.categories[original.category].differential
        return DETERMINISTIC_REPLACEMENTS if differential and differential.probe.get("compare") else TENSOR_REPLACEMENTS

    @staticmethod
    def tidied(source: str, interesting: Callable[[str], bool], keeps_shape: Callable[[str], bool] = lambda _: True) -> str:
        """The reducer's result laid out, with what nothing reads deleted (a budget that ran out
        mid-round leaves unread imports and fields behind); each tidying must keep the failure and
        what the search kept (deleting `b, t, d = x.shape` can leave a `forward` that ignores its
        input, which no candidate was allowed to), else the proven text stays."""
        for candidate in dict.fromkeys((tidy(without_dead_code(source)), tidy(source))):
            if same_code(candidate, source) or (keeps_shape(candidate) and interesting(candidate)):
                return candidate
        return source

    def minimize(self, script: str, reproduced: RunRecord | None = None) -> MinimizeResult:
        """`reproduced`: the reproduction's run that showed the failure, when there was one."""
        if not keeps_pt2(script):
            raise NotReproducible("the script calls no PT2 entry point (torch.compile, torch.export or AOTInductor)")
        self.cache_dir = self.given_cache_dir or tempfile.mkdtemp(prefix="pt2-minimize-cache-")
        self.verify_dir = self.verify_cache_dir or tempfile.mkdtemp(prefix="pt2-minimize-verify-")
        self.compiler_off_checked, self.eager_failure = False, None
        try:
            started = time.monotonic()
            try:
                original, result, backend_env, off_run = self.first_runs(script, reproduced)
                self.target = original
            finally:
                self.target_known.set()
            log.info("minimizing a %s failure: %s", original.category, original.signature)
            check_compiler_off = self.check_compiler_off = self.needs_compiler_off_check(original, script, result, off_run)
            self.deadline = started + self.budget_s
            self.backend_env, leaps = self.backend_and_leaps(original, script, backend_env)

            def interesting(candidate: str) -> bool:
                return self.is_interesting(original, candidate, check_compiler_off)

            # The runs above showed the script interesting (it fails the same way on the candidates'
            # backend, and runs clean with the compiler off where that is checked): not run again.
            replacements = self.replacements_for(original, script)
            # What is left of the budget after the runs above, less a reserve for the runs after it.
            full_s = reproduced.duration_s if backend_env is not None and reproduced is not None else result.duration_s
            with self._lock:
                reducer = self.reducer = Reducer(
                    interesting, budget_s=max(0.0, self.deadline - time.monotonic()), parallelism=self.parallelism,
                    replacements=replacements,
                    reserve=self.reserve(self.full_run_s or full_s, self.guarded_without_compiler(check_compiler_off)),
                    stop=self.cancelled.is_set, keep_branch=self.keeps_branch(original))
            reduced = reducer.reduce(script, leaps=leaps, known_interesting=True)
            if self.cancelled.is_set():
                raise Cancelled("the minimize was cancelled")
            self.deadline = None  # the confirming runs get their full time: a result must not be lost
            source = self.tidied(reduced.source, interesting, reducer.keeps_shape) if reduced.source != script else script
            source, final = self.verified_result(source, script, original)
            reduced.stats.stop_reason = self.refused or reduced.stats.stop_reason
            reduced.stats.tokens_after = count_tokens(source)
            reduced.stats.lines_after = len(source.splitlines())
            return MinimizeResult(source, original, final, reduced.stats, check_compiler_off, self.match(original),
                                  runs=self.recent.of(source), backend=probe_backend(self.backend_env), runs_cut=self.runs_cut)
        finally:
            if self.cache_dir != self.given_cache_dir:
                remove_tree(self.cache_dir)  # iterative, never through a link: the candidates wrote in it
            if self.verify_dir != self.verify_cache_dir:
                remove_tree(self.verify_dir)
