"""Cold sandboxed runs vs the warm worker, on a script whose own work is small.

Runs a trivial torch.compile script (backend="eager") N times cold (`sandbox.run`: a fresh
interpreter imports torch each time) and N times through `WarmWorker` (fork of a process that
imported torch once), and prints medians side by side. The script reports its own in-process
time, so per-run overhead = wall time - the script's own time.
Targets (issue #4): warm per-run overhead <= 0.3 s and >= 5x faster than cold. The bubblewrap
sandbox (no network, read-only system, uid 65534, seccomp; per-run namespaces for warm runs) may
cost at most 0.1 s more per cold run and 0.2 s more per warm run than the unshare-based sandbox it
replaced. To compare, run this file from a checkout of each (it imports the runners/ beside it),
alternately, on the same machine with nothing else running; `--batches N` alternates cold and warm
batches so a change in machine load hits both.

    python benchmarks/worker_overhead.py [--runs 20] [--batches 1]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.sandbox import RunSpec, run  # noqa: E402
from runners.worker import WarmWorker  # noqa: E402

SCRIPT = """\
import time
started = time.perf_counter()
import torch
f = torch.compile(lambda x: x + 1, backend="eager")
f(torch.ones(4))
print(f"OWN {time.perf_counter() - started:.4f}")
"""


def measure(runner, runs: int) -> tuple[list[float], list[float]]:
    walls, owns = [], []
    for _ in range(runs):
        started = time.perf_counter()
        result = runner(RunSpec(script=SCRIPT))
        walls.append(time.perf_counter() - started)
        assert result.status == "ok", result.stderr[-500:]
        owns.append(float(next(l for l in result.stdout.splitlines() if l.startswith("OWN ")).split()[1]))
    return walls, owns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs per batch (default 20)")
    parser.add_argument("--batches", type=int, default=1,
                        help="alternate cold and warm batches this many times (default 1)")
    args = parser.parse_args()
    cold_walls, cold_owns, warm_walls, warm_owns = [], [], [], []
    started = time.perf_counter()
    with WarmWorker() as worker:
        start_s = time.perf_counter() - started
        for _ in range(args.batches):
            for walls, owns, runner in ((cold_walls, cold_owns, run), (warm_walls, warm_owns, worker.run)):
                more_walls, more_owns = measure(runner, args.runs)
                walls += more_walls
                owns += more_owns
        sandbox = worker.run(RunSpec(script="print(1)"))
    print(f"sandbox: {getattr(sandbox, 'sandbox', '') or 'unshare (before bubblewrap)'}")
    args.runs *= args.batches
    cold, warm = statistics.median(cold_walls), statistics.median(warm_walls)
    cold_over = statistics.median(w - o for w, o in zip(cold_walls, cold_owns))
    warm_over = statistics.median(w - o for w, o in zip(warm_walls, warm_owns))
    print(f"{args.runs} runs each of a trivial torch.compile(backend='eager') script")
    print(f"{'':28s} {'median wall s':>14s} {'script own s':>13s} {'overhead s':>11s}")
    print(f"{'cold (sandbox.run)':28s} {cold:14.3f} {statistics.median(cold_owns):13.3f} {cold_over:11.3f}")
    print(f"{'warm (WarmWorker.run)':28s} {warm:14.3f} {statistics.median(warm_owns):13.3f} {warm_over:11.3f}")
    print(f"warm worker start-up (once): {start_s:.2f} s")
    print(f"speed-up: {cold / warm:.1f}x (target >= 5x); warm per-run overhead {warm_over:.3f} s (target <= 0.3 s)")


if __name__ == "__main__":
    main()
