"""An in-memory GitHub for one repository, answering REST calls the way GitHub does.

`FakeGitHub.handle(method, url, body)` is the whole fake; `install(responses_mock)` serves it to
`requests` in tests, and benchmarks/webhook_load.py serves it over HTTP. Every call is recorded
(`calls`) so the contract check can hold each one against GitHub's OpenAPI description.
Failures are injected with `fail(...)` (502s, secondary rate limits with Retry-After, ...).
"""
from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

API = "https://api.github.com"
STORAGE = "https://pipelines.actions.githubusercontent.com"
BOT = {"login": "pt2-triage[bot]", "id": 999, "type": "Bot"}


@dataclass
class Failure:
    method: str
    pattern: re.Pattern
    status: int
    headers: dict
    body: dict
    times: int
    after_doing_it: bool = False  # the request takes effect, then the answer is the failure


@dataclass
class FakeGitHub:
    repo: str = "octo-org/octo-repo"
    api: str = API
    default_branch: str = "main"
    files: dict = field(default_factory=dict)  # (branch, path) -> text
    branches: dict = field(default_factory=lambda: {"main": "1" * 40})
    comments: dict = field(default_factory=dict)  # id -> {issue, body, user}
    commit_comments: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)  # issue -> [names]
    reactions: list = field(default_factory=list)
    permissions: dict = field(default_factory=dict)  # login -> role
    pulls: list = field(default_factory=list)
    commits: list = field(default_factory=list)
    dispatches: list = field(default_factory=list)
    runs: dict = field(default_factory=dict)  # run id -> run json
    jobs: dict = field(default_factory=dict)  # run id -> [job json]
    logs: dict = field(default_factory=dict)  # job id -> bytes
    artifacts: dict = field(default_factory=dict)  # run id -> [artifact json]
    blobs: dict = field(default_factory=dict)  # artifact id -> zip bytes
    commit_pulls: dict = field(default_factory=dict)  # sha -> [numbers]
    calls: list = field(default_factory=list)  # (method, url, body bytes, status)
    tokens_issued: int = 0
    failures: list = field(default_factory=list)

    def __post_init__(self):
        self._ids = itertools.count(10_000)
        self._lock = threading.Lock()

    # -- test helpers

    def fail(self, method: str, path_regex: str, status: int, headers: dict | None = None, body: dict | None = None,
             times: int = 1, after_doing_it: bool = False) -> None:
        self.failures.append(Failure(method, re.compile(path_regex), status, headers or {},
                                     body or {"message": "Server Error"}, times, after_doing_it))

    def comments_on(self, number: int) -> list[dict]:
        return [c for c in self.comments.values() if c["issue"] == number]

    def bot_comments_on(self, number: int) -> list[dict]:
        return [c for c in self.comments_on(number) if c["user"]["type"] == "Bot"]

    def add_run(self, run: dict, jobs: list[dict] = (), logs: dict | None = None, artifacts: dict | None = None) -> None:
        self.runs[run["id"]] = run
        self.jobs[run["id"]] = list(jobs)
        self.logs.update(logs or {})
        self.artifacts[run["id"]] = []
        for name, data in (artifacts or {}).items():
            artifact_id = next(self._ids)
            self.artifacts[run["id"]].append({"id": artifact_id, "node_id": f"A_{artifact_id}", "name": name,
                                              "size_in_bytes": len(data), "expired": False,
                                              "url": f"{self.api}/repos/{self.repo}/actions/artifacts/{artifact_id}",
                                              "archive_download_url": f"{self.api}/repos/{self.repo}/actions/artifacts/{artifact_id}/zip",
                                              "created_at": "2026-11-20T10:11:12Z", "expires_at": "2026-12-20T10:11:12Z",
                                              "updated_at": "2026-11-20T10:11:12Z"})
            self.blobs[artifact_id] = data

    # -- transport adapters

    def install(self, rsps) -> None:
        """Serve this fake through a `responses.RequestsMock`."""
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            for base in (self.api, STORAGE):
                rsps.add_callback(method, re.compile(re.escape(base) + r"(?::443)?/.*"), callback=self._callback)

    def _callback(self, request):
        status, headers, body = self.handle(request.method, request.url, request.body)
        return status, headers, body

    # -- the fake

    def handle(self, method: str, url: str, body) -> tuple[int, dict, bytes]:
        with self._lock:
            status, headers, payload = self._route(method, url, body)
            self.calls.append((method, url, body if isinstance(body, (bytes, type(None))) else body.encode(), status))
        if isinstance(payload, (bytes, bytearray)):
            return status, headers, bytes(payload)
        data = b"" if payload is None else json.dumps(payload).encode()
        return status, {**headers, "Content-Type": "application/json"}, data

    def _route(self, method: str, url: str, body):
        parts = urlsplit(url)
        path = parts.path
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        payload = json.loads(body) if body else None
        if parts.netloc == urlsplit(STORAGE).netloc:
            return self._storage(path)
        for failure in self.failures:
            if failure.times and failure.method == method and failure.pattern.search(path):
                failure.times -= 1
                if failure.after_doing_it:
                    self._serve(method, path, query, payload)
                return failure.status, failure.headers, failure.body
        return self._serve(method, path, query, payload)

    def _serve(self, method: str, path: str, query: dict, payload):
        repo_prefix = f"/repos/{self.repo}"
        if method == "POST" and re.fullmatch(r"/app/installations/\d+/access_tokens", path):
            self.tokens_issued += 1
            return 201, {}, {"token": f"ghs_fake{self.tokens_issued}", "expires_at": "2099-01-01T00:00:00Z",
                             "permissions": {"issues": "write"}, "repository_selection": "all"}
        if not path.startswith(repo_prefix):
            return 404, {}, {"message": "Not Found"}
        rest = path[len(repo_prefix):]
        for route_method, pattern, handler in ROUTES:
            if route_method == method and (match := re.fullmatch(pattern, rest)):
                return handler(self, match, query, payload)
        return 404, {}, {"message": f"Not Found (fake has no route for {method} {rest})"}

    def _storage(self, path: str):
        if match := re.fullmatch(r"/logs/(\d+)", path):
            return 200, {"Content-Type": "text/plain"}, self.logs[int(match.group(1))]
        if match := re.fullmatch(r"/artifacts/(\d+)", path):
            return 200, {"Content-Type": "application/zip"}, self.blobs[int(match.group(1))]
        return 404, {}, {"message": "Not Found"}

    # -- routes

    def _repo(self, match, query, payload):
        return 200, {}, {"id": 101, "name": self.repo.split("/")[1], "full_name": self.repo,
                         "default_branch": self.default_branch, "private": False}

    def _get_content(self, match, query, payload):
        ref = query.get("ref", self.default_branch)
        text = self.files.get((ref, match.group(1)))
        if text is None:
            return 404, {}, {"message": "Not Found"}
        return 200, {}, _content(match.group(1), text)

    def _put_content(self, match, query, payload):
        branch, path = payload["branch"], match.group(1)
        existing = self.files.get((branch, path))
        if existing is not None and payload.get("sha") != _sha(existing):
            return 409, {}, {"message": "sha does not match"}
        self.files[(branch, path)] = base64.b64decode(payload["content"]).decode()
        commit_sha = hashlib.sha1(f"{branch}{path}{len(self.commits)}".encode()).hexdigest()
        self.commits.append({"branch": branch, "path": path, "message": payload["message"], "sha": commit_sha})
        self.branches[branch] = commit_sha
        return (200 if existing is not None else 201), {}, {"content": _content(path, self.files[(branch, path)]),
                                                            "commit": {"sha": commit_sha, "message": payload["message"]}}

    def _list_comments(self, match, query, payload):
        number = int(match.group(1))
        return 200, {}, [self._comment_json(cid, c) for cid, c in self.comments.items() if c["issue"] == number]

    def _post_comment(self, match, query, payload):
        comment_id = next(self._ids)
        self.comments[comment_id] = {"issue": int(match.group(1)), "body": payload["body"], "user": BOT}
        return 201, {}, self._comment_json(comment_id, self.comments[comment_id])

    def _patch_comment(self, match, query, payload):
        comment_id = int(match.group(1))
        if comment_id not in self.comments:
            return 404, {}, {"message": "Not Found"}
        self.comments[comment_id]["body"] = payload["body"]
        return 200, {}, self._comment_json(comment_id, self.comments[comment_id])

    def _comment_json(self, comment_id: int, comment: dict) -> dict:
        return {"id": comment_id, "node_id": f"IC_{comment_id}", "body": comment["body"], "user": comment["user"],
                "html_url": f"https://github.com/{self.repo}/issues/{comment['issue']}#issuecomment-{comment_id}",
                "url": f"{self.api}/repos/{self.repo}/issues/comments/{comment_id}"}

    def _add_labels(self, match, query, payload):
        names = self.labels.setdefault(int(match.group(1)), [])
        names.extend(n for n in payload["labels"] if n not in names)
        return 200, {}, [{"id": i, "name": n, "color": "ededed", "default": False} for i, n in enumerate(names)]

    def _react(self, match, query, payload):
        self.reactions.append((int(match.group(1)), payload["content"]))
        return 201, {}, {"id": next(self._ids), "content": payload["content"], "user": BOT,
                         "created_at": "2026-11-20T10:11:12Z"}

    def _permission(self, match, query, payload):
        login = match.group(1)
        if login not in self.permissions:
            return 404, {}, {"message": "Not Found"}
        role = self.permissions[login]
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        return 200, {}, {"permission": legacy, "role_name": role, "user": {"login": login}}

    def _run(self, match, query, payload):
        run = self.runs.get(int(match.group(1)))
        return (200, {}, run) if run else (404, {}, {"message": "Not Found"})

    def _run_jobs(self, match, query, payload):
        jobs = self.jobs.get(int(match.group(1)), [])
        return 200, {}, {"total_count": len(jobs), "jobs": jobs}

    def _job_logs(self, match, query, payload):
        return 302, {"Location": f"{STORAGE}/logs/{match.group(1)}"}, None

    def _run_artifacts(self, match, query, payload):
        artifacts = self.artifacts.get(int(match.group(1)), [])
        return 200, {}, {"total_count": len(artifacts), "artifacts": artifacts}

    def _artifact_zip(self, match, query, payload):
        return 302, {"Location": f"{STORAGE}/artifacts/{match.group(1)}"}, None

    def _dispatch(self, match, query, payload):
        self.dispatches.append({"workflow": match.group(1), **payload})
        return 204, {}, None

    def _get_ref(self, match, query, payload):
        sha = self.branches.get(match.group(1))
        if sha is None:
            return 404, {}, {"message": "Not Found"}
        return 200, {}, {"ref": f"refs/heads/{match.group(1)}", "object": {"sha": sha, "type": "commit"}}

    def _create_ref(self, match, query, payload):
        branch = payload["ref"].removeprefix("refs/heads/")
        if branch in self.branches:
            return 422, {}, {"message": "Reference already exists"}
        self.branches[branch] = payload["sha"]
        return 201, {}, {"ref": payload["ref"], "object": {"sha": payload["sha"], "type": "commit"}}

    def _list_pulls(self, match, query, payload):
        head = query.get("head", "")
        state = query.get("state", "open")
        found = [p for p in self.pulls if f"{self.repo.split('/')[0]}:{p['head']}" == head
                 and (state == "all" or p["state"] == state)]
        return 200, {}, [self._pull_json(p) for p in found]

    def _create_pull(self, match, query, payload):
        if any(p["head"] == payload["head"] and p["state"] == "open" for p in self.pulls):
            return 422, {}, {"message": "A pull request already exists"}
        pull = {"number": 100 + len(self.pulls), "head": payload["head"], "base": payload["base"],
                "title": payload["title"], "body": payload["body"], "draft": payload.get("draft", False), "state": "open"}
        self.pulls.append(pull)
        return 201, {}, self._pull_json(pull)

    def _update_pull(self, match, query, payload):
        pull = next(p for p in self.pulls if p["number"] == int(match.group(1)))
        pull.update({k: payload[k] for k in ("title", "body") if k in payload})
        return 200, {}, self._pull_json(pull)

    def _pull_json(self, pull: dict) -> dict:
        return {"number": pull["number"], "state": pull["state"], "draft": pull["draft"], "title": pull["title"],
                "body": pull["body"], "html_url": f"https://github.com/{self.repo}/pull/{pull['number']}",
                "head": {"ref": pull["head"]}, "base": {"ref": pull["base"]}}

    def _commit_pulls(self, match, query, payload):
        return 200, {}, [{"number": n, "state": "open"} for n in self.commit_pulls.get(match.group(1), [])]

    def _list_commit_comments(self, match, query, payload):
        return 200, {}, [{"id": cid, **c} for cid, c in self.commit_comments.items() if c["sha"] == match.group(1)]

    def _post_commit_comment(self, match, query, payload):
        comment_id = next(self._ids)
        self.commit_comments[comment_id] = {"sha": match.group(1), "body": payload["body"], "user": BOT,
                                            "html_url": f"https://github.com/{self.repo}/commit/{match.group(1)}#commitcomment-{comment_id}"}
        return 201, {}, {"id": comment_id, **self.commit_comments[comment_id]}

    def _patch_commit_comment(self, match, query, payload):
        comment = self.commit_comments.get(int(match.group(1)))
        if comment is None:
            return 404, {}, {"message": "Not Found"}
        comment["body"] = payload["body"]
        return 200, {}, {"id": int(match.group(1)), **comment}


ROUTES = (
    ("GET", r"", FakeGitHub._repo),
    ("GET", r"/contents/(.+)", FakeGitHub._get_content),
    ("PUT", r"/contents/(.+)", FakeGitHub._put_content),
    ("GET", r"/issues/(\d+)/comments", FakeGitHub._list_comments),
    ("POST", r"/issues/(\d+)/comments", FakeGitHub._post_comment),
    ("PATCH", r"/issues/comments/(\d+)", FakeGitHub._patch_comment),
    ("POST", r"/issues/(\d+)/labels", FakeGitHub._add_labels),
    ("POST", r"/issues/comments/(\d+)/reactions", FakeGitHub._react),
    ("GET", r"/collaborators/([^/]+)/permission", FakeGitHub._permission),
    ("GET", r"/actions/runs/(\d+)", FakeGitHub._run),
    ("GET", r"/actions/runs/(\d+)/jobs", FakeGitHub._run_jobs),
    ("GET", r"/actions/jobs/(\d+)/logs", FakeGitHub._job_logs),
    ("GET", r"/actions/runs/(\d+)/artifacts", FakeGitHub._run_artifacts),
    ("GET", r"/actions/artifacts/(\d+)/zip", FakeGitHub._artifact_zip),
    ("POST", r"/actions/workflows/([^/]+)/dispatches", FakeGitHub._dispatch),
    ("GET", r"/git/ref/heads/(.+)", FakeGitHub._get_ref),
    ("POST", r"/git/refs", FakeGitHub._create_ref),
    ("GET", r"/pulls", FakeGitHub._list_pulls),
    ("POST", r"/pulls", FakeGitHub._create_pull),
    ("PATCH", r"/pulls/(\d+)", FakeGitHub._update_pull),
    ("GET", r"/commits/([0-9a-f]+)/pulls", FakeGitHub._commit_pulls),
    ("GET", r"/commits/([0-9a-f]+)/comments", FakeGitHub._list_commit_comments),
    ("POST", r"/commits/([0-9a-f]+)/comments", FakeGitHub._post_commit_comment),
    ("PATCH", r"/comments/(\d+)", FakeGitHub._patch_commit_comment),
)


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def _content(path: str, text: str) -> dict:
    return {"type": "file", "encoding": "base64", "name": path.rsplit("/", 1)[-1], "path": path, "sha": _sha(text),
            "size": len(text), "content": base64.b64encode(text.encode()).decode()}
