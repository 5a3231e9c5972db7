"""The minimize begun beside the reproduction: kept when the reproduction shows the failure it
presumed, cancelled (and its runs thrown away) when it does not."""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from bot.pipeline.minimize import Minimizer
from bot.pipeline.reproduce import ALWAYS_ENV, PROBE_ENV, output_text
from bot.pipeline.speculate import RunGate, Speculation, shows_same_failure
from runners.pool import WarmPool
from runners.sandbox import RunSpec, run

# 11 code lines: a data-dependent branch under fullgraph=True, with a helper and a constant to shrink
GRAPH_BREAK = """\
import torch

SCALE = 3


def helper(x):
    return x * SCALE


def f(x):
    y = helper(x) + 1
    if y.sum() > 0:
        return y.cos()
    return y.sin()


torch.compile(f, fullgraph=True)(torch.ones(4, 4))
"""


@pytest.fixture(scope="module")
def pool():
    with WarmPool(2) as warm:
        yield warm


def reproduction_of(classifier, script: str) -> SimpleNamespace:
    """What the reproduction's deciding run says of `script`: a cold run, as the triage makes it."""
    result = run(RunSpec(script=script, env=dict(ALWAYS_ENV)))
    shown = classifier.classify_text(output_text(result), context=script)
    return SimpleNamespace(classification=shown, status=result.status, duration_s=result.duration_s)


def test_the_gate_lets_one_run_go_until_it_is_widened():
    """Beside the reproduction the search runs one candidate at a time; adopted, it runs as many as
    it has workers, the waiting ones included."""
    running, most, release = [], [], threading.Event()
    lock = threading.Lock()

    def slow_run(spec):
        with lock:
            running.append(spec)
            most.append(len(running))
        release.wait(5)
        with lock:
            running.remove(spec)
        return spec

    gate = RunGate(slow_run, limit=1)
    threads = [threading.Thread(target=gate, args=(RunSpec(script=str(i)),)) for i in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    assert max(most) == 1 and len(running) == 1
    gate.widen(3)
    time.sleep(0.3)
    assert len(running) == 3
    release.set()
    for thread in threads:
        thread.join()


@pytest.mark.slow
def test_a_minimize_begun_beside_the_reproduction_is_kept_when_the_reproduction_shows_its_failure(classifier, pool):
    """It presumes the failure from the cheapest backend that shows one (backend="eager" for a graph
    break: no Inductor compile before the search), and the reproduction's run confirms it."""
    envs = []

    def recording(spec):
        envs.append(spec.env.get(PROBE_ENV))
        return pool.run(spec)

    speculation = Speculation.start(lambda gated: Minimizer(classifier, gated, budget_s=60, parallelism=2, presume=True),
                                    recording, GRAPH_BREAK, parallelism=2)
    deciding = reproduction_of(classifier, GRAPH_BREAK)
    assert deciding.classification.category == "graph_break"
    result = speculation.adopt(GRAPH_BREAK, deciding)
    assert result is not None and result.same_failure and result.original.signature == deciding.classification.signature
    assert result.stats.lines_after < result.stats.lines_before and "SCALE" not in result.source
    # the presumption's first run (beside the compiler-off one): the cheapest backend, not Inductor
    assert next(env for env in envs if env != '{"compiler": "off"}') == '{"backend": "eager"}'
    assert "torch.compile" in result.source and "fullgraph=True" in result.source


@pytest.mark.slow
def test_a_minimize_whose_presumed_failure_the_reproduction_does_not_show_is_cancelled(classifier, pool):
    """Another failure (here: another signature), or a script the reproduction changed: the search
    stops, no run starts after it, and the triage minimizes as it would have without it."""
    runs = []
    speculation = Speculation.start(
        lambda gated: Minimizer(classifier, gated, budget_s=60, parallelism=2, presume=True),
        lambda spec: runs.append(spec) or pool.run(spec), GRAPH_BREAK, parallelism=2)
    shown = reproduction_of(classifier, GRAPH_BREAK)
    other = SimpleNamespace(classification=replace(shown.classification, signature=shown.classification.signature + "!"),
                            status="failed", duration_s=1.0)
    assert shows_same_failure(shown, speculation.minimizer.target_known.wait(60) and speculation.minimizer.target)
    assert speculation.adopt(GRAPH_BREAK, other) is None and not speculation.thread.is_alive()
    made = len(runs)
    time.sleep(1)
    assert len(runs) == made  # no run after the cancel
    assert speculation.result is None and speculation.error is None  # cancelled: no result, and no error
    changed = Speculation.start(lambda gated: Minimizer(classifier, gated, budget_s=60, parallelism=2, presume=True),
                                pool.run, GRAPH_BREAK, parallelism=2)
    assert changed.adopt("import math\n" + GRAPH_BREAK, shown) is None and not changed.thread.is_alive()


def test_a_search_that_fails_before_knowing_its_target_does_not_leave_adopt_waiting(classifier):
    """A bug of ours that ends the search before it has classified the original must wake the
    triage's `adopt` (which waits for the target): it then minimizes as without the speculation."""
    class Broken(Minimizer):
        def minimize(self, script, reproduced=None):
            raise RecursionError("maximum recursion depth exceeded")

    speculation = Speculation.start(lambda gated: Broken(classifier, gated, budget_s=60, presume=True),
                                    lambda spec: None, GRAPH_BREAK, parallelism=2)
    deciding = SimpleNamespace(classification=None, status="failed", duration_s=1.0)
    finished = threading.Thread(target=lambda: speculation.adopt(GRAPH_BREAK, deciding), daemon=True)
    finished.start()
    finished.join(10)
    assert not finished.is_alive() and isinstance(speculation.error, RecursionError)
