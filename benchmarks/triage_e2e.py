"""Wall time per stage of `pt2-triage triage` on the bundled examples and a realistic issue set.

Sets: `examples` (the README's four example issues), `realistic` (benchmarks/realistic_issues/:
six issues of 40-100 line scripts written like real reports, one category each, never used in the
tests), `fresh` (benchmarks/fresh_issues/: five more, written by a helper that never read the tool's
code, first run at 9f04be5; see that folder's README), `fresh2` (benchmarks/fresh_issues_2/: six more by
another such helper, first run at 5d1a342), `fresh3` (benchmarks/fresh_issues_3/: six more, first
run at 72b3b66), `fresh4` (benchmarks/fresh_issues_4/: six more, first run at the commit after the one that
added them), `fresh5` and on (benchmarks/fresh_issues_N/ is `freshN`: six more each, likewise) and `gpu`. Each issue runs through the real
CLI in a subprocess (fresh interpreter, real torch, sandboxed runs), the way the README's main
command runs it, with the CLI's default total budget (`--budget-total`, 300 s) unless told
otherwise. The baseline is the same pipeline with cold runs only (`--jobs 0`: every run a fresh
interpreter importing torch, no warm workers), run in the same invocation so both see the same
machine. Reported: per issue and stage, then per stage the median
and max over the set, the whole triage's, when the report was out (the whole less torch's FX-graph
minifier, which runs after the report is written and then updates it), and each triage's overrun
of its total budget.
`gpu` (benchmarks/gpu_issues/: an injected Triton compile error and an injected accuracy bug) needs a
CUDA machine.
Targets (issue #15): on 2 cores, the README example <= 45 s, the realistic set's median <= 90 s and
max <= 240 s; on an H100, each gpu issue <= 60 s; total-budget overrun <= 10%.

    python benchmarks/triage_e2e.py [--set examples realistic gpu] [--only STEM] [--budget 300] [--budget-total 300]
                                    [--baseline all|graph_break|none] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.pipeline.triage import STAGES  # noqa: E402

def issues_in(folder: Path) -> list[Path]:
    """The issue texts of a set (its README.md describes the set and is not one)."""
    return sorted(p for p in folder.glob("*.md") if p.name != "README.md")


def held_out_sets() -> dict[str, list[Path]]:
    """benchmarks/fresh_issues/ is `fresh`, benchmarks/fresh_issues_N/ is `freshN`: one set per folder."""
    folders = (ROOT / "benchmarks").glob("fresh_issues*")
    return {"fresh" + folder.name[len("fresh_issues_"):]: issues_in(folder) for folder in sorted(folders)
            if re.fullmatch(r"fresh_issues(_\d+)?", folder.name)}


SETS = {"examples": issues_in(ROOT / "examples"),
        "realistic": issues_in(ROOT / "benchmarks" / "realistic_issues"),
        **held_out_sets(),
        "gpu": issues_in(ROOT / "benchmarks" / "gpu_issues")}
TARGET_EXAMPLE, TARGET_S = "graph_break_fullgraph", 45.0


def triage(example: Path, jobs: int, budget: float, minifier: bool, total: float, keep: Path | None = None) -> dict:
    """One triage through the CLI; `keep` copies its output folder (report, comment, minimized
    repro, regression test) to keep/STEM.MODE, so the verdicts can be read as well as timed."""
    mode = "warm" if jobs else "cold"
    with tempfile.TemporaryDirectory(prefix="pt2-triage-bench-") as out:
        command = [sys.executable, "-m", "bot.cli", "triage", str(example), "--out", out, "--json",
                   "--jobs", str(jobs), "--budget", str(budget), "--budget-total", str(total)] + \
                  ([] if minifier else ["--no-minifier"])
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if keep:
            shutil.copytree(out, keep / f"{example.stem}.{mode}", dirs_exist_ok=True)
    if done.returncode != 0:
        raise SystemExit(f"{example.name}: pt2-triage failed ({done.returncode}):\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return {"example": example.stem, "set": example.parent.name, "mode": mode,
            "wall_s": round(wall, 1), "overrun": round(max(0.0, wall / total - 1), 3),
            "category": report["classification"]["category"],
            "disposition": (report.get("disposition") or {}).get("kind", "-"), "stages": report["stage_seconds"],
            "lines": f"{report['minimized']['lines_before']}→{report['minimized']['lines_after']}" if report["minimized"] else "-",
            "test": (report["regression_test"] or {}).get("verification", "-"),
            "minimize_passes": {name: (runs, (report["minimized"].get("seconds_by_pass") or {}).get(name, 0.0))
                                for name, runs in (report["minimized"].get("runs_by_pass") or {}).items()}
            if report["minimized"] else {},
            "minimize_progress": (report["minimized"] or {}).get("progress") or [],
            "minimize_cut": (report["minimized"] or {}).get("runs_cut", 0),
            "stage_errors": report.get("stage_errors") or {}}


def near_final(progress: list, wall_s: float, within: float = 0.1) -> str:
    """When the search first came within `within` of its final size: how much of its time the last
    few percent of the reduction took."""
    final = progress[-1][2]
    seconds, runs = next(step[:2] for step in progress if step[2] <= final * (1 + within))
    return f"within {within:.0%} of its final {final} tokens after {seconds:.0f} s and {runs} runs (of {wall_s:.0f} s)"


def print_table(rows: list[dict]) -> None:
    head = f"{'example':<26}{'mode':<6}{'category':<25}" + "".join(f"{s[:9]:>10}" for s in STAGES) + f"{'total':>9}  {'lines':<8}{'disposition':<12}test"
    print(head)
    print("-" * len(head))
    for row in rows:
        stages = "".join(f"{row['stages'].get(s, 0):>10.1f}" for s in STAGES)
        print(f"{row['example']:<26}{row['mode']:<6}{row['category']:<25}{stages}{row['wall_s']:>9.1f}  {row['lines']:<8}{row.get('disposition', '-'):<12}{row['test']}")
        if row.get("minimize_passes"):  # where minimize's time went: runs and seconds per reducer pass
            print(" " * 32 + "minimize: " + ", ".join(f"{name} {runs} runs {seconds:.0f} s"
                                                      for name, (runs, seconds) in row["minimize_passes"].items() if runs))
        for stage, error in row.get("stage_errors", {}).items():  # a stage our own bug stopped
            print(" " * 32 + f"{stage} FAILED: {error}")
        if row.get("minimize_progress"):
            print(" " * 32 + "minimize: " + near_final(row["minimize_progress"], row["stages"].get("minimize", 0.0))
                  + (f"; {row['minimize_cut']} runs cut short" if row.get("minimize_cut") else ""))


def stage_seconds(row: dict, stage: str) -> float:
    """A stage's seconds; "whole triage" is the process's wall time, and "report out" the same less
    the FX-graph minifier, which runs after the report is written (and published) and updates it."""
    if stage == "whole triage":
        return row["wall_s"]
    if stage == "report out":
        return round(row["wall_s"] - row["stages"].get("graph", 0.0), 1)
    return row["stages"].get(stage, 0.0)


def print_summary(rows: list[dict]) -> None:
    """Per set and mode: each stage's median and max, the whole triage's, and the worst overrun."""
    for (name, mode) in sorted({(r["set"], r["mode"]) for r in rows}):
        group = [r for r in rows if (r["set"], r["mode"]) == (name, mode)]
        print(f"\n{name} ({mode}, {len(group)} issues): stage median / max s")
        for stage in STAGES + ("whole triage", "report out"):
            values = [stage_seconds(r, stage) for r in group]
            print(f"  {stage:<13}{statistics.median(values):>8.1f}{max(values):>8.1f}")
        print(f"  worst overrun of --budget-total: {max(r['overrun'] for r in group):.0%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs="+", choices=sorted(SETS), default=["examples"], help="which issues")
    parser.add_argument("--only", help="one issue (file stem)")
    parser.add_argument("--budget", type=float, default=300, help="minimize budget per example (the CLI's default)")
    parser.add_argument("--budget-total", type=float, default=300, help="whole-triage budget (the CLI's default)")
    parser.add_argument("--baseline", choices=("all", "graph_break", "none"), default="graph_break",
                        help="also run cold (--jobs 0) for these examples")
    parser.add_argument("--no-minifier", action="store_true", help="skip torch's after_aot minifier (backend/accuracy)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="copy each triage's output folder to DIR/STEM.MODE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    examples = [e for name in args.set for e in SETS[name] if not args.only or e.stem == args.only]
    rows = []
    for example in examples:
        rows.append(triage(example, 2, args.budget, not args.no_minifier, args.budget_total, args.keep))
        if args.baseline == "all" or (args.baseline == "graph_break" and example.stem == TARGET_EXAMPLE):
            rows.append(triage(example, 0, args.budget, not args.no_minifier, args.budget_total, args.keep))
    print(f"machine: {os.cpu_count()} cores; wall = whole CLI process (start-up, probe and writing included)\n")
    print_table(rows)
    print_summary(rows)
    target = next((r for r in rows if r["example"] == TARGET_EXAMPLE and r["mode"] == "warm"), None)
    if target:
        verdict = "PASS" if target["wall_s"] < TARGET_S else "FAIL"
        print(f"\ntarget: {TARGET_EXAMPLE} end to end < {TARGET_S:.0f} s: {target['wall_s']:.1f} s  {verdict}")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
