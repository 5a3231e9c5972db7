"""How `--budget-total` is split across the stages (a fake clock: no test here waits)."""
from __future__ import annotations

from bot.pipeline.budget import MIN_RUN_S, Budget


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def budget(total: float = 300) -> tuple[Budget, Clock]:
    clock = Clock()
    return Budget(total, clock=clock), clock


def test_runs_get_what_they_ask_for_until_the_budget_runs_low():
    plan, clock = budget()
    assert plan.run_timeout(120) == 120
    clock.now += 250
    assert plan.run_timeout(120) == 50
    assert plan.run_timeout(120, share=0.5) == 25  # reproduce: several runs share what is left
    clock.now += 100
    assert plan.left() == 0 and plan.run_timeout(120) == MIN_RUN_S


def test_minimize_keeps_a_quarter_of_the_total_for_the_stages_after_it():
    plan, clock = budget(300)
    assert plan.minimize_budget(600) == 225  # --budget larger than the total: the total decides
    assert plan.minimize_budget(60) == 60
    clock.now += 200  # reproduce took 200 s: 100 left, 75 of them kept back
    assert plan.minimize_budget(60) == 25
    clock.now += 20
    assert plan.minimize_budget(60) == 0  # 5 s is not worth starting a search


def test_the_graph_minifier_runs_only_with_time_to_spare():
    plan, clock = budget(300)
    assert plan.graph_minifier_timeout(600) == 255  # 45 s kept for the minify step's floor and the check run
    clock.now += 200  # 100 s left: 55 s for the minifier is under its minimum
    assert plan.graph_minifier_timeout(600) == 0
    assert "total budget (300 s) is spent" in plan.spent_note()


def test_the_ladder_splits_what_is_left_over_its_waves_of_rungs():
    plan, clock = budget(300)
    clock.now += 210
    assert plan.ladder_timeout(120) == 30 and plan.has_room_for_runs()
    clock.now += 85
    assert not plan.has_room_for_runs()
