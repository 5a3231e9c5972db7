"""`pt2-triage publish` and `pt2-triage ci-failure`: what the Action's trusted jobs run."""
from __future__ import annotations

import json
import shutil
import socket
import threading

import waitress

from bot.cli.main import main
from bot.cli.app_commands import waitress_options
from bot.pipeline.comment import COMMENT_MARKER

from .conftest import FIXTURES, webhook_payload

REPO = "octo-org/octo-repo"


def test_publish_posts_the_comment_labels_and_draft_pr_and_a_rerun_updates_them(tmp_path, fake, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_from_actions")
    shutil.copy(FIXTURES / "reports" / "graph_break.json", tmp_path / "report.json")
    argv = ["publish", str(tmp_path), "--repo", REPO, "--issue", "123", "--draft-pr", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    assert first["comment_url"] == second["comment_url"] and first["pr_url"] == second["pr_url"]
    assert len(fake.bot_comments_on(123)) == 1 and len(fake.pulls) == 1
    assert fake.bot_comments_on(123)[0]["body"].startswith(COMMENT_MARKER)
    assert "oncall: pt2" in first["labels"]
    # the suggested file is not in this repository: the test is committed as a new file next to it
    assert ("pt2-triage/issue-123", "test/dynamo/test_pt2_triage_issue_123.py") in fake.files


def test_publish_without_a_token_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    shutil.copy(FIXTURES / "reports" / "graph_break.json", tmp_path / "report.json")
    assert main(["publish", str(tmp_path), "--repo", REPO, "--issue", "1"]) == 2
    assert "GITHUB_TOKEN is not set" in capsys.readouterr().err


def test_ci_failure_writes_the_report_and_comments_on_the_pr(tmp_path, fake, monkeypatch, capsys, fixture_bytes):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_from_actions")
    run = webhook_payload("workflow_run_completed_ci_failure")["workflow_run"]
    fake.add_run(run, jobs=[{"id": 5, "run_id": run["id"], "name": "test (dynamo)", "conclusion": "failure",
                             "html_url": "https://github.com/octo-org/octo-repo/actions/runs/1/job/5", "steps": []}],
                 logs={5: fixture_bytes("fullgraph_data_dependent_branch.log")})
    out = tmp_path / "out"
    assert main(["ci-failure", "--repo", REPO, "--run-id", str(run["id"]), "--out", str(out), "--comment", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    [finding] = printed["findings"]
    assert finding["is_pt2"] and finding["category"] in ("graph_break", "dynamic_shapes", "export_failure")
    assert json.loads((out / "ci_report.json").read_text())["run_id"] == run["id"]
    assert (out / "comment.md").read_text().startswith("<!-- pt2-triage:ci-failure -->")
    assert len(fake.bot_comments_on(7)) == 1 and printed["comments"][0]["target"] == "pr"


def test_ci_failure_stays_quiet_when_nothing_is_pt2(tmp_path, fake, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    run = webhook_payload("workflow_run_completed_ci_failure")["workflow_run"]
    fake.add_run(run, jobs=[{"id": 6, "run_id": run["id"], "name": "lint", "conclusion": "failure",
                             "html_url": "https://github.com/x", "steps": []}],
                 logs={6: b"ruff check .\nE501 line too long\nError: Process completed with exit code 1.\n"})
    assert main(["ci-failure", "--repo", REPO, "--run-id", str(run["id"]), "--comment"]) == 0
    assert fake.comments == {}
    assert "lint: not_pt2" in capsys.readouterr().out


def test_worker_refuses_a_nice_value_outside_what_the_os_allows(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PT2_TRIAGE_WEBHOOK_SECRET", "s")
    monkeypatch.setenv("PT2_TRIAGE_DB", str(tmp_path / "app.sqlite3"))
    assert main(["worker", "--nice", "20"]) == 2
    assert "--nice must be between 0 and 19" in capsys.readouterr().err


def test_serve_has_waitress_refuse_an_oversized_body_before_reading_it(app):
    """`pt2-triage serve`'s waitress, on a real socket: 200 MB announced, a few KB sent, 413 back."""
    server = waitress.create_server(app, host="127.0.0.1", port=0, **waitress_options(threads=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", server.effective_port), timeout=10) as client:
            client.sendall(b"POST /webhook HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                           b"X-GitHub-Event: issues\r\nX-GitHub-Delivery: huge\r\n"
                           b"Content-Length: %d\r\n\r\n" % (200 << 20) + b"{" * 65536)
            answer = client.recv(65536)
    finally:
        # closed by its own loop's thread: closing its sockets from this one raced the select() that
        # thread was in (an EBADF there, reported as an unhandled thread exception)
        server.trigger.pull_trigger(server.close)
        thread.join(10)
        server.task_dispatcher.shutdown()
    assert not thread.is_alive()
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert app.extensions["pt2_triage"].services.store.job_counts() == {}


def test_serve_runs_waitress_with_those_options(monkeypatch, tmp_path):
    served = {}
    monkeypatch.setattr(waitress, "serve", lambda app, **options: served.update(options))
    monkeypatch.setenv("PT2_TRIAGE_WEBHOOK_SECRET", "s")
    monkeypatch.setenv("PT2_TRIAGE_DB", str(tmp_path / "app.sqlite3"))
    monkeypatch.setenv("PT2_TRIAGE_WORKERS", "0")
    assert main(["serve", "--port", "0", "--threads", "3"]) == 0
    assert served == {"host": "127.0.0.1", "port": 0, **waitress_options(threads=3)}
    assert served["max_request_body_size"] == (25 << 20) + 1
