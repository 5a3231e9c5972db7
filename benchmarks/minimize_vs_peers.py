"""`pt2-triage minimize` against two peer reducers, on real PT2 failures (CPU), like for like.

Each case in benchmarks/minimize_cases/ is a 38-72 line script that fails with one PT2 failure
(graph break, Inductor compile/runtime/accuracy bug, recompilation, export, AOTAutograd, AOTInductor,
Dynamo internal error, dynamic shapes) buried in model code that has nothing to do with it. Cases
whose header says `# held out: ...` were written after the reducer's last change and never used to
tune it; the summary reports them separately too.

What differs between the reducers is only the search. Everything a candidate goes through is one
and the same, benchmarks/predicate_server.py, started per case:
  - one warm pool (`--jobs` workers, the runner `pt2-triage minimize` uses), started before any
    reducer, so nobody's wall time includes it;
  - one judgement: our Minimizer's `is_interesting` against the original's classification (same
    category and signature, no NameError-style slippage, and, when the original runs clean with
    Dynamo disabled, the candidate must too: `Minimizer.needs_compiler_off_check`), decided once per case;
  - one count: the server counts the predicate calls of each reducer that ran the candidate
    ("runs"), the answers from a cache ("cache": the server's per-reducer text cache for the peers;
    our Reducer's own cache for ours, which bypasses the server's), and every sandboxed run ("sbx":
    a compiler-off check runs twice; ours also classifies the original and its result itself), and
    their summed durations ("s/run": seconds per sandboxed run).

  ours               bot.pipeline.minimize.Minimizer over runners/reduce/ (--jobs candidates in parallel),
                     as `pt2-triage minimize --no-graph-minifier` runs it, its predicate calls going to
                     the server in-process (`PredicateServer.judge`) and its other runs to the same pool
  pysource-minimize  pysource_minimize.minimize(source, checker), the checker asking the server over its
                     socket (benchmarks/interesting.py's `ask`); sequential: the library tests one at a time
  shrinkray          the `shrinkray` CLI (--parallelism --jobs) with benchmarks/interesting.py as its test,
                     a stdlib-only client of the server's socket

Per case the reducers run one after another, each alone (the server holds one session at a time and
waits for the runs still in flight before the next reducer starts), with the same wall budget. A peer
still running at the budget is stopped (shrinkray: its process tree; pysource-minimize: no check starts
after it) and its best result so far is taken; runs in flight then are cut at the deadline as ours are
(`Minimizer.run_timeout`). Every final result is re-checked once by the same predicate (uncached, fresh
Inductor cache, no deadline): "verified". Tokens are runners.reduce.count_tokens, lines non-blank.
The product code (bot/, runners/) is fingerprinted before and after the run; a change in between
(others edit the repository) is reported, since the run then mixes two versions.

Summary per case: ours is no larger than the best verified peer (fewest tokens; fewer runs breaks a
tie), and ours made fewer runs than that peer, in total and (like for like) until each first held that
peer's final size (a peer's total also counts its runs after its last success); the medians of wall time and runs per reducer (all cases,
then the held-out ones); and, as issue #5 set it, ours' median wall <= 0.5x the best peer's median.

    python benchmarks/minimize_vs_peers.py [--budget 300] [--only CASE] [--quick] [--json FILE] [--jobs 2]
    python benchmarks/minimize_vs_peers.py --reducers ours --others-from FILE   # rerun ours after a change

Needs the `bench` extra (pip install -e '.[bench]'). shrinkray 0.0.x (the only release for
Python < 3.12) reads the candidate on stdin and writes its best to --target (it multiplies --timeout
by 10); releases >= 25 take the file as an argument and reduce it in place; both are handled.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
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
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bot.cli.main import build_classifier  # noqa: E402
from bot.core.records import Classification  # noqa: E402
from bot.pipeline.minimize import Minimizer, NotReproducible  # noqa: E402
from runners.reduce import count_tokens  # noqa: E402

import interesting  # noqa: E402  (benchmarks/interesting.py: the socket client)
from predicate_server import PredicateServer, Session  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
CASES_DIR = BENCH_DIR / "minimize_cases"
INTERESTING = BENCH_DIR / "interesting.py"
REDUCERS = ("ours", "pysource-minimize", "shrinkray")
QUICK_CASES = ("graph_break_print", "export_dim_specialized")
QUICK_BUDGET_S = 60.0
HELD_OUT_MARK = "# held out:"
REPO = BENCH_DIR.parent
PRODUCT_DIRS = ("bot", "runners")


def product_fingerprint() -> dict:
    """HEAD and a hash of the product code as it is on disk (bot/, runners/: code and rules), to
    notice when someone changes it during a run."""
    digest = hashlib.sha256()
    for top in PRODUCT_DIRS:
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {"head": head or None, "product_sha256": digest.hexdigest()[:16]}


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    category: str  # what the original classifies as here (checked against the file's header)
    signature: str
    compiler_off: bool = False  # candidates must also run clean with Dynamo disabled (the original does)
    held_out: bool = False  # written after the reducer's last change, never used to tune it


@dataclass
class Outcome:
    reducer: str
    tokens: int
    lines: int  # non-blank
    runs: int  # predicate calls that ran the candidate (the server's count)
    wall_s: float
    budget_hit: bool
    verified: bool | None = None  # the final result still satisfies the predicate
    note: str = ""
    source: str = field(default="", repr=False)
    progress: list[tuple[float, int]] = field(default_factory=list, repr=False)  # (s, tokens) per "yes"
    cache_hits: int = 0  # predicate answers from a cache (see the module docstring)
    no_run: int = 0  # predicate calls answered without a run (does not parse, no PT2 entry point)
    sandbox_runs: int = 0  # every sandboxed run of the reducer's session
    run_progress: list[tuple[int, int]] = field(default_factory=list, repr=False)  # (runs so far, tokens) per "yes"
    run_s: float = 0.0  # the session's sandboxed runs' durations, summed

    def reached(self, tokens: int) -> float | None:
        """Seconds until it first held a candidate of at most `tokens` tokens."""
        return next((at for at, size in sorted(self.progress) if size <= tokens), None)

    def reached_runs(self, tokens: int) -> int | None:
        """Runs until it first held a candidate of at most `tokens` tokens."""
        return next((runs for runs, size in sorted(self.run_progress) if size <= tokens), None)


def nonblank_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def measure(reducer: str, source: str, session: Session, wall_s: float, budget_hit: bool, note: str = "",
            cache_hits: int | None = None) -> Outcome:
    return Outcome(reducer, count_tokens(source), nonblank_lines(source), session.runs, round(wall_s, 1), budget_hit,
                   note=note, source=source, progress=[(at, tokens) for at, _runs, tokens in session.progress],
                   cache_hits=session.cache_hits if cache_hits is None else cache_hits, no_run=session.no_run,
                   sandbox_runs=session.sandbox_runs,
                   run_progress=[(runs, tokens) for _at, runs, tokens in session.progress])


def start_case(path: Path, args: argparse.Namespace, classifier) -> tuple[Case, PredicateServer]:
    """The case's predicate server (warm pool started, original classified) and the case as it fails
    here; a case whose failure is not its header's is an error."""
    source = path.read_text(encoding="utf-8")
    server = PredicateServer(source, jobs=args.jobs, timeout_s=args.timeout, classifier=classifier)
    try:
        header = next((line.split(":", 1)[1].strip() for line in source.splitlines() if line.startswith("# category:")), None)
        if not server.reproducible or server.original.category != header:
            raise CaseError(f"{path.name}: fails as {server.original.category} ({server.original.signature}, "
                            f"{server.original_status}), header says {header}")
        server.serve()
    except BaseException:
        server.close()
        raise
    held_out = any(line.startswith(HELD_OUT_MARK) for line in source.splitlines())
    return Case(path.stem, source, server.original.category, server.original.signature, server.check_compiler_off,
                held_out), server


class CaseError(Exception):
    pass


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
    killing the peer's process group alone would leave them running."""
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

class ServedMinimizer(Minimizer):
    """Our Minimizer, unchanged but for where its predicate calls go: to the case's predicate server,
    in-process, with this Minimizer's own deadline and Inductor cache (as `is_interesting` would use
    them). Its other runs (the original's classification and compiler-off check, the final
    classification) go through the server's runner, the same pool."""

    def __init__(self, server: PredicateServer, **options):
        super().__init__(server.classifier, server.runner, **options)
        self.server = server
        self.mismatch = ""

    def is_interesting(self, original: Classification, candidate: str, check_compiler_off: bool) -> bool:
        if (original.category, original.signature, check_compiler_off) != \
                (self.server.original.category, self.server.original.signature, self.server.check_compiler_off):
            self.mismatch = (f"ours judged the original {original.category} ({original.signature}), "
                             f"compiler-off check {check_compiler_off}; the server's judgement was used")
        # no server cache: the Reducer caches by text itself, and its final re-check must really run
        return self.server.judge(candidate, deadline=self.deadline, cache_dir=self.cache_dir, use_cache=False,
                                 recent=self.recent)


def run_ours(case: Case, server: PredicateServer, session: Session, args: argparse.Namespace) -> Outcome:
    """As `pt2-triage minimize --no-graph-minifier` does it (the warm pool is already up)."""
    minimizer = ServedMinimizer(server, budget_s=args.budget, timeout_s=args.timeout, parallelism=args.jobs)
    try:
        result = minimizer.minimize(case.source)
    except NotReproducible as exc:
        return measure("ours", case.source, session, time.monotonic() - session.started, False,
                       f"not reproducible: {exc}", cache_hits=0)
    wall = time.monotonic() - session.started
    stats = result.stats
    note = stats.stop_reason
    if result.final.signature != case.signature:
        note += f"; final signature differs: {result.final.signature}"
    skipped = stats.sure_failures_skipped + stats.shape_changes_skipped
    if skipped:
        note += f"; {skipped} candidates not run (sure errors, shape changes)"
    if minimizer.mismatch:
        note += f"; {minimizer.mismatch}"
    return measure("ours", result.source, session, wall, stats.stop_reason.startswith("budget"), note,
                   cache_hits=stats.cache_hits + session.cache_hits)


class OutOfBudget(Exception):
    pass


def run_pysource_minimize(case: Case, server: PredicateServer, session: Session, args: argparse.Namespace) -> Outcome:
    import pysource_minimize

    best = [case.source]

    def checker(candidate: str) -> bool:
        if time.monotonic() > session.deadline:
            raise OutOfBudget
        try:
            ok = interesting.ask(server.socket_path, candidate)
        except interesting.ServerError:
            ok = False
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
    return measure("pysource-minimize", result, session, time.monotonic() - session.started, budget_hit, note)


def installed_version(distribution: str) -> str:
    """The installed version, or "not installed" (CI installs no peers: it runs only our reducer)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def shrinkray_version() -> str:
    return importlib.metadata.version("shrinkray")


def shrinkray_argv(case: Case, socket_path: str, timeout_s: float, jobs: int, input_file: Path, target: Path) -> list[str]:
    test = shlex.join([sys.executable, str(INTERESTING), "--socket", socket_path])
    exe = shutil.which("shrinkray", path=str(Path(sys.executable).parent)) or "shrinkray"
    # the server's run timeout decides first (two runs when the compiler-off check applies)
    kill_after = timeout_s * (2 if case.compiler_off else 1) + 30
    if int(shrinkray_version().split(".")[0]) == 0:
        # 0.0.x: the test reads stdin; best result to --target; it multiplies --timeout by 10
        return [exe, "--timeout", str(kill_after / 10), "--parallelism", str(jobs), "--target", str(target),
                test, str(input_file)]
    return [exe, "--ui", "basic", "--input-type", "arg", "--formatter", "none", "--timeout", str(kill_after),
            "--parallelism", str(jobs), test, str(target)]


def run_shrinkray(case: Case, server: PredicateServer, session: Session, args: argparse.Namespace, work: Path) -> Outcome:
    input_file, target = work / f"{case.name}.py", work / "reduced.py"
    input_file.write_text(case.source)
    target.write_text(case.source)
    argv = shrinkray_argv(case, server.socket_path, args.timeout, args.jobs, input_file, target)
    remaining = max(0.0, session.deadline - time.monotonic())
    with open(work / "shrinkray.log", "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, cwd=work)
        try:
            proc.wait(timeout=remaining)
            budget_hit = False
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            proc.wait()
            budget_hit = True
    wall = time.monotonic() - session.started
    note = "" if budget_hit or proc.returncode == 0 else \
        f"exit {proc.returncode}: {(work / 'shrinkray.log').read_text(errors='replace')[-300:]}"
    return measure("shrinkray", target.read_text(), session, wall, budget_hit, note)


def run_reducer(name: str, case: Case, server: PredicateServer, args: argparse.Namespace) -> tuple[Outcome, dict]:
    """One reducer alone on the case, in a session of its own; then its result verified."""
    with tempfile.TemporaryDirectory(prefix=f"pt2-bench-{name}-") as work:
        session = server.begin(name, args.budget)
        try:
            if name == "ours":
                outcome = run_ours(case, server, session, args)
            elif name == "pysource-minimize":
                outcome = run_pysource_minimize(case, server, session, args)
            else:
                outcome = run_shrinkray(case, server, session, args, Path(work))
        finally:
            server.end()  # waits for its runs still in flight: nothing of it runs into the next reducer
    # the counts as they stand once the runs in flight have finished
    outcome.runs, outcome.no_run, outcome.sandbox_runs = session.runs, session.no_run, session.sandbox_runs
    outcome.run_s = round(session.run_s, 1)
    if name != "ours":
        outcome.cache_hits = session.cache_hits
    outcome.progress = [(at, tokens) for at, _runs, tokens in session.progress]
    outcome.run_progress = [(runs, tokens) for _at, runs, tokens in session.progress]
    if session.cold_runs:
        outcome.note = f"{outcome.note}; {session.cold_runs} runs were cold".lstrip("; ")
    outcome.verified = server.verify(outcome.source)
    return outcome, session.counts()


# --- report ------------------------------------------------------------------------------------------

def row(case: Case, original_tokens: int, outcome: Outcome) -> str:
    wall = f"{outcome.wall_s:.0f}{'*' if outcome.budget_hit else ''}"
    per_run = f"{outcome.run_s / outcome.sandbox_runs:.1f}" if outcome.sandbox_runs else "-"
    name = case.name + (" (h)" if case.held_out else "")
    return (f"{name:28s} {outcome.reducer:17s} {original_tokens:>4d} -> {outcome.tokens:<4d} {outcome.lines:>5d} "
            f"{outcome.runs:>5d} {outcome.cache_hits:>5d} {outcome.no_run:>5d} {outcome.sandbox_runs:>5d} {per_run:>5s} {wall:>6s} "
            f"{'yes' if outcome.verified else 'NO':>4s}  {outcome.note[:70]}")


def header() -> str:
    return (f"{'case':28s} {'reducer':17s} {'tokens':>12s} {'lines':>5s} {'runs':>5s} {'cache':>5s} {'norun':>5s} {'sbx':>5s} "
            f"{'s/run':>5s} {'wall s':>6s} {'ver.':>4s}  note")


def best_peer(outcomes: dict[str, Outcome]) -> Outcome | None:
    """The verified peer with the fewest tokens (fewer runs breaks a tie)."""
    peers = [o for name, o in outcomes.items() if name != "ours" and o.verified]
    return min(peers, key=lambda o: (o.tokens, o.runs)) if peers else None


def median_of(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def medians(results: dict[str, dict[str, Outcome]]) -> dict[str, dict[str, float | None]]:
    """Median wall seconds and runs per reducer over these cases."""
    names = sorted({name for outcomes in results.values() for name in outcomes}, key=lambda n: REDUCERS.index(n)
                   if n in REDUCERS else len(REDUCERS))
    return {name: {"wall_s": median_of([o[name].wall_s for o in results.values() if name in o]),
                   "runs": median_of([o[name].runs for o in results.values() if name in o]),
                   "cases": sum(name in o for o in results.values())} for name in names}


def judge(results: dict[str, dict[str, Outcome]], held_out: set[str] | frozenset[str] = frozenset()) -> dict:
    """Per case: ours vs the best verified peer, in size and in runs; overall: medians, and issue #5's
    targets (ours no larger than the best peer on every case; ours' median wall <= 0.5x the best peer's)."""
    per_case = {}
    peer_walls: dict[str, list[float]] = {}
    for case_name, outcomes in results.items():
        ours = outcomes.get("ours")
        for name, outcome in outcomes.items():
            if name != "ours":
                peer_walls.setdefault(name, []).append(outcome.wall_s)
        best = best_peer(outcomes)
        if ours is None or best is None:
            continue
        peers = [o for name, o in outcomes.items() if name != "ours"]
        per_case[case_name] = {
            "held_out": case_name in held_out,
            "ours_tokens": ours.tokens, "ours_runs": ours.runs, "ours_verified": bool(ours.verified),
            "best_peer": best.reducer, "best_peer_tokens": best.tokens, "best_peer_runs": best.runs,
            "size_ok": bool(ours.verified) and ours.tokens <= best.tokens,
            "runs_ok": ours.runs < best.runs,
            "ours_reached_best_peer_s": ours.reached(best.tokens),
            "ours_reached_best_peer_runs": ours.reached_runs(best.tokens),
            # like for like: the runs each took to hold the peer's final size (the peer's total also
            # counts the runs after its last success, in which it found nothing smaller)
            "best_peer_reached_runs": best.reached_runs(best.tokens),
            "reach_runs_ok": reached_sooner(ours.reached_runs(best.tokens), best.reached_runs(best.tokens)),
            "peers_budget_hit": all(o.budget_hit for o in peers)}
    our_walls = [o["ours"].wall_s for o in results.values() if "ours" in o]
    peer_medians = {name: statistics.median(walls) for name, walls in peer_walls.items()}
    best_peer_median = min(peer_medians.values()) if peer_medians else None
    our_median = statistics.median(our_walls) if our_walls else None
    wall_ok = None if best_peer_median is None or our_median is None else our_median <= 0.5 * best_peer_median
    reach = [c["ours_reached_best_peer_s"] for c in per_case.values() if c["ours_reached_best_peer_s"] is not None]
    held = {name: outcomes for name, outcomes in results.items() if name in held_out}
    return {"per_case": per_case,
            "size_ok": bool(per_case) and all(c["size_ok"] for c in per_case.values()),
            "runs_ok": bool(per_case) and all(c["runs_ok"] for c in per_case.values()),
            "reach_runs_ok": bool(per_case) and all(c["reach_runs_ok"] for c in per_case.values()),
            "our_median_wall_s": our_median, "peer_median_wall_s": peer_medians, "wall_ok": wall_ok,
            "ours_median_s_to_best_peer_size": statistics.median(reach) if reach else None,
            "medians": medians(results),
            "held_out": {"cases": sorted(held), "medians": medians(held),
                         "size_ok": all(c["size_ok"] for n, c in per_case.items() if n in held_out),
                         "runs_ok": all(c["runs_ok"] for n, c in per_case.items() if n in held_out),
                         "reach_runs_ok": all(c["reach_runs_ok"] for n, c in per_case.items() if n in held_out)}
            if held else None}


def reached_sooner(ours_runs: int | None, peer_runs: int | None) -> bool:
    """Ours held the best peer's final size in fewer runs than that peer took to reach it (a peer that
    never improved on the original reached it at run 0, which nothing beats)."""
    return ours_runs is not None and peer_runs is not None and ours_runs < peer_runs


def median_lines(meds: dict[str, dict], indent: str = "  ") -> list[str]:
    fmt = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    return [f"{indent}{name:18s} wall {fmt(m['wall_s']):>4s} s   runs {fmt(m['runs']):>4s}   ({m['cases']} cases)"
            for name, m in meds.items()]


def summary_lines(verdict: dict) -> list[str]:
    lines = ["per case: ours vs the best verified peer (size: ours <= peer tokens; runs: ours < peer runs)"]
    for name, case in verdict["per_case"].items():
        reached, reached_runs = case.get("ours_reached_best_peer_s"), case.get("ours_reached_best_peer_runs")
        tag = " (h)" if case.get("held_out") else ""
        size = "PASS" if case["size_ok"] else "FAIL"
        runs = "" if "runs_ok" not in case else f"; runs {case['ours_runs']} vs {case['best_peer_runs']} " \
                                                f"{'PASS' if case['runs_ok'] else 'FAIL'}"
        lines.append(f"  {name + tag:28s} tokens {case['ours_tokens']:>4d} vs {case['best_peer_tokens']:>4d} "
                     f"({case.get('best_peer', 'peer')}) {size}{runs}"
                     + (f"; ours held that size after {reached:.0f} s" if reached is not None else "")
                     + (f", {reached_runs} runs" if reached_runs is not None else "")
                     + (f" (the peer {case['best_peer_reached_runs']})" if case.get("best_peer_reached_runs") is not None
                        else ""))
    if verdict["per_case"]:
        count = len(verdict["per_case"])
        lines.append(f"size: ours <= best peer on {sum(c['size_ok'] for c in verdict['per_case'].values())} of {count} "
                     f"cases: {'PASS' if verdict['size_ok'] else 'FAIL'}")
        if "runs_ok" in verdict:
            lines.append(f"runs: ours < best peer's on {sum(c['runs_ok'] for c in verdict['per_case'].values())} of "
                         f"{count} cases: {'PASS' if verdict['runs_ok'] else 'FAIL'}")
        if "reach_runs_ok" in verdict:
            lines.append(f"runs to the best peer's final size: ours < that peer's on "
                         f"{sum(c.get('reach_runs_ok', False) for c in verdict['per_case'].values())} of {count} cases: "
                         f"{'PASS' if verdict['reach_runs_ok'] else 'FAIL'}")
    if verdict.get("medians"):
        lines.append("medians, all cases:")
        lines.extend(median_lines(verdict["medians"]))
    held = verdict.get("held_out")
    if held:
        lines.append(f"held-out cases ({', '.join(held['cases'])}): size {'PASS' if held['size_ok'] else 'FAIL'}, "
                     f"runs {'PASS' if held['runs_ok'] else 'FAIL'}, runs to the peer's size "
                     f"{'PASS' if held.get('reach_runs_ok') else 'FAIL'}; medians:")
        lines.extend(median_lines(held["medians"]))
    medians_text = ", ".join(f"{k} {v:.0f} s" for k, v in verdict["peer_median_wall_s"].items())
    if verdict["our_median_wall_s"] is not None and verdict["wall_ok"] is not None:
        capped = sum(c["peers_budget_hit"] for c in verdict["per_case"].values())
        lines.append(f"wall: ours median {verdict['our_median_wall_s']:.0f} s vs <= 0.5 x best peer median "
                     f"({medians_text}): {'PASS' if verdict['wall_ok'] else 'FAIL'}"
                     f" (on {capped} of {len(verdict['per_case'])} cases every peer was stopped by the budget)")
    if verdict["ours_median_s_to_best_peer_size"] is not None:
        lines.append(f"ours held a candidate no larger than the best peer's final one after "
                     f"{verdict['ours_median_s_to_best_peer_size']:.0f} s (median over cases)")
    return lines


OUTCOME_FIELDS = {f.name for f in dataclasses.fields(Outcome)}


def earlier_outcomes(path: str | None) -> dict[str, dict[str, Outcome]]:
    """Outcomes from an earlier --json run, to rerun some reducers and compare with the rest."""
    if not path:
        return {}
    cases = json.loads(Path(path).read_text())["cases"]
    return {case: {name: Outcome(**{**{k: v for k, v in data.items() if k in OUTCOME_FIELDS},
                                    "progress": [tuple(p) for p in data.get("progress", [])],
                                    "run_progress": [tuple(p) for p in data.get("run_progress", [])]})
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
    parser.add_argument("--jobs", type=int, default=2, help="warm workers; candidates in parallel for ours and shrinkray (default 2)")
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
    paths = selected_cases(args)
    table = sys.stderr if args.json == "-" else sys.stdout
    versions = {name: installed_version(name) for name in ("pysource-minimize", "shrinkray", "torch")}
    fingerprint = product_fingerprint()
    print(f"product code: HEAD {fingerprint['head']}, bot/+runners/ sha256 {fingerprint['product_sha256']}",
          file=table, flush=True)
    print(f"budget {args.budget:.0f} s per reducer per case, {args.timeout:.0f} s per candidate, jobs {args.jobs}; "
          + ", ".join(f"{k} {v}" for k, v in versions.items()), file=table, flush=True)
    print("runs: predicate calls that ran the candidate; cache: answered from a cache; norun: answered without a run "
          "(does not parse, no PT2 call); sbx: all sandboxed runs; s/run: seconds per sandboxed run; "
          "(h): held out", file=table, flush=True)
    print(header(), file=table, flush=True)
    results: dict[str, dict[str, Outcome]] = {}
    cases: dict[str, dict] = {}
    held_out: set[str] = set()
    earlier = earlier_outcomes(args.others_from)
    classifier = build_classifier(None)  # one for the whole run: the rules are read once, as the code is
    for path in paths:
        try:
            case, server = start_case(path, args, classifier)
        except CaseError as exc:
            print(f"SKIPPED {exc}", file=table, flush=True)
            cases[path.stem] = {"error": str(exc)}
            continue
        with server:
            if case.held_out:
                held_out.add(case.name)
            cases[case.name] = {"held_out": case.held_out, "category": case.category, "signature": case.signature,
                                "compiler_off": case.compiler_off, "tokens": count_tokens(case.source),
                                "lines": nonblank_lines(case.source), "predicate": server.describe(), "sessions": {}}
            results[case.name] = {}
            for name in REDUCERS:
                if name in reducers:
                    outcome, counts = run_reducer(name, case, server, args)
                    cases[case.name]["sessions"][name] = counts
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
    verdict = judge(results, held_out)
    fingerprint_after = product_fingerprint()
    if fingerprint_after["product_sha256"] != fingerprint["product_sha256"]:
        print(f"WARNING: the product code changed during the run (now HEAD {fingerprint_after['head']}, "
              f"sha256 {fingerprint_after['product_sha256']}): cases mix two versions", file=table)
    print("* = the budget ran out (best result so far taken)", file=table)
    for line in summary_lines(verdict):
        print(line, file=table)
    if args.json:
        payload = {"budget_s": args.budget, "timeout_s": args.timeout, "jobs": args.jobs, "versions": versions,
                   "product": {"before": fingerprint, "after": fingerprint_after},
                   "case_info": cases,
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
