"""The ladder, disposition and workaround stages: runs in parallel, decisions in bot/core.

The ladder re-runs the (minimized) repro once per rung of bot/rules/ladder.yaml, each run with the
in-run probe's switch (`TRIAGE_TORCH_PROBE`: backend, compiler off, dynamic=False, fullgraph=False),
in parallel through the runner it is given (warm workers); the side switches run after the rungs,
on the backend of the rung that owns the failure. A run made already is not made again: the
repro's own failing run is the `inductor` rung when it compiled with the default backend, and the
minimizer's runs of the minimized repro (its candidates' backend, the compiler off) are those
rungs. When a rung fails the same way, the rungs above it not yet started are not run: the first
rung that fails owns the failure, and the higher ones cannot change that (when it is the
compiler-off rung, the code fails without PT2).
"""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Mapping

from runners.reduce.shape import traced_source
from runners.sandbox import RunSpec

from bot.core import disposition as disposition_rules
from bot.core import ladder as ladder_rules
from bot.core import outcome, workaround
from bot.core.classify import Classifier
from bot.core.report import LadderReport, Reproduction, RunRecord, Workaround
from bot.pipeline.reproduce import ALWAYS_ENV, PROBE_ENV, Runner, output_text, record_reproduces, uncaught_exception

@dataclass(frozen=True)
class Target:
    """The failure the ladder localizes: the script that failed and how it failed."""

    script: str
    which: str  # repro | minimized
    category: str
    record: RunRecord  # the run that reproduced it (the repro's, for a minimized script too: same signature)
    # runs of `script` made already, (classification, result) by their probe's JSON (None: no probe,
    # the script's own backend): the minimizer's runs of its result (MinimizeResult.runs)
    known: Mapping[str | None, tuple] = field(default_factory=dict, compare=False)


def observed(result, classification, silent_differs: bool | None = None) -> ladder_rules.Observed:
    """One run (the runner's result and its classification) as the ladder's judgement sees it."""
    return ladder_rules.Observed(result.status, outcome.launcher_failed(result), classification.category,
                                 uncaught_exception(result), silent_differs)


def deciding_record(reproduction: Reproduction | None) -> RunRecord | None:
    """The run that showed the failure: the first failing one, else (a silent failure) the
    differential run that measured it."""
    if reproduction is None or not reproduction.reproduced:
        return None
    failing = next((r for r in reproduction.runs if record_reproduces(r)), None)
    return failing or next((r for r in reversed(reproduction.runs) if r.probe), None)


class LadderRunner:
    def __init__(self, classifier: Classifier, runner: Runner, *, timeout_s: float, jobs: int, gpu: bool,
                 cache_dir: str | None = None):
        self.cache_dir = cache_dir  # the compile cache of the minimized repro (its verifying run wrote there; no candidate did)
        self.classifier = classifier
        self.runner = runner
        self.timeout_s = timeout_s
        self.jobs = max(1, jobs)
        self.gpu = gpu

    @property
    def table(self) -> ladder_rules.LadderTable:
        return self.classifier.ruleset.ladder

    def climb(self, target: Target) -> LadderReport:
        started = time.monotonic()
        failed = bool(target.record.failed)
        if failed and ladder_rules.compiler_free(self.table, target.script, target.record.output_tail):
            return self._own_run_is_compiler_off(target)
        why_not = ladder_rules.not_applicable(self.table, target.script, target.category, failed)
        if why_not:
            return LadderReport(skipped=why_not, script=target.which)
        goal = self._observed_target(target)
        results = self._run_all(target, goal, self.table.rungs)
        switches = ladder_rules.switches_for(self.table, target.script, target.category)
        results += self._run_switches(target, goal, switches, ladder_rules.owning_rung(self.table, results))
        verdict = ladder_rules.decide(self.table, results, target.category, self.compiled_only_default(target))
        return LadderReport(rungs=results, layer=verdict.layer, owner=verdict.owner, category=verdict.category,
                            cheapest_backend=verdict.cheapest_backend, sentence=verdict.sentence,
                            workarounds=verdict.workarounds, script=target.which,
                            wall_s=round(time.monotonic() - started, 2))

    def compiled_only_default(self, target: Target) -> bool:
        """The target's category is the compiled_only rule's default (the script's own code raised
        it, only with the compiler on, and the text did not name it), which the owner may refine."""
        rule = target.record.classification.rule
        return rule == outcome.COMPILED_ONLY_RULE and target.category == self.classifier.ruleset.reproduction["compiled_only"]["category"]

    def _own_run_is_compiler_off(self, target: Target) -> LadderReport:
        """A script that never reaches the compiler failed: that run was the compiler-off rung, and
        the rungs above it are not needed (eager PyTorch or the code owns the failure)."""
        first, record = self.table.rungs[0], target.record
        results = (ladder_rules.RungResult(first.id, first.title, ladder_rules.FAILS, target.category, record.exception,
                                           record.duration_s),) + tuple(
            ladder_rules.RungResult(r.id, r.title, ladder_rules.NOT_NEEDED) for r in self.table.rungs[1:])
        verdict = ladder_rules.decide(self.table, results, target.category)
        sentence = f"The script calls no part of the compiler, so its own run was the compiler-off run: {verdict.sentence[0].lower()}{verdict.sentence[1:]}"
        return LadderReport(rungs=results, layer=verdict.layer, owner=verdict.owner, category=verdict.category,
                            cheapest_backend=None, sentence=sentence, workarounds=(), script=target.which)

    def _observed_target(self, target: Target) -> ladder_rules.Observed:
        record = target.record
        return ladder_rules.Observed(record.status, bool(record.failed), target.category, record.exception)

    def _run_all(self, target: Target, goal: ladder_rules.Observed,
                 rungs: tuple[ladder_rules.Rung, ...]) -> tuple[ladder_rules.RungResult, ...]:
        done = self._known_rungs(target, goal)
        lock = threading.Lock()

        def climb_one(rung: ladder_rules.Rung) -> None:
            with lock:  # a rung whose turn comes after a lower one failed the same way is not run
                if ladder_rules.owned_below(self.table, done, rung):
                    return
            result = self._run_rung(target, goal, rung, ladder_rules.probe_for(rung, self.table, target.category))
            with lock:
                done[result.rung] = result

        todo = [r for r in rungs if r.id not in done]
        with ThreadPoolExecutor(self.jobs) as pool:  # taken in order: the lowest rungs first
            list(pool.map(climb_one, todo))
        return tuple(done.get(r.id) or ladder_rules.RungResult(
            r.id, r.title, ladder_rules.NOT_NEEDED if ladder_rules.owned_below(self.table, done, r) else "not_run")
            for r in rungs)

    def _known_rungs(self, target: Target, goal: ladder_rules.Observed) -> dict[str, ladder_rules.RungResult]:
        """The rungs whose runs were made already, judged as if run now: the repro's own failing
        run (_reused_inductor) and the target's known runs with the rung's exact probe (the script's
        own backend standing for the last rung where the probe would only name that backend)."""
        done: dict[str, ladder_rules.RungResult] = {}
        reused = self._reused_inductor(target, goal)
        if reused:
            done[reused.rung] = reused
        last = self.table.rungs[-1]
        for rung in self.table.rungs:
            probe = ladder_rules.probe_for(rung, self.table, target.category)
            known = target.known.get(json.dumps(probe, sort_keys=True))
            if known is None and rung is last and probe == dict(last.probe) and ladder_rules.switchable(self.table, target.script):
                known = target.known.get(None)
            if known is not None and known[1].status not in ("timeout", "limit") and rung.id not in done:
                done[rung.id] = self._judged(goal, rung, probe, target.category, *known)
        return done

    def _run_switches(self, target: Target, goal: ladder_rules.Observed, switches: tuple[ladder_rules.Rung, ...],
                      owner: ladder_rules.Rung | None) -> tuple[ladder_rules.RungResult, ...]:
        """The side switches, after the rungs: each runs on the owning rung's backend (the cheapest
        that still fails), and none runs when the compiler-off rung owns the failure."""
        probes = {s.id: ladder_rules.switch_probe(s, owner, self.table, target.category) for s in switches}
        runnable = [s for s in switches if probes[s.id] is not None]
        with ThreadPoolExecutor(self.jobs) as pool:
            ran = dict(zip((s.id for s in runnable),
                           pool.map(lambda s: self._run_rung(target, goal, s, probes[s.id]), runnable)))
        return tuple(ran.get(s.id) or ladder_rules.RungResult(s.id, s.title, "not_run") for s in switches)

    def _reused_inductor(self, target: Target, goal: ladder_rules.Observed) -> ladder_rules.RungResult | None:
        """The repro's own failing run is the inductor rung when the script compiles with the default
        backend and the failure was seen by the launcher (a silent failure needs its comparison run)."""
        last = self.table.rungs[-1]
        if target.which != "repro" or ladder_rules.CUSTOM_BACKEND.search(target.script) or not goal.failed or last.backend != "inductor":
            return None
        return ladder_rules.RungResult(last.id, last.title, ladder_rules.FAILS, target.category, target.record.exception,
                                       target.record.duration_s)

    def _run_rung(self, target: Target, goal: ladder_rules.Observed, rung: ladder_rules.Rung,
                  probe: dict) -> ladder_rules.RungResult:
        spec = RunSpec(script=target.script, env={**ALWAYS_ENV, PROBE_ENV: json.dumps(probe, sort_keys=True)},
                       timeout_s=self.timeout_s, gpu=self.gpu, cache_dir=self.cache_dir)
        result = self.runner(spec)
        classification = self.classifier.classify_text(output_text(result), context=target.script)
        return self._judged(goal, rung, probe, target.category, classification, result)

    def _judged(self, goal: ladder_rules.Observed, rung: ladder_rules.Rung, probe: dict, category: str,
                classification, result) -> ladder_rules.RungResult:
        """One rung's run (`result`, classified) against the repro's failure."""
        seen = observed(result, classification, self._silent_differs(result, category))
        title = rung.title if probe.get("backend") == rung.backend else f'{rung.title} on backend="{probe["backend"]}"'
        return ladder_rules.RungResult(rung.id, title, ladder_rules.rung_outcome(rung, goal, seen, self.table.same_refusal),
                                       classification.category if seen.failed else None, uncaught_exception(result),
                                       round(result.duration_s, 2))

    def _silent_differs(self, result, category: str) -> bool | None:
        judge = self.table.judges.get(category)
        if not judge:
            return None
        findings = outcome.silent_findings(getattr(result, "probe", None), ((category, judge),),
                                           self.classifier.ruleset.reproduction)
        return findings[0].reproduced if findings else None


# --- disposition and workaround ---------------------------------------------------------------------

def disposition_facts(reproduction: Reproduction | None, script: str | None, issue_text: str,
                      ladder: LadderReport | None, ran: str | None = None) -> disposition_rules.Facts:
    """`ran`: the script the rules' `code` reads (the minimized repro where there is one)."""
    deciding = deciding_record(reproduction)
    if script is None or reproduction is None or reproduction.status == "needs_gpu":
        state, text = "not_run", issue_text
    elif reproduction.reproduced:
        state, text = "reproduced", workaround.with_caused_by_source(deciding.output_tail, script) if deciding else ""
        # what a silent reproduction measured (the recompiles' first failing guard) is its failure's text
        text += "".join(f"\n{check.summary}" for check in reproduction.silent if check.reproduced)
    else:
        state, text = "not_reproduced", ""
    off = ladder.rungs[0] if ladder and ladder.rungs else None  # the compiler-off rung: first, by the table's rule
    reason = (reproduction.reason_text if reproduction else None) or (
        "the issue has no runnable repro" if script is None else None)
    read = ran or script or ""
    return disposition_rules.Facts(state=state, has_script=script is not None, failure_text=text,
                                   layer=ladder.layer if ladder else None, eager_error=off.exception if off else None,
                                   reason_text=reason, ladder_note=ladder.sentence if ladder and ladder.layer else None,
                                   script=read, traced=traced_source(read) if read else None)


REWRITES = {
    "torch_cond": lambda script, output: workaround.torch_cond(script, workaround.failing_line(output)),
    **{kind: (lambda script, output, kind=kind: workaround.config_switch(kind, script)) for kind in workaround.CONFIG_SWITCHES},
    "maybe_mark_dynamic": lambda script, output: workaround.maybe_mark_dynamic(script),
    "freezing_off": lambda script, output: workaround.freezing_off(script),
}


def try_workarounds(kinds: tuple[str, ...], script: str, output: str, runner: Runner, *, timeout_s: float,
                    gpu: bool, backend: str | None = None) -> Workaround | None:
    """The first rewrite that runs clean, else the first one tried with what its run showed.
    `backend`: the cheapest backend the script already fails the same way on (the minimizer's),
    which the rewrite runs on, as a side switch runs on the owning rung's backend: the README
    example's torch.cond rewrite took 15 s to verify with Inductor, and under a second with
    backend="eager", where its graph break showed."""
    env = {**ALWAYS_ENV, PROBE_ENV: json.dumps({"backend": backend})} if backend else dict(ALWAYS_ENV)
    where = f' with backend="{backend}", the cheapest backend that showed the failure' if backend else ""
    tried: Workaround | None = None
    for kind in kinds:
        try:
            rewrite = REWRITES[kind](script, workaround.with_caused_by_source(output, script))
        except SyntaxError:
            rewrite = None
        if rewrite is None:
            continue
        result = runner(RunSpec(script=rewrite.source, env=env, timeout_s=timeout_s, gpu=gpu))
        failed = outcome.launcher_failed(result)
        shown = f"ran to completion{where}" if not failed else f"still fails{where} ({result.status}): {uncaught_exception(result, 200)}"
        found = Workaround(rewrite.kind, rewrite.note, rewrite.source, not failed, shown)
        if found.verified:
            return found
        tried = tried or found
    return tried
