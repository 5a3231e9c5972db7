"""Interestingness test for the peer reducers: exit 0 iff a candidate fails the same way.

"The same way" is `Minimizer.is_interesting`, the predicate `pt2-triage minimize` uses, with each
run in a fresh sandboxed interpreter (cold): the run classifies to the original's category and
normalized signature, and it is not a user-level slip (NameError, ImportError, ...). With
--compiler-off (what --describe reports for `eager_clean` categories such as accuracy) the
candidate must also run clean with Dynamo disabled.

    interesting.py --category C --signature S [--compiler-off] [FILE]   # FILE, or the candidate on stdin
    interesting.py --describe FILE                                      # print the failure of FILE as JSON

The candidate comes as a path (shrinkray >= 25 with --input-type arg) or on stdin (shrinkray
0.0.x, which only pipes). Each call appends one line to $PT2_BENCH_RUN_LOG when it is set, so the
benchmark can count a peer's predicate runs and see when it found each smaller candidate. $PT2_BENCH_CACHE_DIR, when set, is the Inductor
cache shared by the runs of one reduction, as `pt2-triage minimize` shares one per job.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.cli.main import build_classifier  # noqa: E402
from bot.pipeline.minimize import Minimizer  # noqa: E402
from bot.core.records import Classification  # noqa: E402
from runners.reduce import count_tokens  # noqa: E402
from runners.sandbox import run  # noqa: E402

RUN_LOG_VAR = "PT2_BENCH_RUN_LOG"
CACHE_DIR_VAR = "PT2_BENCH_CACHE_DIR"
DEFAULT_TIMEOUT_S = 60.0


def cold_minimizer(timeout_s: float = DEFAULT_TIMEOUT_S, cache_dir: str | None = None) -> Minimizer:
    """Our own predicate (`Minimizer.is_interesting`), with every run in a fresh sandboxed interpreter."""
    minimizer = Minimizer(build_classifier(None), run, timeout_s=timeout_s)
    minimizer.cache_dir = cache_dir  # the Inductor cache of this reduction (`minimize` makes its own)
    return minimizer


def is_same_failure(script: str, category: str, signature: str, timeout_s: float = DEFAULT_TIMEOUT_S,
                    cache_dir: str | None = None, compiler_off: bool = False) -> bool:
    try:
        compile(script, "<candidate>", "exec")
    except (SyntaxError, ValueError):
        return False  # text reducers make unparsable candidates; no need to start Python for them
    target = Classification(category=category, confidence=1.0, signature=signature, evidence=())
    return cold_minimizer(timeout_s, cache_dir).is_interesting(target, script, compiler_off)


def log_run(verdict: bool, started: float, script: str) -> None:
    """One line per run: verdict, seconds it took, when it ended (epoch), the candidate's tokens."""
    path = os.environ.get(RUN_LOG_VAR)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{int(verdict)} {time.monotonic() - started:.3f} {time.time():.3f} {count_tokens(script)}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", help="the candidate script (default: stdin)")
    parser.add_argument("--category", help="the original failure's category")
    parser.add_argument("--signature", help="the original failure's normalized signature")
    parser.add_argument("--compiler-off", action="store_true",
                        help="also require the candidate to run clean with Dynamo disabled")
    parser.add_argument("--describe", action="store_true", help="print FILE's category and signature as JSON")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds for the candidate's run")
    args = parser.parse_args(argv)
    data = Path(args.file).read_bytes() if args.file else sys.stdin.buffer.read()
    script = data.decode("utf-8", errors="replace")
    if args.describe:
        minimizer = cold_minimizer(args.timeout)
        classification, result = minimizer.classify_run(script)
        print(json.dumps({"category": classification.category, "signature": classification.signature,
                          "status": result.status,
                          "compiler_off": minimizer.needs_compiler_off_check(classification, script)}))
        return 0
    if not (args.category and args.signature):
        parser.error("--category and --signature are required (or --describe)")
    started = time.monotonic()
    verdict = is_same_failure(script, args.category, args.signature, args.timeout, os.environ.get(CACHE_DIR_VAR),
                              args.compiler_off)
    log_run(verdict, started, script)
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
