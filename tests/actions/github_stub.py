"""A small, stateful GitHub REST API on loopback, for running the action's publish and ci-failure
modes end to end: the action starts the CLI in a subprocess, so in-process mocks (`responses`)
cannot see its requests; this server can, and records every one.

It keeps just enough state to be honest about idempotency (comments, labels, refs, files, pulls)
and answers with the fields GitHub documents. `Request.template` is the OpenAPI path the request
matched, so a test can check each one against GitHub's published description (@octokit/openapi).
"""
from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"


@dataclass
class Request:
    method: str
    path: str
    template: str | None  # the OpenAPI path template that matched, None for an unknown route
    query: dict
    body: object
    raw_body: bytes
    authorization: str | None
    status: int = 0


@dataclass
class State:
    default_branch: str = "main"
    head_sha: str = "a" * 40
    comments: dict = field(default_factory=dict)  # issue number -> [comment]
    labels: dict = field(default_factory=dict)  # issue number -> [name]
    refs: dict = field(default_factory=dict)  # branch -> sha
    files: dict = field(default_factory=dict)  # (branch, path) -> text
    pulls: list = field(default_factory=list)
    runs: dict = field(default_factory=dict)  # run id -> run JSON
    jobs: dict = field(default_factory=dict)  # run id -> [job JSON]
    logs: dict = field(default_factory=dict)  # job id -> bytes
    next_id: int = 1000


class GitHubStub:
    """`with GitHubStub() as gh:` serves on http://127.0.0.1:PORT; `gh.requests` lists what came in."""

    def __init__(self, repo: str = "octo-org/octo-repo"):
        self.repo, self.state, self.requests = repo, State(), []
        self.state.refs[self.state.default_branch] = self.state.head_sha
        self.lock = threading.Lock()
        self.routes = [
            ("GET", REPO + r"$", "/repos/{owner}/{repo}", self.get_repo),
            ("GET", REPO + r"/issues/(?P<number>\d+)/comments$", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
             self.list_comments),
            ("POST", REPO + r"/issues/(?P<number>\d+)/comments$", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
             self.create_comment),
            ("PATCH", REPO + r"/issues/comments/(?P<id>\d+)$", "/repos/{owner}/{repo}/issues/comments/{comment_id}",
             self.update_comment),
            ("POST", REPO + r"/issues/(?P<number>\d+)/labels$", "/repos/{owner}/{repo}/issues/{issue_number}/labels",
             self.add_labels),
            ("GET", REPO + r"/git/ref/heads/(?P<branch>.+)$", "/repos/{owner}/{repo}/git/ref/{ref}", self.get_ref),
            ("POST", REPO + r"/git/refs$", "/repos/{owner}/{repo}/git/refs", self.create_ref),
            ("GET", REPO + r"/contents/(?P<path>.+)$", "/repos/{owner}/{repo}/contents/{path}", self.get_contents),
            ("PUT", REPO + r"/contents/(?P<path>.+)$", "/repos/{owner}/{repo}/contents/{path}", self.put_contents),
            ("GET", REPO + r"/pulls$", "/repos/{owner}/{repo}/pulls", self.list_pulls),
            ("POST", REPO + r"/pulls$", "/repos/{owner}/{repo}/pulls", self.create_pull),
            ("PATCH", REPO + r"/pulls/(?P<number>\d+)$", "/repos/{owner}/{repo}/pulls/{pull_number}", self.update_pull),
            ("GET", REPO + r"/actions/runs/(?P<run>\d+)$", "/repos/{owner}/{repo}/actions/runs/{run_id}", self.get_run),
            ("GET", REPO + r"/actions/runs/(?P<run>\d+)/jobs$", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
             self.list_jobs),
            ("GET", REPO + r"/actions/jobs/(?P<job>\d+)/logs$", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs",
             self.job_logs),
            ("GET", REPO + r"/commits/(?P<sha>[0-9a-f]+)/pulls$", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls",
             self.commit_pulls),
            ("GET", r"/_storage/logs/(?P<job>\d+)$", None, self.storage_log),
        ]

    # -- server

    def __enter__(self) -> "GitHubStub":
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do(self):
                stub.handle(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, http: BaseHTTPRequestHandler) -> None:
        split = urlsplit(http.path)
        length = int(http.headers.get("Content-Length") or 0)
        raw = http.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        for method, pattern, template, handler in self.routes:
            match = re.match(pattern, split.path)
            if method == http.command and match:
                break
        else:
            match, template, handler = None, None, None
        with self.lock:
            request = Request(http.command, split.path, template, parse_qs(split.query), body, raw,
                              http.headers.get("Authorization"))
            self.requests.append(request)
            status, payload, headers = handler(match, body) if handler else (404, {"message": "Not Found"}, {})
            request.status = status
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        http.send_response(status)
        http.send_header("Content-Type", "text/plain" if isinstance(payload, bytes) else "application/json; charset=utf-8")
        http.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            http.send_header(key, value)
        http.end_headers()
        http.wfile.write(data)

    # -- helpers

    def new_id(self) -> int:
        self.state.next_id += 1
        return self.state.next_id

    def html(self, suffix: str) -> str:
        return f"https://github.com/{self.repo}/{suffix}"

    def add_failed_run(self, run_id: int, jobs: dict[str, bytes], pull_number: int = 7) -> None:
        """A failed `CI` run of a pull request with one failed job per (name -> log)."""
        self.state.runs[run_id] = {
            "id": run_id, "name": "CI", "path": ".github/workflows/ci.yml", "event": "pull_request",
            "status": "completed", "conclusion": "failure", "head_sha": self.state.head_sha, "head_branch": "feature",
            "html_url": self.html(f"actions/runs/{run_id}"), "display_title": "Speed up the model",
            "pull_requests": [{"number": pull_number, "id": 1, "url": f"https://api.github.com/repos/{self.repo}/pulls/{pull_number}",
                               "head": {"ref": "feature", "sha": self.state.head_sha, "repo": {"id": 1, "url": "", "name": "vision"}},
                               "base": {"ref": "main", "sha": "b" * 40, "repo": {"id": 1, "url": "", "name": "vision"}}}]}
        self.state.jobs[run_id] = []
        for name, log in jobs.items():
            job_id = self.new_id()
            self.state.jobs[run_id].append({
                "id": job_id, "run_id": run_id, "name": name, "status": "completed", "conclusion": "failure",
                "html_url": self.html(f"actions/runs/{run_id}/job/{job_id}"),
                "steps": [{"name": "Run tests", "status": "completed", "conclusion": "failure", "number": 3}]})
            self.state.logs[job_id] = log

    # -- routes: (status, payload, headers)

    def get_repo(self, match, body):
        return 200, {"id": 1, "name": match["repo"], "full_name": self.repo, "default_branch": self.state.default_branch}, {}

    def comment_json(self, comment):
        return {**comment, "html_url": self.html(f"issues/{comment['issue']}#issuecomment-{comment['id']}")}

    def list_comments(self, match, body):
        return 200, [self.comment_json(c) for c in self.state.comments.get(int(match["number"]), [])], {}

    def create_comment(self, match, body):
        number = int(match["number"])
        comment = {"id": self.new_id(), "issue": number, "body": body["body"],
                   "user": {"login": "github-actions[bot]", "type": "Bot"}}
        self.state.comments.setdefault(number, []).append(comment)
        return 201, self.comment_json(comment), {}

    def update_comment(self, match, body):
        for comments in self.state.comments.values():
            for comment in comments:
                if comment["id"] == int(match["id"]):
                    comment["body"] = body["body"]
                    return 200, self.comment_json(comment), {}
        return 404, {"message": "Not Found"}, {}

    def add_labels(self, match, body):
        labels = self.state.labels.setdefault(int(match["number"]), [])
        labels.extend(name for name in body["labels"] if name not in labels)
        return 200, [{"id": i, "name": name} for i, name in enumerate(labels)], {}

    def get_ref(self, match, body):
        branch = unquote(match["branch"])
        if branch not in self.state.refs:
            return 404, {"message": "Not Found"}, {}
        return 200, {"ref": f"refs/heads/{branch}", "object": {"sha": self.state.refs[branch], "type": "commit"}}, {}

    def create_ref(self, match, body):
        branch = body["ref"].removeprefix("refs/heads/")
        if branch in self.state.refs:
            return 422, {"message": "Reference already exists"}, {}
        self.state.refs[branch] = body["sha"]
        return 201, {"ref": body["ref"], "object": {"sha": body["sha"], "type": "commit"}}, {}

    def get_contents(self, match, body):
        return 404, {"message": "Not Found"}, {}  # every suggested test file is new in this repo

    def put_contents(self, match, body):
        path = unquote(match["path"])
        text = base64.b64decode(body["content"]).decode()
        self.state.files[(body["branch"], path)] = text
        sha = f"{self.new_id():040x}"
        self.state.refs[body["branch"]] = sha
        return 201, {"content": {"path": path, "sha": sha}, "commit": {"sha": sha}}, {}

    def pull_json(self, pull):
        return {**pull, "html_url": self.html(f"pull/{pull['number']}")}

    def list_pulls(self, match, body):
        return 200, [self.pull_json(p) for p in self.state.pulls], {}

    def create_pull(self, match, body):
        pull = {"number": self.new_id(), "state": "open", "draft": body.get("draft", False), "title": body["title"],
                "body": body.get("body"), "head": {"ref": body["head"]}, "base": {"ref": body["base"]}}
        self.state.pulls.append(pull)
        return 201, self.pull_json(pull), {}

    def update_pull(self, match, body):
        pull = next(p for p in self.state.pulls if p["number"] == int(match["number"]))
        pull.update(body)
        return 200, self.pull_json(pull), {}

    def get_run(self, match, body):
        run = self.state.runs.get(int(match["run"]))
        return (200, run, {}) if run else (404, {"message": "Not Found"}, {})

    def list_jobs(self, match, body):
        jobs = self.state.jobs.get(int(match["run"]), [])
        return 200, {"total_count": len(jobs), "jobs": jobs}, {}

    def job_logs(self, match, body):
        """GitHub answers 302 with a short-lived storage URL; the client must follow it."""
        return 302, b"", {"Location": f"{self.url}/_storage/logs/{match['job']}"}

    def storage_log(self, match, body):
        return 200, self.state.logs[int(match["job"])], {}

    def commit_pulls(self, match, body):
        return 200, [], {}
