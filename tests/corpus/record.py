"""Record real torch output into tests/corpus/recorded/ (re-run after a torch upgrade, then
`python tests/corpus/build_cases.py`).

Sources, each a standalone script headed `# category: <id>` and `# about: <one line>`:
- tests/repros/*.py (default): the repros the reproduce/minimize tests use. Each runs twice through
  the sandbox, exactly as `pt2-triage reproduce` runs it: plain (`<name>.log`, what a user sees) and
  with its category's diagnostics (`<name>.diag.log`, e.g. TORCH_LOGS=graph_breaks);
- tests/corpus/scenarios/*.py (`--set scenarios`): more failures and negatives, run once, plain
  (a scenario that needs logging or env sets it itself);
- tests/repros/gpu/*.py (`--set gpu`, on a CUDA machine).
The text stored is what the classifier reads (`output_text`: stdout, stderr, how it ended).

    python tests/corpus/record.py [--set repros|scenarios|gpu] [--only NAME] [--jobs 2] [--out DIR]
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

from bot.reproduce import ALWAYS_ENV, diagnostics_env, output_text  # noqa: E402
from bot.ruleset import load_ruleset  # noqa: E402
from runners.probe import probe_machine  # noqa: E402
from runners.sandbox import RunSpec, run  # noqa: E402

REPROS = ROOT / "tests" / "repros"
RECORDED = Path(__file__).parent / "recorded"
SETS = {"repros": (REPROS, True), "gpu": (REPROS / "gpu", True), "scenarios": (Path(__file__).parent / "scenarios", False)}
HEADER_RE = re.compile(r"^# (category|about|corpus|device): (.+)$", re.M)
MAX_BYTES, HEAD_BYTES, TAIL_BYTES = 200_000, 20_000, 150_000


def header(script: str) -> dict[str, str]:
    return {key: value.strip() for key, value in HEADER_RE.findall(script)}


def shorten(text: str) -> str:
    data = text.encode()
    if len(data) <= MAX_BYTES:
        return text
    dropped = len(data) - HEAD_BYTES - TAIL_BYTES
    return (data[:HEAD_BYTES] + f"\n[... {dropped} bytes dropped by record.py ...]\n".encode()
            + data[-TAIL_BYTES:]).decode("utf-8", errors="replace")


def record(path: Path, ruleset, torch_version: str, out: Path, with_diagnostics: bool = True) -> list[str]:
    script = path.read_text()
    meta = header(script)
    written = []
    variants = {"": dict(ALWAYS_ENV)}
    if with_diagnostics:
        variants[".diag"] = diagnostics_env(ruleset.categories[meta["category"]], collect_artifacts=False)
    for suffix, env in variants.items():
        result = run(RunSpec(script=script, env=env, timeout_s=300))
        name = f"{path.stem}{suffix}"
        (out / f"{name}.log").write_text(shorten(output_text(result)), encoding="utf-8")
        (out / f"{name}.meta.json").write_text(json.dumps({
            "category": meta["category"], "about": meta.get("about", ""), "script": str(path.relative_to(ROOT)),
            "env": env, "status": result.status, "exit_code": result.exit_code, "signal": result.signal,
            "torch_version": torch_version, "recorded": datetime.date.today().isoformat(),
        }, indent=2) + "\n", encoding="utf-8")
        written.append(f"{name}: {result.status} ({result.duration_s:.0f} s)")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="record just this repro (file stem)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--set", choices=sorted(SETS), default="repros", help="which scripts to record")
    parser.add_argument("--out", type=Path, default=RECORDED, help="where to write (default tests/corpus/recorded)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ruleset = load_ruleset()
    torch_version = probe_machine().get("torch_version", "unknown")
    folder, with_diagnostics = SETS[args.set]
    paths = [p for p in sorted(folder.glob("*.py")) if not header(p.read_text()).get("corpus", "").startswith("skip")]
    if args.only:
        paths = [p for p in paths if p.stem == args.only]
    with ThreadPoolExecutor(args.jobs) as pool:
        for lines in pool.map(lambda p: record(p, ruleset, torch_version, args.out, with_diagnostics), paths):
            print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
