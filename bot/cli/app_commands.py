"""The App's subcommands: `serve`, `publish` and `ci-failure`.

`publish` and `ci-failure` are what the Action runs in its trusted jobs; their arguments and
their `--json` output (one object on stdout) are an interface: keep them stable.
Token: `GITHUB_TOKEN` from the environment (never an argument, so it stays out of `ps`).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bot.app.settings import DEFAULT_API_URL
from bot.cli.common import UsageError, build_classifier

# Job workers yield the CPU to the web process on a shared host: an acknowledgement has GitHub's
# 10 s (and our p99 target of 100 ms); a job has minutes. Measured on 2 cores under 50 clients.
WORKER_NICE = 10
SERVE_THREADS = 32


def register(commands, add_command) -> None:
    """Called at the end of `bot.cli.main.build_parser`."""
    serve = add_command(commands, "serve", cmd_serve, "run the GitHub App (webhook server and job workers)",
                        argparse.SUPPRESS)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--threads", type=int, default=SERVE_THREADS,
                       help=f"waitress request threads (default {SERVE_THREADS}; requests beyond it queue)")
    serve.add_argument("--dev", action="store_true",
                       help="use Flask's debug server instead of waitress (local development only)")

    worker = add_command(commands, "worker", cmd_worker,
                         "run job workers only (next to `serve` with PT2_TRIAGE_WORKERS=0)", argparse.SUPPRESS)
    worker.add_argument("--threads", type=int, default=2, help="worker threads (default 2)")
    worker.add_argument("--nice", type=int, default=WORKER_NICE,
                        help=f"lower the workers' CPU priority by this much (default {WORKER_NICE}; 0 keeps it)")

    publish = add_command(commands, "publish", cmd_publish,
                          "post or update the triage comment, labels and draft PR from a report directory",
                          "print {comment_url, pr_url, labels, ...} as JSON")
    publish.add_argument("report_dir", metavar="REPORT_DIR", help="a directory with report.json (from `triage`)")
    _repo_arguments(publish)
    publish.add_argument("--issue", type=int, required=True, help="the issue number to comment on")
    publish.add_argument("--draft-pr", action="store_true", help="open or update the draft regression-test PR")
    publish.add_argument("--no-labels", action="store_true", help="do not apply the category's labels")
    publish.add_argument("--test-file", help="commit the test into this file instead of the suggested one")

    ci = add_command(commands, "ci-failure", cmd_ci_failure,
                     "classify the failed jobs of a workflow run and comment on its PR(s)",
                     "print the CI report as JSON")
    _repo_arguments(ci)
    ci.add_argument("--run-id", type=int, required=True, help="the workflow run (github.event.workflow_run.id)")
    ci.add_argument("--out", help="write ci_report.json and comment.md here")
    ci.add_argument("--comment", action="store_true",
                    help="comment on the run's pull requests (or its commit) when a failure is PT2-related")


def _repo_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--repo", required=True, help="OWNER/NAME")
    command.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL", DEFAULT_API_URL),
                         help="REST API base URL (default $GITHUB_API_URL, else api.github.com)")


def _client(args):
    from bot.app.github import GitHub, StaticToken, parse_repo

    try:
        parse_repo(args.repo)
    except ValueError as exc:
        raise UsageError(f"--repo: {exc}") from None
    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: export a token with issues/pull-requests write access "
                         "(in a workflow: env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }})")
    return GitHub(args.api_url, StaticToken(token))


def _github_errors(action):
    """GitHub refusing a call is the user's to fix (permissions, names): one line, exit 1."""
    from bot.app.github import GitHubError

    try:
        return action()
    except GitHubError as exc:
        print(f"pt2-triage: GitHub: {exc}", file=sys.stderr)
        return 1


def cmd_publish(args: argparse.Namespace) -> int:
    from bot.core.graph_breaks import load_registry
    from bot.app.publish import publish_report
    from bot.core.report import TriageReport
    from bot.core.ruleset import load_ruleset

    report_path = Path(args.report_dir) / "report.json"
    if not report_path.is_file():
        raise UsageError(f"{report_path}: no such file (give the directory `pt2-triage triage --out` wrote)")
    try:
        report = TriageReport.from_dict(json.loads(report_path.read_text(encoding="utf-8")))
    except (ValueError, TypeError, KeyError) as exc:
        raise UsageError(f"{report_path}: not a triage report ({exc})") from None
    gh = _client(args)
    ruleset = load_ruleset(args.rules)
    if report.classification.category not in ruleset.categories:
        raise UsageError(f"{report_path}: category {report.classification.category!r} is not in the rules")

    def publish() -> int:
        result = publish_report(gh, args.repo, args.issue, report, ruleset, load_registry(), draft_pr=args.draft_pr,
                                test_file=args.test_file, apply_labels=not args.no_labels)
        if args.json:
            print(json.dumps(result.to_dict()))
        else:
            print(f"comment: {result.comment.html_url}")
            print(f"labels: {', '.join(result.labels) or '-'}")
            print(f"draft PR: {result.pull_request.html_url if result.pull_request else result.pull_request_note}")
        return 0

    return _github_errors(publish)


def cmd_ci_failure(args: argparse.Namespace) -> int:
    from bot.pipeline.ci_failure import render_ci_comment
    from bot.app.ci_publish import collect_failures, publish_failures

    gh = _client(args)
    classifier = build_classifier(args.rules)

    def run() -> int:
        workflow_run = gh.workflow_run(args.repo, args.run_id)
        report = collect_failures(gh, args.repo, workflow_run, classifier)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "ci_report.json").write_text(report.to_json(), encoding="utf-8")
            (out / "comment.md").write_text(render_ci_comment(report), encoding="utf-8")
        posted = publish_failures(gh, report) if args.comment else []
        if args.json:
            payload = report.to_dict()
            payload["comments"] = [{"target": p.target, "id": p.number_or_sha, "url": p.comment.html_url}
                                   for p in posted]
            print(json.dumps(payload))
        else:
            for finding in report.findings:
                test = finding.failing_tests[0] if finding.failing_tests else "-"
                print(f"{finding.job_name}: {finding.category} ({finding.confidence:.2f}) {test}")
            if not report.findings:
                print(f"run {args.run_id}: no failed jobs")
            for p in posted:
                print(f"commented on {p.target} {p.number_or_sha}: {p.comment.html_url}")
        return 0

    return _github_errors(run)


def cmd_serve(args: argparse.Namespace) -> int:
    from bot.app.factory import create_app
    from bot.app.settings import SettingsError, settings_from_env

    try:
        settings = settings_from_env()
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    app = create_app(settings)
    if args.dev:
        app.run(host=args.host, port=args.port, threaded=True)
        return 0
    import waitress

    print(f"pt2-triage App on http://{args.host}:{args.port} (POST /webhook, GET /healthz)", file=sys.stderr)
    waitress.serve(app, host=args.host, port=args.port, **waitress_options(args.threads))
    return 0


def waitress_options(threads: int) -> dict:
    """How `serve` runs waitress. `max_request_body_size`: waitress answers 413 itself, from the
    Content-Length, for a body larger than a webhook can be; its default (1 GB) would have it
    spool such a body to a temp file before the app could refuse it. Waitress refuses a length
    equal to its limit, hence the + 1."""
    from bot.app.intake import MAX_BODY_BYTES

    return {"threads": threads, "ident": "pt2-triage", "max_request_body_size": MAX_BODY_BYTES + 1}


def cmd_worker(args: argparse.Namespace) -> int:
    """Job workers in their own process: the web process only acknowledges, so its latency stays flat."""
    import signal
    import threading

    from bot.app.factory import build_services
    from bot.app.settings import SettingsError, settings_from_env
    from bot.app.jobs import WorkerPool

    try:
        settings = settings_from_env()
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    if args.threads < 1:
        raise UsageError("--threads must be at least 1")
    if not 0 <= args.nice <= 19:
        raise UsageError("--nice must be between 0 and 19")
    if args.nice:
        os.nice(args.nice)
    pool = WorkerPool(build_services(settings), args.threads)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    pool.start()
    print(f"pt2-triage worker: {args.threads} threads on {settings.db_path} (nice {args.nice})", file=sys.stderr)
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass
    pool.stop()
    return 0
