"""Classifier throughput on a CI-sized log, side by side with GNU grep over the same anchors.

Generates a CI-style log (GitHub Actions timestamps, ANSI colours, pytest/ninja/pip noise) of
--size-mb megabytes with a real PT2 error (the Inductor C++ compile failure fixture) at the end,
then runs, each --repeat times, taking the best:
  * `pt2-triage classify --json LOG`         (the whole CLI: interpreter start, imports, classify)
  * the classifier in-process                 (scan + decide only)
  * `grep -E -c -f ANCHORS LOG` (LC_ALL=C)     (the same patterns as one ERE union)
and prints MB/s and peak RSS next to each other. Targets (issue #3): CLI time within 2x of grep,
peak memory at most 2x the file size.

    python benchmarks/classify_throughput.py [--size-mb 100] [--repeat 3]
"""
from __future__ import annotations

import argparse
import mmap
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.classify import Classifier  # noqa: E402
from bot.graph_breaks import load_registry  # noqa: E402
from bot.ruleset import load_ruleset  # noqa: E402
from bot.scan import CHAIN_SEPARATOR, EXCEPTION_HEAD, FAILED_TEST, TRACEBACK  # noqa: E402

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


def write_log(path: Path, size_bytes: int, tail: bytes) -> None:
    rng = random.Random(0)
    with path.open("wb") as out:
        written = 0
        while written < size_bytes:
            chunk = "".join(f"2026-11-20T10:11:12.{rng.randrange(10**7):07d}Z {rng.choice(NOISE).format(i=rng.randrange(100000))}\n"
                            for _ in range(10_000)).encode()
            out.write(chunk)
            written += len(chunk)
        out.write(b"".join(b"2026-11-20T10:12:00.0000000Z " + line + b"\n" for line in tail.split(b"\n")))


def to_ere(pattern: str) -> str:
    """The RE2 anchor as a POSIX ERE GNU grep accepts (same language for these patterns)."""
    ere = pattern.replace("(?:", "(").replace("(?i)", "").replace("(?m)", "").replace(r"\d", "[0-9]")
    return ere.replace(r"\x1b", "\x1b")


def anchors(ruleset) -> list[str]:
    return [p.regex for p in ruleset.in_scope("line")] + [TRACEBACK, CHAIN_SEPARATOR, EXCEPTION_HEAD, FAILED_TEST]


def timed_child(argv: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Wall seconds and peak RSS (bytes) of one child process, measured through wait4."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss * 1024, out.decode(errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    ruleset = load_ruleset()
    tail = (ROOT / "tests" / "bot" / "fixtures" / "inductor_cpp_compile_error.log").read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "ci.log"
        write_log(log, int(args.size_mb * 1e6), tail)
        size = log.stat().st_size
        anchor_file = Path(tmp) / "anchors.txt"
        anchor_file.write_text("\n".join(to_ere(a) for a in anchors(ruleset)) + "\n")

        cli = [str(Path(sys.executable).with_name("pt2-triage")), "classify", "--json", str(log)]
        grep = ["grep", "-E", "-c", "-f", str(anchor_file), str(log)]
        grep_env = dict(os.environ, LC_ALL="C")
        cli_runs = [timed_child(cli) for _ in range(args.repeat)]
        grep_runs = [timed_child(grep, grep_env) for _ in range(args.repeat)]

        classifier = Classifier(ruleset, load_registry())
        in_process = []
        with log.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            for _ in range(args.repeat):
                start = time.perf_counter()
                result = classifier.classify(mapped)
                in_process.append(time.perf_counter() - start)

    category = re.search(r'"category": "(\w+)"', cli_runs[0][2])
    mb = size / 1e6
    best_cli, best_grep, best_in = min(r[0] for r in cli_runs), min(r[0] for r in grep_runs), min(in_process)
    peak_cli, peak_grep = max(r[1] for r in cli_runs), max(r[1] for r in grep_runs)
    print(f"log: {mb:.1f} MB, {len(anchors(ruleset))} anchor patterns, best of {args.repeat}")
    print(f"{'':32s} {'seconds':>8s} {'MB/s':>8s} {'peak RSS MB':>12s}")
    print(f"{'grep -E -c -f anchors (LC_ALL=C)':32s} {best_grep:8.3f} {mb / best_grep:8.0f} {peak_grep / 1e6:12.1f}")
    print(f"{'pt2-triage classify (CLI)':32s} {best_cli:8.3f} {mb / best_cli:8.0f} {peak_cli / 1e6:12.1f}")
    print(f"{'classifier in-process':32s} {best_in:8.3f} {mb / best_in:8.0f} {'':>12s}")
    print(f"verdict: {category.group(1) if category else '?'} (in-process: {result.category})")
    print(f"CLI time / grep time: {best_cli / best_grep:.2f}x (target <= 2x); "
          f"CLI peak RSS / file size: {peak_cli / size:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
