"""The ablation ladder on failing repros, one per layer it separates, and what it costs.

Each repro is triaged as a user would (`pt2-triage triage`, the repro in an issue's code block, a
fresh output directory, `--budget` seconds for minimizing), one at a time. The table shows each
rung's outcome, the owning layer and the disposition beside the layer the repro was written to hit,
and the ladder + disposition stages' time beside the rest of the same triage (the target: at most
30% more wall time).

    python benchmarks/ladder.py [--budget 60] [--only NAME] [--json results.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_issues import ROOT, ladder_summary, triage  # noqa: E402

# (repro, the layer it was written to fail in, the disposition a maintainer would give it)
CASES = (
    ("tests/repros/eager_shape_error.py", "eager", "user_error"),
    ("tests/repros/dynamo_internal_error.py", "dynamo", "bug"),
    ("tests/repros/graph_break_fullgraph.py", "dynamo", "limitation"),
    ("tests/repros/dynamic_shapes_specialized.py", "dynamo", "bug"),
    ("tests/repros/aot_autograd_partitioner.py", "decomp_partition", "bug"),
    ("tests/repros/inductor_compile_error.py", "inductor", "bug"),
    ("tests/repros/inductor_runtime_error.py", "inductor", "bug"),
    ("tests/repros/inductor_accuracy.py", "inductor", "bug"),
    ("tests/repros/accuracy_backward.py", "inductor", "bug"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=60, help="seconds for minimizing, per case")
    parser.add_argument("--only", help="one case, by file stem")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for path, layer, disposition in CASES:
        if args.only and Path(path).stem != args.only:
            continue
        script = (ROOT / path).read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="pt2-ladder-") as tmp:
            result = triage({"body": f"```python\n{script}```\n"}, Path(tmp), args.budget)
        report = result.get("report") or {}
        summary = ladder_summary(report)
        layer_found = (report.get("ladder") or {}).get("layer")
        rows.append({"repro": Path(path).stem, "expected_layer": layer, "layer": layer_found,
                     "expected_disposition": disposition, "category": (report.get("classification") or {}).get("category"),
                     "wall_s": round(result["wall_s"], 1), "error": result.get("error"), **summary})
        print(f"{Path(path).stem}: {layer_found} ({summary['disposition']}), {result['wall_s']:.0f} s", flush=True)
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def print_table(rows: list[dict]) -> None:
    print("\n| repro | expected layer | ladder's layer | disposition (expected) | category | rungs | ladder cost |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        rungs = ", ".join(f"{k} {v}" for k, v in r["ladder"].items())
        cost = f"{r['ladder_overhead']:.0%}" if r["ladder_overhead"] is not None else "-"
        print(f"| {r['repro']} | {r['expected_layer']} | {r['layer']} | {r['disposition']} ({r['expected_disposition']}) "
              f"| {r['category']} | {rungs} | {cost} |")
    right = sum(1 for r in rows if r["layer"] == r["expected_layer"])
    disposed = sum(1 for r in rows if r["disposition"] == r["expected_disposition"])
    print(f"\nlayer right: {right}/{len(rows)}; disposition right: {disposed}/{len(rows)}")
    costs = [r["ladder_overhead"] for r in rows if r["ladder_overhead"] is not None]
    if costs:
        print(f"ladder + disposition beside the rest of the triage: median {statistics.median(costs):.0%}, max {max(costs):.0%}")


if __name__ == "__main__":
    main()
