"""`pt2-triage minimize` against two peer reducers, on real PT2 failures (CPU).

Each case in benchmarks/minimize_cases/ is a 40-55 line script that fails with one PT2 failure
(graph break, Inductor compile/runtime/accuracy bug, recompilation, export, AOTAutograd, Dynamo
internal error, dynamic shapes) buried in model code that has nothing to do with it. Per case,
one after another so they see the same machine:

  ours               bot.pipeline.minimize.Minimizer over runners/reduce/, candidates run by a pool of
                     warm workers (--jobs), exactly as `pt2-triage minimize` runs them
  pysource-minimize  pysource_minimize.minimize(source, checker), the checker calling
                     benchmarks/interesting.py (sequential: the library tests one candidate at a time)
  shrinkray          the `shrinkray` CLI with benchmarks/interesting.py as its test (--jobs parallel)

The peers' test is one script, interesting.py: a cold sandboxed run, then the same policy as ours
(`bot.pipeline.minimize.same_failure`: same category and signature, no NameError-style slippage), with the
Inductor cache shared between the runs of one reduction as ours shares it. Every reducer gets the
same wall budget per case; a peer still running then is stopped (shrinkray: its process tree;
pysource-minimize: no check starts after the deadline) and its best result so far is taken.
Every final result is checked once more with interesting.py ("verified"); tokens are
runners.reduce.count_tokens for all.

Targets (issue #5): ours is no larger than the best peer on every case, at <= 0.5x the best
peer's median wall time.

    python benchmarks/minimize_vs_peers.py [--budget 300] [--only CASE] [--quick] [--json FILE]
    python benchmarks/minimize_vs_peers.py --reducers ours --others-from FILE   # rerun ours after a change

Needs the `bench` extra (pip install -e '.[bench]'). shrinkray 0.0.x (the only release for
Python < 3.12) reads the candidate on stdin and writes its best to --target; releases >= 25
take the file as an argument and reduce it in place; both are handled.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.cli.main import build_classifier, make_runner  # noqa: E402
from bot.pipeline.minimize import Minimizer, NotReproducible, same_failure  # noqa: E402
from bot.core.records import Classification  # noqa: E402
from runners.reduce import count_tokens  # noqa: E402
from runners.sandbox import RunResult, RunSpec  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
CASES_DIR = BENCH_DIR / "minimize_cases"
INTERESTING = BENCH_DIR / "interesting.py"
REDUCERS = ("ours", "pysource-minimize", "shrinkray")
QUICK_CASES = ("graph_break_print", "export_dim_specialized")
QUICK_BUDGET_S = 60.0
KILL_GRACE_S = 5.0


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    category: str  # what the original classifies as here (checked against the file's header)
    signature: str
    compiler_off: bool = False  # candidates must also run clean with Dynamo disabled (eager_clean categories)


@dataclass
class Outcome:
    reducer: str
    tokens: int
    lines: int  # non-blank
    runs: int  # predicate runs (sandboxed runs of a candidate)
    wall_s: float
    budget_hit: bool
    verified: bool | None = None  # the final result still satisfies interesting.py
    note: str = ""
    source: str = field(default="", repr=False)
    progress: list[tuple[float, int]] = field(default_factory=list, repr=False)  # (s, tokens) per interesting run

    def reached(self, tokens: int) -> float | None:
        """Seconds until it first held a candidate of at most `tokens` tokens."""
        return next((at for at, size in sorted(self.progress) if size <= tokens), None)


def nonblank_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def measure(reducer: str, source: str, runs: int, wall_s: float, budget_hit: bool, note: str = "",
            progress: list[tuple[float, int]] | None = None) -> Outcome:
    return Outcome(reducer, count_tokens(source), nonblank_lines(source), runs, round(wall_s, 1), budget_hit,
                   note=note, source=source, progress=progress or [])


# --- the interestingness script, as the peers call it --------------------------------------------

def interesting_argv(case: Case, timeout_s: float) -> list[str]:
    return [sys.executable, str(INTERESTING), "--category", case.category, "--signature", case.signature,
            "--timeout", str(timeout_s)] + (["--compiler-off"] if case.compiler_off else [])


def interesting_env(run_log: Path, cache_dir: str) -> dict[str, str]:
    return {**os.environ, "PT2_BENCH_RUN_LOG": str(run_log), "PT2_BENCH_CACHE_DIR": cache_dir}


def count_runs(run_log: Path) -> int:
    return len(run_log.read_text().splitlines()) if run_log.exists() else 0


def logged_progress(run_log: Path, started_epoch: float) -> list[tuple[float, int]]:
    """(seconds since the start, tokens) of each interesting run interesting.py logged."""
    lines = run_log.read_text().splitlines() if run_log.exists() else []
    return [(round(float(ended) - started_epoch, 1), int(tokens))
            for verdict, _took, ended, tokens in (line.split() for line in lines) if verdict == "1"]


def verify(case: Case, source: str, timeout_s: float) -> bool:
    done = subprocess.run(interesting_argv(case, timeout_s), input=source.encode(), capture_output=True)
    return done.returncode == 0


def load_case(path: Path, timeout_s: float) -> Case:
    """The case with the failure it shows here; a case whose failure is not its header's is an error."""
    source = path.read_text(encoding="utf-8")
    described = subprocess.run([sys.executable, str(INTERESTING), "--describe", "--timeout", str(timeout_s), str(path)],
                               capture_output=True, text=True, check=True)
    failure = json.loads(described.stdout)
    header = next((line.split(":", 1)[1].strip() for line in source.splitlines() if line.startswith("# category:")), None)
    if failure["category"] != header:
        raise SystemExit(f"{path.name}: fails as {failure['category']} ({failure['signature']}), header says {header}")
    return Case(path.stem, source, failure["category"], failure["signature"], failure["compiler_off"])


# --- stopping a peer's whole process tree ----------------------------------------------------------

def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def kill_tree(root: int) -> None:
    """SIGSTOP the tree top-down until no new process appears (so nothing spawns or reparents
    while we look), then SIGKILL all of it. The peers' tests run in sessions of their own, so
    killing the peer's process group alone would leave them running into the next measurement."""
    stopped: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        stopped.append(pid)
        frontier.extend(child for child in children_of(pid) if child not in stopped)
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- the three reducers ------------------------------------------------------------------------------

def counting(runner: Callable[[RunSpec], RunResult], counter: list[int]) -> Callable[[RunSpec], RunResult]:
    lock = threading.Lock()

    def run(spec: RunSpec) -> RunResult:
        with lock:
            counter[0] += 1
        return runner(spec)
    return run


class TracedMinimizer(Minimizer):
    """Minimizer that notes when each run ended and what it classified as, to see when it first
    held a candidate of a given size (its predicate is `same_failure` on exactly these)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.trace: list[tuple[float, str, Classification, str]] = []

    def classify_run(self, script: str) -> tuple[Classification, RunResult]:
        classification, result = super().classify_run(script)
        self.trace.append((time.monotonic(), script, classification, result.status))
        return classification, result


def run_ours(case: Case, budget_s: float, timeout_s: float, jobs: int) -> Outcome:
    """As `pt2-triage minimize --no-graph-minifier` does it: warm pool start-up included in the wall."""
    counter = [0]
    started = time.monotonic()
    with ExitStack() as stack:
        runner = counting(make_runner(stack, jobs), counter)
        minimizer = TracedMinimizer(build_classifier(None), runner, budget_s=budget_s, timeout_s=timeout_s,
                                    parallelism=jobs)
        try:
            result = minimizer.minimize(case.source)
        except NotReproducible as exc:
            return measure("ours", case.source, counter[0], time.monotonic() - started, False, f"not reproducible: {exc}")
    wall = time.monotonic() - started
    note = result.stats.stop_reason
    if result.final.signature != case.signature:
        note += f"; final signature differs: {result.final.signature}"
    progress = [(round(at - started, 1), count_tokens(script)) for at, script, classification, status in minimizer.trace
                if same_failure(result.original, classification, status)]
    return measure("ours", result.source, counter[0], wall, result.stats.stop_reason.startswith("budget"), note, progress)


class OutOfBudget(Exception):
    pass


def run_pysource_minimize(case: Case, budget_s: float, timeout_s: float, work: Path) -> Outcome:
    import pysource_minimize

    run_log, cache_dir = work / "runs.log", str(work / "cache")
    env = interesting_env(run_log, cache_dir)
    best = [case.source]
    started, started_epoch = time.monotonic(), time.time()
    deadline = started + budget_s

    def checker(candidate: str) -> bool:
        if time.monotonic() > deadline:
            raise OutOfBudget
        ok = subprocess.run(interesting_argv(case, timeout_s), input=candidate.encode(), env=env,
                            capture_output=True).returncode == 0
        if ok:  # pysource-minimize keeps every interesting candidate: the last one is its best
            best[0] = candidate
        return ok

    budget_hit, note = False, ""
    try:
        result = pysource_minimize.minimize(case.source, checker)
    except OutOfBudget:
        result, budget_hit = best[0], True
    except pysource_minimize.CouldNotMinimize as exc:
        result, note = case.source, f"could not minimize: {exc}"
    return measure("pysource-minimize", result, count_runs(run_log), time.monotonic() - started, budget_hit, note,
                   logged_progress(run_log, started_epoch))


def installed_version(distribution: str) -> str:
    """The installed version, or "not installed" (CI installs no peers: it runs only our reducer)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def shrinkray_version() -> str:
    return importlib.metadata.version("shrinkray")


def shrinkray_argv(case: Case, timeout_s: float, jobs: int, input_file: Path, target: Path) -> list[str]:
    test = shlex.join(interesting_argv(case, timeout_s))
    exe = shutil.which("shrinkray", path=str(Path(sys.executable).parent)) or "shrinkray"
    kill_after = timeout_s + 30  # interesting.py's own sandbox timeout decides first
    if int(shrinkray_version().split(".")[0]) == 0:
        # 0.0.x: the test reads stdin; best result to --target; it multiplies --timeout by 10
        return [exe, "--timeout", str(kill_after / 10), "--parallelism", str(jobs), "--target", str(target),
                test, str(input_file)]
    return [exe, "--ui", "basic", "--input-type", "arg", "--formatter", "none", "--timeout", str(kill_after),
            "--parallelism", str(jobs), test, str(target)]


def run_shrinkray(case: Case, budget_s: float, timeout_s: float, jobs: int, work: Path) -> Outcome:
    run_log, cache_dir = work / "runs.log", str(work / "cache")
    input_file, target = work / f"{case.name}.py", work / "reduced.py"
    input_file.write_text(case.source)
    target.write_text(case.source)
    argv = shrinkray_argv(case, timeout_s, jobs, input_file, target)
    started, started_epoch = time.monotonic(), time.time()
    with open(work / "shrinkray.log", "wb") as log:
        proc = subprocess.Popen(argv, env=interesting_env(run_log, cache_dir), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True, cwd=work)
        try:
            proc.wait(timeout=budget_s)
            budget_hit = False
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            proc.wait()
            budget_hit = True
    wall = time.monotonic() - started
    note = "" if budget_hit or proc.returncode == 0 else f"exit {proc.returncode}: {(work / 'shrinkray.log').read_text(errors='replace')[-300:]}"
    return measure("shrinkray", target.read_text(), count_runs(run_log), wall, budget_hit, note,
                   logged_progress(run_log, started_epoch))


def run_reducer(name: str, case: Case, args: argparse.Namespace) -> Outcome:
    with tempfile.TemporaryDirectory(prefix=f"pt2-bench-{name}-") as work:
        if name == "ours":
            outcome = run_ours(case, args.budget, args.timeout, args.jobs)
        elif name == "pysource-minimize":
            outcome = run_pysource_minimize(case, args.budget, args.timeout, Path(work))
        else:
            outcome = run_shrinkray(case, args.budget, args.timeout, args.jobs, Path(work))
    outcome.verified = verify(case, outcome.source, args.timeout)
    return outcome


# --- report ------------------------------------------------------------------------------------------

def row(case: Case, original_tokens: int, outcome: Outcome) -> str:
    wall = f"{outcome.wall_s:.0f}{'*' if outcome.budget_hit else ''}"
    return (f"{case.name:24s} {outcome.reducer:18s} {original_tokens:>5d} -> {outcome.tokens:<5d} "
            f"{outcome.lines:>5d} {outcome.runs:>5d} {wall:>7s} {'yes' if outcome.verified else 'NO':>8s}  {outcome.note[:60]}")


def header() -> str:
    return (f"{'case':24s} {'reducer':18s} {'tokens':>14s} {'lines':>5s} {'runs':>5s} {'wall s':>7s} "
            f"{'verified':>8s}  note")


def judge(results: dict[str, dict[str, Outcome]]) -> dict:
    """The issue's targets, per case and overall."""
    per_case = {}
    peer_walls: dict[str, list[float]] = {}
    for case_name, outcomes in results.items():
        ours = outcomes.get("ours")
        peers = [o for name, o in outcomes.items() if name != "ours" and o.verified]
        for name, outcome in outcomes.items():
            if name != "ours":
                peer_walls.setdefault(name, []).append(outcome.wall_s)
        if ours is None or not peers:
            continue
        best_peer = min(o.tokens for o in peers)
        per_case[case_name] = {"ours_tokens": ours.tokens, "best_peer_tokens": best_peer,
                               "size_ok": bool(ours.verified) and ours.tokens <= best_peer,
                               "ours_reached_best_peer_s": ours.reached(best_peer),
                               "peers_budget_hit": all(o.budget_hit for o in peers)}
    our_walls = [o["ours"].wall_s for o in results.values() if "ours" in o]
    medians = {name: statistics.median(walls) for name, walls in peer_walls.items()}
    best_peer_median = min(medians.values()) if medians else None
    our_median = statistics.median(our_walls) if our_walls else None
    wall_ok = None if best_peer_median is None or our_median is None else our_median <= 0.5 * best_peer_median
    reach = [c["ours_reached_best_peer_s"] for c in per_case.values() if c["ours_reached_best_peer_s"] is not None]
    return {"per_case": per_case, "size_ok": bool(per_case) and all(c["size_ok"] for c in per_case.values()),
            "our_median_wall_s": our_median, "peer_median_wall_s": medians, "wall_ok": wall_ok,
            "ours_median_s_to_best_peer_size": statistics.median(reach) if reach else None}


def summary_lines(verdict: dict) -> list[str]:
    lines = []
    for name, case in verdict["per_case"].items():
        reached = case["ours_reached_best_peer_s"]
        lines.append(f"  {name:24s} ours {case['ours_tokens']:>4d} tokens, best peer {case['best_peer_tokens']:>4d}: "
                     f"{'PASS' if case['size_ok'] else 'FAIL'}"
                     + (f"; ours held a candidate that small after {reached:.0f} s" if reached is not None else ""))
    medians = ", ".join(f"{k} {v:.0f} s" for k, v in verdict["peer_median_wall_s"].items())
    if verdict["our_median_wall_s"] is not None and verdict["wall_ok"] is not None:
        capped = sum(c["peers_budget_hit"] for c in verdict["per_case"].values())
        lines.append(f"size: ours <= best peer on every case: {'PASS' if verdict['size_ok'] else 'FAIL'}")
        lines.append(f"wall: ours median {verdict['our_median_wall_s']:.0f} s vs <= 0.5 x best peer median "
                     f"({medians}): {'PASS' if verdict['wall_ok'] else 'FAIL'}"
                     f" (on {capped} of {len(verdict['per_case'])} cases every peer was stopped by the budget)")
    if verdict["ours_median_s_to_best_peer_size"] is not None:
        lines.append(f"ours held a candidate no larger than the best peer's final one after "
                     f"{verdict['ours_median_s_to_best_peer_size']:.0f} s (median over cases)")
    return lines


def earlier_outcomes(path: str | None) -> dict[str, dict[str, Outcome]]:
    """Outcomes from an earlier --json run, to rerun some reducers and compare with the rest."""
    if not path:
        return {}
    cases = json.loads(Path(path).read_text())["cases"]
    return {case: {name: Outcome(**{**data, "progress": [tuple(p) for p in data.get("progress", [])]})
                   for name, data in outcomes.items()} for case, outcomes in cases.items()}


def selected_cases(args: argparse.Namespace) -> list[Path]:
    paths = sorted(CASES_DIR.glob("*.py"))
    wanted = [n.removesuffix(".py") for spec in args.only for n in spec.split(",")] or (
        list(QUICK_CASES) if args.quick else [p.stem for p in paths])
    unknown = set(wanted) - {p.stem for p in paths}
    if unknown:
        raise SystemExit(f"no such case: {', '.join(sorted(unknown))} (have: {', '.join(p.stem for p in paths)})")
    return [p for p in paths if p.stem in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, help="wall seconds per reducer per case (default 300; --quick: 60)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per candidate run (default 60)")
    parser.add_argument("--jobs", type=int, default=2, help="candidates in parallel for ours and shrinkray (default 2)")
    parser.add_argument("--only", action="append", default=[], metavar="CASE", help="run only these cases (repeat or comma-separate)")
    parser.add_argument("--reducers", default=",".join(REDUCERS), help=f"comma-separated subset of {','.join(REDUCERS)}")
    parser.add_argument("--quick", action="store_true", help=f"smoke test: {' and '.join(QUICK_CASES)}, {QUICK_BUDGET_S:.0f} s budget")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON ('-': stdout, the table then goes to stderr)")
    parser.add_argument("--out", metavar="DIR", help="write each reducer's final script to DIR/CASE.REDUCER.py")
    parser.add_argument("--others-from", metavar="JSON", help="take the reducers not run now from this earlier --json "
                        "output (to rerun some after a change); their rows are marked 'earlier'")
    args = parser.parse_args(argv)
    args.budget = args.budget or (QUICK_BUDGET_S if args.quick else 300.0)
    reducers = [r for r in args.reducers.split(",") if r]
    if set(reducers) - set(REDUCERS):
        parser.error(f"unknown reducer in {args.reducers!r}")
    table = sys.stderr if args.json == "-" else sys.stdout
    versions = {name: installed_version(name) for name in ("pysource-minimize", "shrinkray", "torch")}
    print(f"budget {args.budget:.0f} s per reducer per case, {args.timeout:.0f} s per candidate, jobs {args.jobs}; "
          + ", ".join(f"{k} {v}" for k, v in versions.items()), file=table, flush=True)
    print(header(), file=table, flush=True)
    results: dict[str, dict[str, Outcome]] = {}
    earlier = earlier_outcomes(args.others_from)
    for path in selected_cases(args):
        case = load_case(path, args.timeout)
        results[case.name] = {}
        for name in REDUCERS:
            if name in reducers:
                outcome = run_reducer(name, case, args)
            elif name in earlier.get(case.name, {}):
                outcome = earlier[case.name][name]
                outcome.note = f"earlier: {outcome.note}".rstrip(": ")
            else:
                continue
            results[case.name][name] = outcome
            print(row(case, count_tokens(case.source), outcome), file=table, flush=True)
            if args.out:
                Path(args.out).mkdir(parents=True, exist_ok=True)
                (Path(args.out) / f"{case.name}.{name}.py").write_text(outcome.source)
    verdict = judge(results)
    print("* = the budget ran out (best result so far taken)", file=table)
    for line in summary_lines(verdict):
        print(line, file=table)
    if args.json:
        payload = {"budget_s": args.budget, "timeout_s": args.timeout, "jobs": args.jobs, "versions": versions,
                   "cases": {c: {r: asdict(o) for r, o in outs.items()} for c, outs in results.items()},
                   "targets": verdict}
        text = json.dumps(payload, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
