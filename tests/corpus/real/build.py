"""Assemble the real-issue corpus: raw/*.jsonl (as collected, see LABELING.md) -> train/dev/test.jsonl.

- One case per issue URL (the first collected wins; a second one with another label is reported).
- `cc @user ...` lines are dropped from bodies: PyTorch's bot writes them into the opening post from
  the labels a maintainer applied, so they are the answer, not the report.
- The split is a stable hash of the URL: 60% train, 20% dev, 20% test. It never depends on the
  label or the text, so adding cases never moves an old one between splits.

    python tests/corpus/real/build.py [--check]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).parent
SPLITS = (("train", 60), ("dev", 80), ("test", 100))  # cumulative percent of the hash space
REQUIRED = ("url", "repo", "title", "labels", "body", "category", "shapes", "cpu_repro", "chunk")
CATEGORIES = ("graph_break", "backend_compiler_failed", "recompilation", "accuracy", "dynamo_internal_error",
              "runtime_crash", "triton_kernel_bug", "export_failure", "aoti_failure", "aot_autograd_failure",
              "dynamic_shapes", "performance", "not_pt2", "unknown")
CC_LINE_RE = re.compile(r"^\s*cc:? (?:@[\w-]+[\s,]*)+$", re.M)
URL_RE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/issues/\d+$")


def normalize_url(url: str) -> str:
    return url.strip().rstrip("/").replace("http://", "https://").lower()


def split_of(url: str) -> str:
    bucket = int(hashlib.sha256(normalize_url(url).encode()).hexdigest(), 16) % 100
    return next(name for name, upto in SPLITS if bucket < upto)


def clean_body(body: str) -> str:
    return CC_LINE_RE.sub("", body).rstrip() + "\n"


def problems(case: dict) -> list[str]:
    found = [f"missing {key}" for key in REQUIRED if key not in case]
    if case.get("category") not in CATEGORIES:
        found.append(f"unknown category {case.get('category')!r}")
    if not URL_RE.match(case.get("url", "")):
        found.append(f"not an issue URL: {case.get('url')!r}")
    if not str(case.get("body", "")).startswith("# "):
        found.append("body must start with '# <title>'")
    return found


def collect() -> tuple[list[dict], list[str]]:
    cases: dict[str, dict] = {}
    notes: list[str] = []
    for raw in sorted((HERE / "raw").glob("*.jsonl")):
        for number, line in enumerate(raw.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            case = json.loads(line)
            if bad := problems(case):
                raise SystemExit(f"{raw.name}:{number}: {'; '.join(bad)}")
            key = normalize_url(case["url"])
            if key in cases:
                if cases[key]["category"] != case["category"]:
                    notes.append(f"{case['url']}: labeled {cases[key]['category']} and {case['category']}; kept the first")
                continue
            case = dict(case, body=clean_body(case["body"]), source=raw.stem, split=split_of(case["url"]))
            cases[key] = case
    return sorted(cases.values(), key=lambda c: normalize_url(c["url"])), notes


def rendered(cases: list[dict]) -> dict[str, str]:
    return {name: "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n" for c in cases if c["split"] == name)
            for name, _ in SPLITS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the split files are out of date")
    args = parser.parse_args()
    cases, notes = collect()
    outputs = rendered(cases)
    if args.check:
        stale = [n for n, text in outputs.items() if not (HERE / f"{n}.jsonl").is_file()
                 or (HERE / f"{n}.jsonl").read_text(encoding="utf-8") != text]
        sys.exit(1 if stale else 0)
    for name, text in outputs.items():
        (HERE / f"{name}.jsonl").write_text(text, encoding="utf-8")
    for note in notes:
        print("note:", note, file=sys.stderr)
    by_split = Counter(c["split"] for c in cases)
    print(f"{len(cases)} cases: " + ", ".join(f"{n} {by_split[n]}" for n, _ in SPLITS))
    for category, count in sorted(Counter(c["category"] for c in cases).items()):
        print(f"  {category:24s} {count}")
    others = sum(1 for c in cases if c["repo"].lower() != "pytorch/pytorch")
    print(f"  from other projects: {others} ({others / max(1, len(cases)):.0%}); cpu_repro: "
          f"{sum(1 for c in cases if c['cpu_repro'])}")


if __name__ == "__main__":
    main()
