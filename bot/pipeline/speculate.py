"""Minimize beside the reproduction, on the core it leaves idle (issue 15).

The reproduction's first run is cold: a fresh interpreter with the category's diagnostics switched
on (TORCH_LOGS and the like are read at import, so no warm worker can serve it). For the realistic
reports that run is 8-35 s, mostly one core compiling, while the other core waits. A minimize
begun at the same time, on warm workers, presumes the failure it must keep from the cheapest
backend that shows one (`Minimizer(presume=True)`), since the reproduction has not said yet.

When the reproduction ends, `adopt` compares: if its deciding run failed the same way (category and
signature: what the minimizer itself would have compared it with), the search goes on with all of
its workers and its result is the minimize's; otherwise (another failure, none, a script the
reproduction had to change) the search is cancelled, its runs are thrown away, and the triage
minimizes as it would have without it. Either way the result is one the reproduction confirmed.

While both go on, the search runs one candidate at a time (`RunGate`): two at once beside the cold
run put three processes on two cores and slowed the reproduction it is waiting for.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

from runners.sandbox import RunResult, RunSpec

from bot.core.records import Classification
from bot.core.report import RunRecord
from bot.pipeline.minimize import Cancelled, MinimizeResult, Minimizer, NotReproducible

log = logging.getLogger(__name__)

Runner = Callable[[RunSpec], RunResult]


def shows_same_failure(deciding: RunRecord, presumed: Classification) -> bool:
    """The reproduction's deciding run failed the way the search presumed: the same category and
    failure signature (what Minimizer.original_failure asks of a cheaper backend's run)."""
    shown = deciding.classification
    return shown.category == presumed.category and shown.signature == presumed.signature


class RunGate:
    """A runner that lets at most `limit` runs go at once; `widen` raises the limit for the runs
    waiting and those to come."""

    def __init__(self, runner: Runner, limit: int):
        self.runner = runner
        self.limit = limit
        self.running = 0
        self.changed = threading.Condition()

    def __call__(self, spec: RunSpec) -> RunResult:
        with self.changed:
            self.changed.wait_for(lambda: self.running < self.limit)
            self.running += 1
        try:
            return self.runner(spec)
        finally:
            with self.changed:
                self.running -= 1
                self.changed.notify_all()

    def widen(self, limit: int) -> None:
        with self.changed:
            self.limit = limit
            self.changed.notify_all()


class Speculation:
    """One minimize of `script` in a thread of its own, begun before the reproduction's verdict."""

    def __init__(self, minimizer: Minimizer, gate: RunGate, script: str, parallelism: int):
        self.minimizer = minimizer
        self.gate = gate
        self.script = script
        self.parallelism = parallelism
        self.result: MinimizeResult | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._minimize, name="speculative-minimize", daemon=True)

    @classmethod
    def start(cls, make_minimizer: Callable[[Runner], Minimizer], runner: Runner, script: str,
              parallelism: int) -> "Speculation":
        """`make_minimizer(runner)` builds the Minimizer the triage would build, on the gated runner."""
        gate = RunGate(runner, limit=1)
        speculation = cls(make_minimizer(gate), gate, script, parallelism)
        speculation.thread.start()
        return speculation

    def _minimize(self) -> None:
        try:
            self.result = self.minimizer.minimize(self.script)
        except Cancelled:
            pass
        except BaseException as exc:  # NotReproducible, or a bug: adopt() decides what it means
            self.error = exc
        finally:
            self.minimizer.target_known.set()  # a search that ended before knowing its target wakes adopt()

    def adopt(self, script: str, deciding: RunRecord) -> MinimizeResult | None:
        """The search's result when it kept the failure the reproduction's `deciding` run showed, of
        the script the triage goes on with (None, after cancelling it, otherwise). Raises
        NotReproducible when the search found nothing to minimize in that same failure (the
        compiler-off run fails the same way): the triage's own minimize would find that too."""
        self.minimizer.target_known.wait()
        target = self.minimizer.target
        if script != self.script or target is None or not shows_same_failure(deciding, target):
            self.cancel()
            return None
        self.minimizer.know_full_run(deciding.duration_s)
        self.gate.widen(self.parallelism)
        self.thread.join()
        if isinstance(self.error, NotReproducible):
            raise self.error
        if self.error is not None:
            log.warning("the minimize begun beside the reproduction failed (%r); minimizing again", self.error)
        return self.result

    def cancel(self) -> None:
        """Stop the search and wait for its run in flight (warm: about a second)."""
        self.minimizer.cancel()
        self.gate.widen(self.parallelism)
        self.thread.join()
