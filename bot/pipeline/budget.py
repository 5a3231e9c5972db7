"""The triage's total budget (`--budget-total`), split across the stages as they come.

The stages run in order. Reproducing takes what it needs, each run capped by what is left.
Minimizing gets its own budget (`--budget`), but never more than what is left after a reserve kept
for the stages behind it: the ladder, the workaround and the regression test's verification, which
then share what is left. The FX-graph minifier comes last and only with time to spare. Every
sandboxed run gets at most what is left, so a triage ends within its budget plus at most one
run's start-up and the minimizer's own overrun (≤ 10%).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

RESERVE_SHARE = 0.25  # of the total, kept for the stages after minimize
MIN_RUN_S = 5.0  # a run given less than this would not even start torch
MIN_MINIMIZE_S = 10.0  # below this minimizing is skipped, not started
MIN_GRAPH_MINIFIER_S = 60.0  # torch's after_aot minifier re-runs the repro many times
# What the graph stage spends beyond its minifier's limit: the minify step's own floor (30 s,
# runners/minifier.py) and the run that checks the repro it wrote.
GRAPH_MINIFIER_SLACK_S = 45.0
LADDER_WAVES = 3  # the ladder's rungs run in about this many waves of parallel runs


@dataclass
class Budget:
    total_s: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)

    def __post_init__(self):
        self.started = self.started or self.clock()

    def left(self) -> float:
        return max(0.0, self.total_s - (self.clock() - self.started))

    def run_timeout(self, wanted: float, share: float = 1.0) -> float:
        """A sandboxed run's time limit: what it asked for, capped by (a share of) what is left. A
        stage of several runs (reproduce: the diagnostics, the flakiness check, a differential run)
        caps each at half."""
        return max(MIN_RUN_S, min(wanted, share * self.left()))

    def minimize_budget(self, wanted: float) -> float:
        """Minimize's search budget: `--budget`, capped by what is left beyond the later stages' reserve
        (0 when that is under MIN_MINIMIZE_S: then it is skipped)."""
        budget = min(wanted, self.left() - RESERVE_SHARE * self.total_s)
        return budget if budget >= MIN_MINIMIZE_S else 0.0

    def has_room_for_runs(self) -> bool:
        return self.left() >= 2 * MIN_RUN_S

    def ladder_timeout(self, wanted: float) -> float:
        return max(MIN_RUN_S, min(wanted, self.left() / LADDER_WAVES))

    def graph_minifier_timeout(self, wanted: float) -> float:
        """The after_aot minifier's limit, or 0 when too little is left to start it."""
        timeout = min(wanted, self.left() - GRAPH_MINIFIER_SLACK_S)
        return timeout if timeout >= MIN_GRAPH_MINIFIER_S else 0.0

    def spent_note(self) -> str:
        return f"skipped: the total budget ({self.total_s:.0f} s) is spent ({self.left():.0f} s left)"
