"""Record real torch output into tests/corpus/recorded/ (re-run after a torch upgrade, then
`python tests/corpus/build_cases.py`).

Sources, each a standalone script headed `# category: <id>` and `# about: <one line>`:
- tests/repros/*.py (default): the repros the reproduce/minimize tests use, less those in SKIP;
- tests/corpus/scenarios/*.py (`--set scenarios`): more failures and negatives;
- tests/repros/gpu/*.py (`--set gpu`, on a CUDA machine).
Each runs once through the sandbox, exactly as `pt2-triage reproduce` runs it, plain (only
ALWAYS_ENV): a case is what a user sees, never a diagnostics re-run (a scenario that needs logging
or env sets it itself). A script marked `# corpus: skip (why)` is not recorded.
The text stored is what the classifier reads (`output_text`: stdout, stderr, how it ended).

Every meta holds the case's expected deciding rule (`rule`, null when no rule decides and the
fallback gives unknown/not_pt2). A new recording takes it from the current rules (printed: review
it against the output); a re-recording keeps the reviewed one and warns when today's verdict
differs. `--derive-rules` takes it from the current rules again; `--rules-only` sets it on the
existing recordings without running anything (for the gpu set on a CPU machine).

    python tests/corpus/record.py [--set repros|scenarios|gpu] [--only NAME] [--jobs 2] [--out DIR]
                                  [--derive-rules] [--rules-only]
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bot.core.classify import Classifier  # noqa: E402
from bot.core.graph_breaks import load_registry  # noqa: E402
from bot.pipeline.reproduce import ALWAYS_ENV, output_text  # noqa: E402
from bot.core.ruleset import load_ruleset  # noqa: E402

REPROS = ROOT / "tests" / "repros"
RECORDED = Path(__file__).parent / "recorded"
SETS = {"repros": REPROS, "gpu": REPROS / "gpu", "scenarios": Path(__file__).parent / "scenarios"}
HEADER_RE = re.compile(r"^# (category|about|corpus|device): (.+)$", re.M)
MAX_BYTES, HEAD_BYTES, TAIL_BYTES = 200_000, 20_000, 150_000

# Repros that are no case of their own. They live in tests/repros/ for the reproduce and minimize
# tests, which own their headers, so they are left out here (scenarios are simply removed instead).
# A duplicate is a script whose output has the category and signature of a case kept elsewhere.
SKIP = {
    "segfault_after_compile": "the segfault is the script's own ctypes.string_at(0) after the compiled call "
                              "returned (user code, not the compiler): its runtime_crash header is no true "
                              "label; scenarios/rt_segfault_in_generated_kernel.py is the compiled-code crash",
    "accuracy_backward": "duplicate of inductor_accuracy (accuracy, AssertionError: Tensor-likes are not close!)",
}


def header(script: str) -> dict[str, str]:
    return {key: value.strip() for key, value in HEADER_RE.findall(script)}


def selected(folder: Path, only: str | None = None) -> list[Path]:
    """The scripts of a set that are corpus cases (not `# corpus: skip`, not in SKIP)."""
    paths = [p for p in sorted(folder.glob("*.py"))
             if not header(p.read_text()).get("corpus", "").startswith("skip") and p.stem not in SKIP]
    return [p for p in paths if p.stem == only] if only else paths


def shorten(text: str) -> str:
    data = text.encode()
    if len(data) <= MAX_BYTES:
        return text
    dropped = len(data) - HEAD_BYTES - TAIL_BYTES
    return (data[:HEAD_BYTES] + f"\n[... {dropped} bytes dropped by record.py ...]\n".encode()
            + data[-TAIL_BYTES:]).decode("utf-8", errors="replace")


def expected_rule(name: str, text: str, category: str, classifier: Classifier, previous: dict | None,
                  derive: bool) -> tuple[str | None, list[str]]:
    """The case's expected deciding rule and what to tell the person recording it."""
    verdict = classifier.classify_text(text, report=False)
    if previous is not None and "rule" in previous and not derive:
        rule, notes = previous["rule"], []
        if (verdict.category, verdict.rule) != (category, rule):
            notes.append(f"  ! {name}: expected {category} by {rule}, today's rules say {verdict.category} "
                         f"by {verdict.rule}")
        return rule, notes
    notes = [f"  review {name}: {verdict.category} by {verdict.rule} ({verdict.signature})"]
    if verdict.category != category:
        notes.append(f"  ! {name}: labeled {category}, but the rules say {verdict.category}")
    return verdict.rule, notes


def read_meta(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def record(path: Path, classifier: Classifier, torch_version: str, out: Path, derive: bool) -> list[str]:
    from runners.sandbox import RunSpec, run

    script = path.read_text()
    meta = header(script)
    name = path.stem
    env = dict(ALWAYS_ENV)
    result = run(RunSpec(script=script, env=env, timeout_s=300))
    text = shorten(output_text(result))
    meta_path = out / f"{name}.meta.json"
    rule, notes = expected_rule(name, text, meta["category"], classifier, read_meta(meta_path), derive)
    (out / f"{name}.log").write_text(text, encoding="utf-8")
    meta_path.write_text(json.dumps({
        "category": meta["category"], "rule": rule, "about": meta.get("about", ""),
        "script": str(path.relative_to(ROOT)), "env": env, "status": result.status, "exit_code": result.exit_code,
        "signal": result.signal, "torch_version": torch_version, "recorded": datetime.date.today().isoformat(),
    }, indent=2) + "\n", encoding="utf-8")
    return [f"{name}: {result.status} ({result.duration_s:.0f} s)"] + notes


def set_rule(path: Path, classifier: Classifier, out: Path, derive: bool) -> list[str]:
    """--rules-only: the expected rule of an existing recording, nothing run."""
    name = path.stem
    meta_path, log = out / f"{name}.meta.json", out / f"{name}.log"
    meta = read_meta(meta_path)
    if meta is None or not log.exists():
        return [f"  ! {name}: not recorded in {out}"]
    rule, notes = expected_rule(name, log.read_text(encoding="utf-8"), meta["category"], classifier, meta, derive)
    updated = {"category": meta["category"], "rule": rule, **{k: v for k, v in meta.items() if k not in ("category", "rule")}}
    meta_path.write_text(json.dumps(updated, indent=2) + "\n", encoding="utf-8")
    return [f"{name}: rule {rule}"] + notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="record just this script (file stem)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--set", choices=sorted(SETS), default="repros", help="which scripts to record")
    parser.add_argument("--out", type=Path, default=RECORDED, help="where to write (default tests/corpus/recorded)")
    parser.add_argument("--derive-rules", action="store_true",
                        help="take each case's expected rule from the current rules, even where the meta has one")
    parser.add_argument("--rules-only", action="store_true",
                        help="set the expected rule of existing recordings; run nothing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    classifier = Classifier(load_ruleset(), load_registry(), learned=None)  # a run's output: rules only
    paths = selected(SETS[args.set], args.only)
    if args.rules_only:
        for path in paths:
            print("\n".join(set_rule(path, classifier, args.out, args.derive_rules)), flush=True)
        return
    from runners.probe import probe_machine

    torch_version = probe_machine().get("torch_version", "unknown")
    with ThreadPoolExecutor(args.jobs) as pool:
        for lines in pool.map(lambda p: record(p, classifier, torch_version, args.out, args.derive_rules), paths):
            print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
