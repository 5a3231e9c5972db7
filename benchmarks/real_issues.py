"""Real issues end to end: `pt2-triage triage` on real reports whose repro runs on a CPU.

The cases are the real-issue corpus' reports marked `cpu_repro` (tests/corpus/real/, hand-checked to
hold a complete script that needs only torch and numpy), their texts as found: fixed since or not,
the reporter's torch version is part of the case. Each is triaged as a user would, in a fresh
output directory, with `--budget` seconds for minimizing, and scored against its hand label:

  reproduced, right category | reproduced, wrong category | reproduced falsely (no run failed and
  no differential check found a difference) | not reproduced, by the reason the report gives

plus the time per stage (median and max). By default the dev and test splits run (48 cases);
`--split train` or `--all` adds the rest.

`--gpu` takes the other reports instead: those whose script puts a PT2 entry point on a CUDA device
(chosen by the text alone, not by hand), for a machine with a GPU; `--shard K/N` runs every N-th of
them, so N processes can share one machine. `--json` is rewritten after every case, so a run cut off
by a time limit keeps what it finished.

    python benchmarks/real_issues.py [--split dev test] [--budget 60] [--limit N] [--json results.json]
    python benchmarks/real_issues.py --gpu --shard 0/4 --json gpu0.json   # on the GPU machine
    python benchmarks/real_issues.py --rerun results.json --json results2.json   # after a change to judging failures
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "real"
CASE_TIMEOUT_S = 900


PT2_ENTRY = re.compile(r"torch\.compile|torch\.export|aoti_compile|_export\.aot_compile")
CUDA_USE = re.compile(r"""\.cuda\(\)|device\s*=\s*['"]cuda|torch\.device\(\s*['"]cuda|\.to\(\s*['"]cuda""")


def needs_cuda(case: dict) -> bool:
    """A report whose script imports torch, puts a tensor or module on CUDA, and calls a PT2 entry point:
    read off the text, so the GPU set is chosen by rule, not picked."""
    body = case["body"]
    return "import torch" in body and bool(PT2_ENTRY.search(body)) and bool(CUDA_USE.search(body))


def load_cases(splits: list[str], gpu: bool = False) -> list[dict]:
    """The CPU set (hand-marked `cpu_repro`), or with `gpu` the reports a GPU machine can try."""
    cases = []
    for split in splits:
        for line in (CORPUS / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if (not case.get("cpu_repro") and needs_cuda(case)) if gpu else case.get("cpu_repro"):
                cases.append(case)
    return sorted(cases, key=lambda c: c["url"])


def shard_of(cases: list[dict], shard: str | None) -> list[dict]:
    """Every N-th case from the K-th ("K/N"): shards that share a machine split the set evenly."""
    if not shard:
        return cases
    index, count = (int(part) for part in shard.split("/"))
    return cases[index::count]


def triage(case: dict, workdir: Path, budget: float) -> dict:
    """One `pt2-triage triage` of the case's text; the report, or why there is none."""
    issue = workdir / "issue.md"
    issue.write_text(case["body"], encoding="utf-8")
    out = workdir / "out"
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's code, whatever the venv has installed
    try:
        proc = subprocess.run([sys.executable, "-m", "bot.cli", "triage", str(issue), "--out", str(out),
                               "--budget", str(budget), "--json"],
                              capture_output=True, text=True, timeout=CASE_TIMEOUT_S, cwd=workdir, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"triage took over {CASE_TIMEOUT_S} s", "wall_s": CASE_TIMEOUT_S}
    wall = time.monotonic() - started
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:300], "wall_s": wall}
    return {"report": json.loads(proc.stdout), "wall_s": wall}


def outcome_of(case: dict, result: dict) -> tuple[str, str]:
    """(outcome, detail) for the table."""
    if "error" in result:
        return "error", result["error"]
    report = result["report"]
    reproduction = report.get("reproduction")
    verdict = report["classification"]["category"]
    if reproduction is None:
        return "not reproduced", "no runnable repro found in the text"
    if case["category"] == "not_pt2" and not reproduction["reproduced"]:
        return "not PT2, as labeled", reproduction.get("reason") or reproduction["status"]
    if reproduction["reproduced"]:
        failed = any(run.get("failed") for run in reproduction["runs"])
        silent = any(check["reproduced"] for check in reproduction.get("silent") or ())
        if not failed and not silent:
            return "reproduced falsely", reproduction["summary"]
        right = verdict == case["category"]
        return ("reproduced, right category" if right else "reproduced, wrong category"), f"{verdict} (label {case['category']})"
    return "not reproduced", reproduction.get("reason") or reproduction["status"]


CLEAN_RUN_REASONS = ("fixed_since", "needs_gpu", "ran_clean", "no runnable repro found in the text", "notebook_only")


def ran_a_failure(row: dict) -> bool:
    """Whether some run of the case failed: a reproduction, a not-PT2 verdict, or a not-reproduced
    reason read from a failing run (a clean run's reasons are the reporter's torch, GPU or text)."""
    return row["outcome"] != "not reproduced" or row["detail"] not in CLEAN_RUN_REASONS


def silent_summary(report: dict) -> list[dict]:
    """The differential measurements of the triage (accuracy, timing, recompiles, graph breaks):
    what "reproduced" or "no longer differs" rests on for a silent report."""
    return [{"kind": check["kind"], "reproduced": check["reproduced"], "summary": check["summary"]}
            for check in (report.get("reproduction") or {}).get("silent") or ()]


def ladder_summary(report: dict) -> dict:
    """The ladder's owner and rows, the disposition, and what the two stages cost beside the rest."""
    ladder = report.get("ladder") or {}
    stages = report.get("stage_seconds") or {}
    extra = stages.get("ladder", 0.0) + stages.get("dispose", 0.0)
    rest = sum(stages.values()) - extra
    return {"owner": ladder.get("owner") or ladder.get("skipped"),
            "ladder": {r["rung"]: r["outcome"] for r in ladder.get("rungs") or ()},
            "disposition": (report.get("disposition") or {}).get("kind"),
            "ladder_overhead": round(extra / rest, 3) if rest > 0 and extra else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", nargs="+", default=["dev", "test"], choices=["train", "dev", "test"])
    parser.add_argument("--all", action="store_true", help="every split")
    parser.add_argument("--budget", type=float, default=60, help="seconds for minimizing, per case")
    parser.add_argument("--limit", type=int, help="only the first N cases (by URL)")
    parser.add_argument("--only", nargs="+", metavar="URL_END", help="only cases whose URL ends with one of these (e.g. /139789)")
    parser.add_argument("--labels", nargs="+", metavar="CATEGORY",
                        help="only cases with these hand labels (e.g. the silent ones: accuracy performance recompilation)")
    parser.add_argument("--gpu", action="store_true", help="the reports whose script runs a PT2 entry point on CUDA")
    parser.add_argument("--shard", metavar="K/N", help="only every N-th case, from the K-th (0-based)")
    parser.add_argument("--json", type=Path, help="write every case's outcome and stage times here (after each case)")
    parser.add_argument("--rerun", type=Path, metavar="JSON",
                        help="an earlier --json: run again only its cases in which some run failed (reproduced, not PT2, "
                             "or not reproduced for a reason read from a failing run) and keep its rows for the rest "
                             "(a change to how failures are judged cannot move a case whose runs all passed)")
    args = parser.parse_args()
    cases = load_cases(["train", "dev", "test"] if args.all else args.split, gpu=args.gpu)
    cases = [case for case in cases if (not args.labels or case["category"] in args.labels)
             and (not args.only or case["url"].endswith(tuple(args.only)))][:args.limit]
    cases = shard_of(cases, args.shard)
    kept: dict[str, dict] = {}
    if args.rerun:
        earlier = {row["url"]: row for row in json.loads(args.rerun.read_text(encoding="utf-8"))}
        kept = {url: row for url, row in earlier.items() if not ran_a_failure(row)}
        cases = [case for case in cases if case["url"] not in kept]
    rows = []
    for index, case in enumerate(cases, 1):
        with tempfile.TemporaryDirectory(prefix="pt2-real-") as tmp:
            result = triage(case, Path(tmp), args.budget)
        outcome, detail = outcome_of(case, result)
        stages = (result.get("report") or {}).get("stage_seconds") or {}
        rows.append({"url": case["url"], "split": case["split"], "label": case["category"], "outcome": outcome,
                     "detail": detail, "wall_s": round(result["wall_s"], 1), "stages": stages,
                     "reporter_torch": case.get("torch_version"), "silent": silent_summary(result.get("report") or {}),
                     **ladder_summary(result.get("report") or {})})
        print(f"[{index}/{len(cases)}] {outcome:28s} {result['wall_s']:6.1f}s  {case['url']}  {detail[:100]}", flush=True)
        if args.json:
            write_rows(args.json, rows + list(kept.values()))
    rows = sorted(rows + [row for row in kept.values()], key=lambda row: row["url"])
    report(rows, "GPU" if args.gpu else "CPU")
    if args.json:
        write_rows(args.json, rows)


def write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text(json.dumps(sorted(rows, key=lambda row: row["url"]), indent=2) + "\n", encoding="utf-8")


def report(rows: list[dict], kind: str = "CPU") -> None:
    print(f"\n{len(rows)} real issues with {kind} repros")
    for split in sorted({r["split"] for r in rows}):
        counts = Counter(r["outcome"] for r in rows if r["split"] == split)
        print(f"  {split}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    counts = Counter(r["outcome"] for r in rows)
    print("\n| outcome | cases |\n| --- | --- |")
    for outcome, count in sorted(counts.items()):
        print(f"| {outcome} | {count} |")
    reasons = Counter(r["detail"] for r in rows if r["outcome"] == "not reproduced")
    print("\nnot reproduced, by reason: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    reproduced = [r for r in rows if r["outcome"].startswith("reproduced,")]
    if reproduced:
        right = sum(1 for r in reproduced if r["outcome"] == "reproduced, right category")
        print(f"right category among reproductions: {right}/{len(reproduced)} ({right / len(reproduced):.0%})")
    per_stage = defaultdict(list)
    for row in rows:
        for stage, seconds in row["stages"].items():
            per_stage[stage].append(seconds)
    print("\n| stage | median s | max s |\n| --- | --- | --- |")
    for stage, values in per_stage.items():
        print(f"| {stage} | {statistics.median(values):.1f} | {max(values):.1f} |")
    walls = [r["wall_s"] for r in rows]
    print(f"| whole triage | {statistics.median(walls):.1f} | {max(walls):.1f} |")
    report_ladder(rows)
    report_silent(rows)


def report_silent(rows: list[dict]) -> None:
    """Each silent measurement: a reproduction of a silent report, or the numbers that show it no longer differs."""
    measured = [r for r in rows if r.get("silent")]
    if not measured:
        return
    print("\n| issue | label | outcome | measured |\n| --- | --- | --- | --- |")
    for row in measured:
        checks = "; ".join(f"{c['kind']}: {c['summary']}" for c in row["silent"])
        print(f"| {row['url']} | {row['label']} | {row['outcome']} ({row['detail'][:40]}) | {checks} |")


def report_ladder(rows: list[dict]) -> None:
    """Who owns each reproduction, its disposition, and the ladder's cost beside the rest of the triage."""
    climbed = [r for r in rows if r.get("ladder")]
    if not climbed:
        return
    print("\n| issue | label | owner | disposition | ladder |\n| --- | --- | --- | --- | --- |")
    for row in climbed:
        rungs = ", ".join(f"{k} {v}" for k, v in row["ladder"].items())
        print(f"| {row['url']} | {row['label']} | {row['owner']} | {row['disposition']} | {rungs} |")
    shares = [r["ladder_overhead"] for r in climbed if r.get("ladder_overhead") is not None]
    if shares:
        print(f"\nladder + disposition time beside the rest of the triage: median {statistics.median(shares):.0%}, "
              f"max {max(shares):.0%} over {len(shares)} triages")


if __name__ == "__main__":
    main()
