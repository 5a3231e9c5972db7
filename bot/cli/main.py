"""`pt2-triage`: the command line. Parses arguments, reads inputs, prints; decisions live elsewhere."""
from __future__ import annotations

import argparse
import json
import logging
import mmap
import re
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from bot import __version__
from bot.cli.common import UsageError, build_classifier  # noqa: F401  (UsageError: part of this module's API)

from bot.pipeline import outdir
from bot.pipeline.outdir import OutDirRefused
from bot.core.classify import Classifier
from bot.core.extract import MAX_MARKDOWN_CHARS, request_from_text
from bot.core.logtext import decode
from bot.core.records import Classification
from bot.core.printable import printable
from bot.core.render import render
from bot.core.ruleset import Ruleset, RulesError

log = logging.getLogger("pt2_triage")


@contextmanager
def open_input(path: str) -> Iterator[bytes]:
    """The input as bytes: stdin read whole, a file memory-mapped (a 200 MB log is never copied)."""
    if path == "-":
        yield sys.stdin.buffer.read()
        return
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: no such file (give a path, or - for standard input)")
    with file.open("rb") as handle:
        if file.stat().st_size == 0:
            yield b""
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield mapped


def classification_json(result: Classification, ruleset: Ruleset) -> dict:
    category = ruleset.categories[result.category]
    data = result.to_dict()
    data["diagnostics"] = {"env": dict(category.diagnostics.env), "note": category.diagnostics.note}
    data.update(title=category.title, key_files=list(category.key_files), next_steps=list(category.next_steps),
                test_files=list(category.test_files), labels=list(category.labels))
    return data


def cmd_classify(args: argparse.Namespace) -> int:
    from bot.core.failures import distinct_failures

    classifier = build_classifier(args.rules)
    with open_input(args.file) as data:
        result = classifier.classify(data)
        request = request_from_text(decode(data[:MAX_MARKDOWN_CHARS]), source="local_file", reference=args.file) \
            if len(data) <= MAX_MARKDOWN_CHARS else None
        failures = distinct_failures(data, classifier) if args.json else ()
    if args.json:
        payload = classification_json(result, classifier.ruleset)
        payload["failures"] = [f.to_dict() for f in failures]
        if request:
            payload["reporter_environment"] = request.to_dict()["environment"]
            payload["repro_found"] = bool(request.repro_scripts)
        print(json.dumps(payload, indent=2))
    else:
        graph_break = classifier.registry.get(result.graph_break_id) if classifier.registry else None
        print(render("verdict.txt.j2", result=result, category=classifier.ruleset.categories[result.category],
                     graph_break=graph_break, request=request), end="")
    return 0


def read_corpus(path: str) -> list[dict]:
    """JSON lines with at least `body` and `category`; a bad line is an error naming it."""
    cases = []
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(case, dict) or not isinstance(case.get("body"), str) or not isinstance(case.get("category"), str):
            raise UsageError(f"{path}:{number}: each line needs a string `body` and `category`")
        case.setdefault("id", f"line {number}")
        cases.append(case)
    return cases


SPLITS = ("train", "dev", "test")


def corpus_path(corpus: str | None, split: str | None) -> Path:
    """A JSONL file, or a corpus directory plus a split (default: the checkout's real-issue corpus)."""
    base = Path(corpus) if corpus else Path(__file__).resolve().parents[2] / "tests" / "corpus" / "real"
    if base.is_dir():
        if split is None:
            raise UsageError(f"{base}: a corpus directory needs --split ({'|'.join(SPLITS)})")
        base = base / f"{split}.jsonl"
    elif split is not None:
        raise UsageError("--split goes with a corpus directory, not a single file")
    if not base.is_file():
        raise UsageError(f"{base}: no such corpus file")
    return base


def cmd_eval(args: argparse.Namespace) -> int:
    from bot.core.evaluate import Outcome, evaluate

    if args.split == "test" and args.mistakes:
        raise UsageError("the test split is scored, never inspected case by case: --mistakes works on train and dev")
    classifier = build_classifier(args.rules)
    path = corpus_path(args.corpus, args.split)
    cases = read_corpus(str(path))
    unknown = sorted({c["category"] for c in cases} - set(classifier.ruleset.categories))
    if unknown:
        raise UsageError(f"{path}: unknown categories {', '.join(unknown)}")
    outcomes = []
    for case in cases:
        # recorded cases are a run's output (rules decide), the others what a person wrote
        verdict = classifier.classify_text(case["body"], report=case.get("source") != "recorded")
        outcomes.append(Outcome(str(case.get("url") or case["id"]), case["category"], verdict.category,
                                verdict.confidence, verdict.unsure))
    report = evaluate(outcomes, not_pt2=classifier.ruleset.not_pt2)
    table = render("eval.txt.j2", report=report, title=str(path), show_mistakes=args.mistakes)
    if args.json:
        print(table, end="", file=sys.stderr)
        print(json.dumps(report.to_dict()))
    else:
        print(table, end="")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from runners.probe import probe_machine

    from bot.core.report import TriageReport
    from bot.pipeline.reproduce import ReproduceOptions, Reproducer, machine_environment

    script_path = Path(args.script)
    if not script_path.is_file():
        raise UsageError(f"{args.script}: no such file")
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    issue_text = Path(args.issue).read_text(encoding="utf-8", errors="replace") if args.issue else None
    classifier = build_classifier(args.rules)
    out_dir = outdir.prepare(Path(args.out)) if args.out else None
    machine = machine_environment(probe_machine(unsafe_no_sandbox=sandbox_fallback(args)))
    options = ReproduceOptions(runs=args.runs, timeout_s=args.timeout, device=args.device, minify_graph=not args.no_minifier)
    with ExitStack() as stack:
        reproducer = Reproducer(classifier, make_runner(stack, 1 if args.warm else 0), machine, options, out_dir)
        reproduction = reproducer.reproduce(script_path.read_text(encoding="utf-8", errors="replace"), issue_text)
        if reproduction.reproduced and options.minify_graph:  # torch's after_aot minifier, when the category wants it
            category = reproducer.final_classification(issue_text, reproduction).category
            reproduction = replace(reproduction, minifier=reproducer.minify(reproducer.script_used, category))
    report = TriageReport(classification=reproducer.final_classification(issue_text), source="local_file",
                          reference=str(script_path), machine=machine, reproduction=reproduction)
    if out_dir:
        outdir.write_text(out_dir, "report.json", report.to_json())
    if args.json:
        print(report.to_json())
    else:
        print(render("reproduce.txt.j2", report=report, reproduction=reproduction,
                     category=classifier.ruleset.categories[report.classification.category], out_dir=out_dir), end="")
    return 0


def cmd_minimize(args: argparse.Namespace) -> int:
    from bot.pipeline.minimize import Minimizer, NotReproducible

    script_path = Path(args.script)
    if not script_path.is_file():
        raise UsageError(f"{args.script}: no such file")
    classifier = build_classifier(args.rules)
    sandbox_fallback(args)
    with ExitStack() as stack:
        runner = make_runner(stack, args.jobs)
        minimizer = Minimizer(classifier, runner, budget_s=args.budget, timeout_s=args.timeout, parallelism=args.jobs)
        try:
            result = minimizer.minimize(script_path.read_text(encoding="utf-8", errors="replace"))
        except NotReproducible as exc:
            raise UsageError(f"{args.script}: {exc}") from None
    graph = None
    if not args.no_graph_minifier and "minifier" in classifier.ruleset.categories[result.original.category].artifacts:
        graph = graph_minifier(classifier, result.source, result.original.category)
    if args.out:
        outdir.write_file(Path(args.out), result.source)
    if args.json:
        payload = result.to_dict()
        payload["graph_repro"] = graph
        print(json.dumps(payload, indent=2))
    else:
        print(render("minimize.txt.j2", result=result, graph=graph, out=args.out), end="")
    return 0


def cmd_triage(args: argparse.Namespace) -> int:
    from runners.probe import probe_machine

    from bot.pipeline.reproduce import machine_environment
    from bot.pipeline.triage import Triage, TriageOptions

    source = Path(args.input)
    if not source.is_file():
        raise UsageError(f"{args.input}: no such file (give an issue's markdown or a repro .py)")
    root = Path(args.pytorch_root) if args.pytorch_root else None
    if root and not (root / "test").is_dir():
        raise UsageError(f"{args.pytorch_root}: not a PyTorch checkout (no test/ directory)")
    out_dir = outdir.prepare(Path(args.out))
    if args.issue_url and not re.fullmatch(r"https://[\w.-]+/[\w.-]+/[\w.-]+/issues/\d+", args.issue_url):
        raise UsageError(f"--issue-url {args.issue_url!r}: give the issue's https URL (https://github.com/OWNER/REPO/issues/N)")
    options = TriageOptions(out_dir=out_dir, issue_number=args.issue_number, issue_url=args.issue_url, pytorch_root=root,
                            device=args.device, minimize_budget_s=args.budget, total_budget_s=args.budget_total, run_timeout_s=args.timeout,
                            minify_graph=not args.no_minifier, jobs=args.jobs, ladder=not args.no_ladder)

    def progress(stage: str, note: str, seconds: float) -> None:
        print(f"[{stage:>9}] {seconds:6.1f}s  {printable(note)}", file=sys.stderr, flush=True)

    with ExitStack() as stack:
        triage = Triage(build_classifier(args.rules), make_runner(stack, args.jobs),
                        machine_environment(probe_machine(unsafe_no_sandbox=sandbox_fallback(args))), options, progress)
        report = triage.triage(source)
    if args.json:
        print(report.to_json())
    else:
        print(render("triage.txt.j2", report=report, out_dir=out_dir), end="")
    return 0


def graph_minifier(classifier: Classifier, script: str, category_id: str) -> dict:
    """torch's after_aot graph repro for backend/accuracy failures, next to the script-level result."""
    from runners import sandbox
    from runners.probe import probe_machine

    from bot.pipeline.reproduce import ReproduceOptions, Reproducer, machine_environment

    reproducer = Reproducer(classifier, sandbox.run, machine_environment(probe_machine()), ReproduceOptions())
    outcome = reproducer.minify(script, category_id)
    return None if outcome is None else {"verified": outcome.verified, "note": outcome.note,
                                         "repro_source": outcome.repro_source, "duration_s": outcome.duration_s}


def make_runner(stack: ExitStack, warm_workers: int):
    """The runner the pipeline stages get: cold sandboxed runs (0), or that many warm workers,
    started lazily (runners/pool.py `lazy_runner`)."""
    from runners.pool import lazy_runner

    return lazy_runner(stack, warm_workers)


def sandbox_fallback(args: argparse.Namespace) -> bool:
    """Apply `--unsafe-no-sandbox`: without bubblewrap, run with weaker isolation instead of refusing.
    Returns whether runs will be unsafe (the report's runs say so too)."""
    from runners import sandbox

    sandbox.allow_unsafe_fallback(bool(getattr(args, "unsafe_no_sandbox", False)))
    return sandbox.unsafe_fallback_needed()


def add_unsafe_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument("--unsafe-no-sandbox", action="store_true",
                         help="where bubblewrap is missing, run the repro anyway with weaker isolation (unshare, rlimits); "
                              "the report says so. Never on a machine that holds anything worth stealing")


def add_command(commands, name: str, handler, help: str, json_help: str) -> argparse.ArgumentParser:
    """A subcommand with the options every command shares (--json, --rules)."""
    command = commands.add_parser(name, help=help)
    command.add_argument("--json", action="store_true", help=json_help)
    command.add_argument("--rules", help="a directory with categories.yaml and patterns.yaml to use instead")
    command.set_defaults(handler=handler)
    return command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pt2-triage", description="Triage PyTorch 2 compiler failures.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    classify = add_command(commands, "classify", cmd_classify, "classify an issue text or a log",
                           "print JSON instead of a readable verdict")
    classify.add_argument("file", nargs="?", default="-", help="issue markdown or log file; - for stdin (default)")

    evaluate_cmd = add_command(commands, "eval", cmd_eval, "score the classifier on a labeled JSONL corpus",
                               "print the table to stderr and JSON as the last line")
    evaluate_cmd.add_argument("corpus", nargs="?",
                              help="JSON lines with `body` and `category`, or a corpus directory with "
                                   "train/dev/test.jsonl (default: the checkout's tests/corpus/real)")
    evaluate_cmd.add_argument("--split", choices=SPLITS, help="which split of a corpus directory to score")
    evaluate_cmd.add_argument("--mistakes", action="store_true",
                              help="list the misclassified cases (train and dev only)")

    add_run_commands(commands)
    from bot.cli.app_commands import register as register_app_commands  # serve, publish, ci-failure
    register_app_commands(commands, add_command)
    from bot.cli.doctor import register as register_doctor; register_doctor(commands, add_command)  # noqa: E702
    return parser


def add_run_commands(commands) -> None:
    """reproduce, minimize and triage: the commands that run untrusted code (in the sandbox)."""
    reproduce = add_command(commands, "reproduce", cmd_reproduce,
                            "run a repro in the sandbox with the diagnostics its category needs", "print the report as JSON")
    reproduce.add_argument("script", help="the repro script (untrusted: it only ever runs in the sandbox)")
    reproduce.add_argument("--issue", help="the issue text it came from, to choose the first diagnostics")
    reproduce.add_argument("--out", help="write report.json and artifacts (logs, debug dirs, tlparse, minifier) here")
    reproduce.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    reproduce.add_argument("--runs", type=int, default=1, help="runs of the final configuration, to detect flakiness")
    reproduce.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    reproduce.add_argument("--warm", action="store_true", help="reuse a warm torch worker for plain CPU runs")
    reproduce.add_argument("--no-minifier", action="store_true", help="skip torch's after_aot minifier")
    add_unsafe_flag(reproduce)

    minimize = add_command(commands, "minimize", cmd_minimize, "shrink a failing repro while it fails the same way",
                           "print the result and stats as JSON")
    minimize.add_argument("script", help="the failing repro (runs only in the sandbox)")
    minimize.add_argument("--out", help="write the minimized script here")
    minimize.add_argument("--budget", type=float, default=600, help="seconds to spend searching (default 600)")
    minimize.add_argument("--timeout", type=float, default=120, help="seconds per candidate run (default 120)")
    minimize.add_argument("--jobs", type=int, default=2, help="candidates tested in parallel (warm workers)")
    minimize.add_argument("--no-graph-minifier", action="store_true",
                          help="skip torch's after_aot graph minifier for backend/accuracy failures")
    add_unsafe_flag(minimize)

    triage = add_command(commands, "triage", cmd_triage,
                         "the full local pipeline: classify, reproduce, minimize, suggest and verify a regression test",
                         "print report.json to stdout")
    triage.add_argument("input", help="an issue's markdown (the repro is taken from its code blocks) or a repro .py")
    triage.add_argument("--out", default="triage-out",
                        help="write comment.md, report.json, repro_min.py, test_regression.py (and test.patch) here")
    triage.add_argument("--issue-number", type=int, help="the issue number, for the test's name and the comment")
    triage.add_argument("--issue-url", help="the issue's URL, which the generated test names (never a local path)")
    triage.add_argument("--pytorch-root", help="a PyTorch checkout: confirm the test file and class, write test.patch")
    triage.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    triage.add_argument("--budget", type=float, default=300, help="seconds for minimizing (default 300)")
    triage.add_argument("--budget-total", type=float, default=300,
                        help="seconds for the whole triage, split across the stages (default 300)")
    triage.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    triage.add_argument("--jobs", type=int, default=2, help="warm workers for minimizing (0: cold runs only)")
    triage.add_argument("--no-minifier", action="store_true", help="skip torch's after_aot graph minifier")
    triage.add_argument("--no-ladder", action="store_true",
                        help="skip the ablation ladder (compiler off, eager, aot_eager, ... re-runs that localize the failure)")
    add_unsafe_flag(triage)


class PrintableFormatter(logging.Formatter):
    """Log lines quote run output (signatures, messages): shown with its control characters escaped."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler()
    handler.setFormatter(PrintableFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    try:
        return args.handler(args)
    except (UsageError, RulesError, OutDirRefused) as exc:
        print(f"pt2-triage: {printable(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # the sandbox is missing: one line with the fix, not a traceback
        from runners.sandbox import SandboxUnavailable

        if not isinstance(exc, SandboxUnavailable):
            raise
        print(f"pt2-triage: cannot run untrusted code here: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
