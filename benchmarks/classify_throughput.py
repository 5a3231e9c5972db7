"""Classifier throughput on CI-sized logs, side by side with GNU grep over the same anchors.

Two workloads, each ending in a real PT2 error:
  * generated: --size-mb of CI noise (GitHub Actions timestamps, ANSI colours, pytest/ninja/pip
    lines) with the Inductor C++ compile failure fixture at the end: almost no PT2 text in it;
  * dense: --dense-mb of real torch output (every recorded log of tests/corpus/recorded/, the
    outputs of ~60 failing and passing PT2 scripts, in a seeded random order, timestamped as a CI
    job prints them) ending in a graph break: a hit on every few lines, tracebacks throughout.
For each, best of --repeat runs:
  * `pt2-triage classify LOG` and `pt2-triage classify --json LOG` (the whole CLI: interpreter
    start, imports, classification; --json also lists every distinct failure of the log),
  * `grep -E -c -f ANCHORS LOG` (LC_ALL=C): the same patterns (every `line` rule and the
    structural anchors) translated to ERE by benchmarks/ere.py.
grep is checked, not trusted: its stderr must be empty, its exit status 0 or 1, and the number of
lines it matches must equal the number RE2 matches with the same patterns. Targets: CLI time at
most 2x grep's on both workloads, peak RSS at most 2x the file size.

    python benchmarks/classify_throughput.py [--size-mb 100] [--dense-mb 30] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import re2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bot.core.ruleset import load_ruleset  # noqa: E402
from bot.core.scan import CHAIN_SEPARATOR, EXCEPTION_HEAD, FAILED_TEST, GB_ID, TRACEBACK  # noqa: E402
from ere import to_ere  # noqa: E402

FIXTURES = ROOT / "tests" / "bot" / "fixtures"
RECORDED = ROOT / "tests" / "corpus" / "recorded"
NOISE = [
    "test/inductor/test_torchinductor.py::CpuTests::test_add_{i}_cpu \x1b[32mPASSED\x1b[0m [ 12%]",
    "  Downloading https://files.pythonhosted.org/packages/aa/bb/numpy-{i}.whl (18.2 MB)",
    "[{i}/5120] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/__/aten/src/ATen/native/cpu/Activation.cpp.o",
    "\x1b[36;1m+ python test/run_test.py --shard 1 2 --verbose\x1b[0m",
    "test_sum_{i} (__main__.TestReductions.test_sum_{i}) ... ok ({i}.012s)",
    "/pytorch/aten/src/ATen/native/Foo.cpp:{i}:7: warning: unused variable 'x{i}' [-Wunused-variable]",
    "##[group]Run actions/checkout@v4",
    "Collecting torchvision=={i}.0 (from -r requirements.txt (line 3))",
]


def stamp(line: bytes, rng: random.Random) -> bytes:
    return b"2026-11-20T10:11:12.%07dZ " % rng.randrange(10**7) + line


def write_generated(path: Path, size_bytes: int) -> None:
    rng = random.Random(0)
    with path.open("wb") as out:
        written = 0
        while written < size_bytes:
            chunk = "".join(f"2026-11-20T10:11:12.{rng.randrange(10**7):07d}Z {rng.choice(NOISE).format(i=rng.randrange(100000))}\n"
                            for _ in range(10_000)).encode()
            out.write(chunk)
            written += len(chunk)
        tail = (FIXTURES / "inductor_cpp_compile_error.log").read_bytes()
        out.write(b"".join(stamp(line, rng) + b"\n" for line in tail.split(b"\n")))


def write_dense(path: Path, size_bytes: int) -> None:
    rng = random.Random(0)
    outputs = [p.read_bytes().split(b"\n") for p in sorted(RECORDED.glob("*.log"))]
    with path.open("wb") as out:
        written = 0
        while written < size_bytes:
            chunk = b"".join(stamp(line, rng) + b"\n" for line in rng.choice(outputs))
            out.write(chunk)
            written += len(chunk)
        tail = (FIXTURES / "fullgraph_data_dependent_branch.log").read_bytes()
        out.write(b"".join(stamp(line, rng) + b"\n" for line in tail.split(b"\n")))


def anchors(ruleset) -> list[str]:
    return [p.regex for p in ruleset.in_scope("line")] + [TRACEBACK, CHAIN_SEPARATOR, EXCEPTION_HEAD, FAILED_TEST, GB_ID]


def re2_matching_lines(path: Path, patterns: list[str]) -> int:
    """Lines with at least one match, counted with RE2 (the reference grep must agree with)."""
    union = re2.compile("(?m)" + "|".join(f"(?:{p})" for p in patterns))
    data, count, pos = path.read_bytes(), 0, 0
    while (match := union.search(data, pos)) is not None:
        count += 1
        end = data.find(b"\n", match.start())
        if end < 0:
            break
        pos = end + 1
    return count


def timed_child(argv: list[str], env: dict | None = None) -> tuple[float, int, bytes, bytes, int]:
    """Wall seconds, peak RSS (bytes), stdout, stderr and exit status of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = proc.communicate()
    elapsed = time.perf_counter() - start
    return elapsed, 0, out, err, proc.returncode


def peak_rss(argv: list[str], env: dict | None = None) -> int:
    """Peak RSS of one run, from /usr/bin/time -f %M (KB), or 0 where it is not installed."""
    if not Path("/usr/bin/time").exists():
        return 0
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, env=env)
    return int(proc.stderr.decode().strip().splitlines()[-1]) * 1024


def measure(log: Path, anchor_file: Path, patterns: list[str], repeat: int) -> dict:
    cli = str(Path(sys.executable).with_name("pt2-triage"))
    grep_env = dict(os.environ, LC_ALL="C")
    grep = ["grep", "-E", "-c", "-f", str(anchor_file), str(log)]
    grep_runs = [timed_child(grep, grep_env) for _ in range(repeat)]
    for _, _, out, err, status in grep_runs:
        if err or status not in (0, 1):
            raise SystemExit(f"grep did not run cleanly (exit {status}): {err.decode(errors='replace')[:500]}")
    grep_lines = int(grep_runs[0][2].decode().strip() or 0)
    reference_lines = re2_matching_lines(log, patterns)
    if grep_lines != reference_lines:
        raise SystemExit(f"grep matched {grep_lines} lines but RE2 {reference_lines}: the translation is not faithful")
    plain = [timed_child([cli, "classify", str(log)]) for _ in range(repeat)]
    as_json = [timed_child([cli, "classify", "--json", str(log)]) for _ in range(repeat)]
    verdict = json.loads(as_json[0][2])
    return {
        "size_bytes": log.stat().st_size, "matching_lines": grep_lines,
        "grep_s": min(r[0] for r in grep_runs), "cli_s": min(r[0] for r in plain), "cli_json_s": min(r[0] for r in as_json),
        "grep_rss": peak_rss(grep, grep_env), "cli_rss": peak_rss([cli, "classify", str(log)]),
        "cli_json_rss": peak_rss([cli, "classify", "--json", str(log)]),
        "category": verdict["category"], "rule": verdict.get("rule"), "failures": len(verdict.get("failures", [])),
    }


def report(name: str, m: dict) -> None:
    mb = m["size_bytes"] / 1e6
    print(f"\n{name}: {mb:.1f} MB, {m['matching_lines']} lines matched by the anchors (grep and RE2 agree)")
    print(f"  {'':34s} {'seconds':>8s} {'MB/s':>7s} {'x grep':>7s} {'peak RSS MB':>12s} {'x file':>7s}")
    for label, seconds, rss in (("grep -E -c -f anchors (LC_ALL=C)", m["grep_s"], m["grep_rss"]),
                                ("pt2-triage classify", m["cli_s"], m["cli_rss"]),
                                ("pt2-triage classify --json", m["cli_json_s"], m["cli_json_rss"])):
        print(f"  {label:34s} {seconds:8.3f} {mb / seconds:7.0f} {seconds / m['grep_s']:7.2f} {rss / 1e6:12.1f} "
              f"{rss / m['size_bytes']:7.2f}")
    print(f"  verdict: {m['category']} (rule {m['rule']}); distinct failures listed: {m['failures']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--dense-mb", type=float, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    patterns = anchors(load_ruleset())
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        anchor_file = Path(tmp) / "anchors.txt"
        anchor_file.write_text("\n".join(to_ere(p) for p in patterns) + "\n", encoding="utf-8")
        for name, writer, size in (("generated", write_generated, args.size_mb), ("dense", write_dense, args.dense_mb)):
            log = Path(tmp) / f"{name}.log"
            writer(log, int(size * 1e6))
            results[name] = measure(log, anchor_file, patterns, args.repeat)
            log.unlink()
    for name, numbers in results.items():
        report(name, numbers)
    worst = max(max(m["cli_s"], m["cli_json_s"]) / m["grep_s"] for m in results.values())
    worst_rss = max(max(m["cli_rss"], m["cli_json_rss"]) / m["size_bytes"] for m in results.values())
    print(f"\nworst CLI time / grep time: {worst:.2f}x (target <= 2x); worst peak RSS / file size: {worst_rss:.2f}x (target <= 2x)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
