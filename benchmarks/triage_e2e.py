"""Wall time per stage of `pt2-triage triage` on each bundled example issue.

Each example runs through the real CLI in a subprocess (fresh interpreter, real torch, sandboxed
runs), the way the README's main command runs it. The baseline is the same pipeline with cold
runs only (`--jobs 0`: every run a fresh interpreter importing torch, no warm workers), run in the
same invocation so both see the same machine.
Target (issue #6): a CPU graph-break issue end to end in under 60 s on 2 cores.

    python benchmarks/triage_e2e.py [--only graph_break_fullgraph] [--budget 300] [--baseline all|graph_break|none]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.pipeline.triage import STAGES  # noqa: E402

EXAMPLES = sorted((ROOT / "examples").glob("*.md"))
TARGET_EXAMPLE, TARGET_S = "graph_break_fullgraph", 60.0


def triage(example: Path, jobs: int, budget: float, minifier: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="pt2-triage-bench-") as out:
        command = [sys.executable, "-m", "bot.cli", "triage", str(example), "--out", out, "--json",
                   "--jobs", str(jobs), "--budget", str(budget)] + ([] if minifier else ["--no-minifier"])
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{example.name}: pt2-triage failed ({done.returncode}):\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return {"example": example.stem, "mode": "warm" if jobs else "cold", "wall_s": round(wall, 1),
            "category": report["classification"]["category"], "stages": report["stage_seconds"],
            "lines": f"{report['minimized']['lines_before']}→{report['minimized']['lines_after']}" if report["minimized"] else "-",
            "test": (report["regression_test"] or {}).get("verification", "-")}


def print_table(rows: list[dict]) -> None:
    head = f"{'example':<26}{'mode':<6}{'category':<25}" + "".join(f"{s[:9]:>10}" for s in STAGES) + f"{'total':>9}  {'lines':<8}test"
    print(head)
    print("-" * len(head))
    for row in rows:
        stages = "".join(f"{row['stages'].get(s, 0):>10.1f}" for s in STAGES)
        print(f"{row['example']:<26}{row['mode']:<6}{row['category']:<25}{stages}{row['wall_s']:>9.1f}  {row['lines']:<8}{row['test']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="one example (file stem)")
    parser.add_argument("--budget", type=float, default=300, help="minimize budget per example (the CLI's default)")
    parser.add_argument("--baseline", choices=("all", "graph_break", "none"), default="graph_break",
                        help="also run cold (--jobs 0) for these examples")
    parser.add_argument("--no-minifier", action="store_true", help="skip torch's after_aot minifier (backend/accuracy)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    examples = [e for e in EXAMPLES if not args.only or e.stem == args.only]
    rows = []
    for example in examples:
        rows.append(triage(example, 2, args.budget, not args.no_minifier))
        if args.baseline == "all" or (args.baseline == "graph_break" and example.stem == TARGET_EXAMPLE):
            rows.append(triage(example, 0, args.budget, not args.no_minifier))
    print(f"machine: {os.cpu_count()} cores; wall = whole CLI process (start-up, probe and writing included)\n")
    print_table(rows)
    target = next((r for r in rows if r["example"] == TARGET_EXAMPLE and r["mode"] == "warm"), None)
    if target:
        verdict = "PASS" if target["wall_s"] < TARGET_S else "FAIL"
        print(f"\ntarget: {TARGET_EXAMPLE} end to end < {TARGET_S:.0f} s: {target['wall_s']:.1f} s  {verdict}")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
