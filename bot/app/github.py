"""All GitHub I/O: the one module that talks to GitHub's REST API.

Authentication uses PyGithub: `Auth.AppAuth` signs the App's JWT and `GithubIntegration` exchanges
it for an installation token, cached until shortly before it expires. Every REST call then goes
through `GitHub.request`, so each one shares one retry policy (`retry_delay`, a pure function):
backoff on 5xx, `Retry-After` on secondary rate limits, `x-ratelimit-reset` on the primary one.
The clock and the sleeper are injected, so tests never wait and a worker never blocks longer than
`RetryPolicy.max_wait_s` (past that the job is re-queued for later instead).

Writes are idempotent where GitHub lets them be: the bot's comment is found by its hidden marker
and edited, never posted twice; the draft PR is found by its branch; a file is committed only
when its content changed. Creates that a 5xx may or may not have performed are never blindly
re-sent: the caller looks again first.
"""
from __future__ import annotations

import base64
import logging
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterator, Protocol
from urllib.parse import quote

import requests

log = logging.getLogger("pt2_triage.github")

API_VERSION = "2022-11-28"
USER_AGENT = "pt2-triage"
REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SERVER_ERRORS = frozenset({500, 502, 503, 504})
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
TOKEN_REFRESH_MARGIN_S = 300  # refresh an installation token 5 minutes before GitHub expires it
MAX_LOG_BYTES = 64 << 20  # a job log larger than this keeps its tail: the error is at the end
MAX_ARTIFACT_BYTES = 256 << 20
MAX_PAGES = 50


def is_marked_bot_comment(item: dict, marker: str) -> bool:
    """Ours: it carries the marker and a bot account wrote it (a pasted marker does not make it ours)."""
    return marker in (item.get("body") or "") and (item.get("user") or {}).get("type") == "Bot"


class GitHubError(Exception):
    """A request GitHub refused or could not serve, after retries."""

    def __init__(self, method: str, path: str, status: int | None, message: str):
        super().__init__(f"{method} {path}: {status or 'no response'} {message}".strip())
        self.method, self.path, self.status, self.message = method, path, status, message

    @property
    def transient(self) -> bool:
        """Worth trying again later (server trouble, rate limits, network), not a refusal."""
        return self.status is None or self.status in SERVER_ERRORS or self.status == 429


class RateLimited(GitHubError):
    """GitHub asks us to wait longer than a worker should block; `retry_at` is when to try again."""

    def __init__(self, method: str, path: str, status: int, retry_at: float):
        super().__init__(method, path, status, f"rate limited until {retry_at:.0f}")
        self.retry_at = retry_at

    @property
    def transient(self) -> bool:
        return True


class NotFound(GitHubError):
    pass


def parse_repo(full_name: str) -> str:
    """`owner/name`, checked, so it can be put into a URL path as is."""
    if not REPO_RE.match(full_name or ""):
        raise ValueError(f"{full_name!r} is not a repository name of the form OWNER/NAME")
    return full_name


# ---------------------------------------------------------------- retry policy (pure)

@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    secondary_limit_wait_s: float = 60.0  # GitHub: "wait at least one minute" when no header says more
    max_wait_s: float = 120.0  # longer waits become RateLimited and the job is re-queued


def retry_delay(status: int, headers: dict, body: str, attempt: int, now: float,
                policy: RetryPolicy = RetryPolicy()) -> float | None:
    """Seconds to wait before retrying a response, or None when it must not be retried.

    `attempt` counts from 0. The order follows GitHub's rate-limit documentation: `Retry-After`
    first, then an exhausted primary limit's reset time, then the secondary-limit minute.
    """
    if status in SERVER_ERRORS:
        return min(policy.backoff_s * (2 ** attempt), policy.max_backoff_s)
    if status not in (403, 429):
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if (retry_after := lowered.get("retry-after")) is not None:
        try:
            return max(float(retry_after), 0.0)
        except ValueError:
            return policy.secondary_limit_wait_s
    if lowered.get("x-ratelimit-remaining") == "0" and (reset := lowered.get("x-ratelimit-reset")):
        try:
            return max(float(reset) - now, 0.0) + 1.0
        except ValueError:
            return policy.secondary_limit_wait_s
    if status == 429 or "rate limit" in body.lower():
        return policy.secondary_limit_wait_s * (2 ** min(attempt, 3))
    return None  # a real 403: permission denied


# ---------------------------------------------------------------- authentication

class TokenSource(Protocol):
    def token(self) -> str: ...

    def invalidate(self) -> None: ...


@dataclass
class StaticToken:
    """A token given from outside: GITHUB_TOKEN in an Actions job, or a PAT for local use."""

    value: str

    def token(self) -> str:
        return self.value

    def invalidate(self) -> None:
        pass


class AppCredentials:
    """The App's identity. Hands out per-installation token sources that share one cache."""

    def __init__(self, app_id: str, private_key: str, api_url: str, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, policy: RetryPolicy = RetryPolicy()):
        from github import Auth, GithubIntegration

        self._integration = GithubIntegration(auth=Auth.AppAuth(int(app_id), private_key), base_url=api_url,
                                              seconds_between_requests=None, seconds_between_writes=None,
                                              retry=None, user_agent=USER_AGENT)
        self._clock, self._sleep, self._policy = clock, sleep, policy
        self._cache: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def installation(self, installation_id: int) -> "InstallationToken":
        return InstallationToken(self, int(installation_id))

    def token_for(self, installation_id: int) -> str:
        with self._lock:
            cached = self._cache.get(installation_id)
            if cached and cached[1] - self._clock() > TOKEN_REFRESH_MARGIN_S:
                return cached[0]
        token, expires_at = self._exchange(installation_id)
        with self._lock:
            self._cache[installation_id] = (token, expires_at)
        return token

    def forget(self, installation_id: int) -> None:
        with self._lock:
            self._cache.pop(installation_id, None)

    def _exchange(self, installation_id: int) -> tuple[str, float]:
        """POST /app/installations/{id}/access_tokens through PyGithub, under our retry policy."""
        from github import GithubException

        path = f"/app/installations/{installation_id}/access_tokens"
        for attempt in range(self._policy.max_attempts):
            try:
                grant = self._integration.get_access_token(installation_id)
            except GithubException as exc:
                body = str(exc.data) if exc.data is not None else ""
                delay = retry_delay(exc.status, dict(exc.headers or {}), body, attempt, self._clock(), self._policy)
                if delay is None or attempt == self._policy.max_attempts - 1:
                    raise GitHubError("POST", path, exc.status, body[:200]) from None
                _wait(delay, "POST", path, exc.status, self._clock, self._sleep, self._policy)
                continue
            expires = grant.expires_at
            expires_at = expires.replace(tzinfo=expires.tzinfo or timezone.utc).timestamp() if expires else self._clock() + 3600
            return grant.token, expires_at
        raise AssertionError("unreachable")


@dataclass
class InstallationToken:
    credentials: AppCredentials
    installation_id: int

    def token(self) -> str:
        return self.credentials.token_for(self.installation_id)

    def invalidate(self) -> None:
        self.credentials.forget(self.installation_id)


def _wait(delay: float, method: str, path: str, status: int, clock, sleep, policy: RetryPolicy) -> None:
    if delay > policy.max_wait_s:
        raise RateLimited(method, path, status, clock() + delay)
    log.warning("github %s %s answered %s; retrying in %.1fs", method, path, status, delay)
    sleep(delay)


# ---------------------------------------------------------------- records

@dataclass(frozen=True)
class Comment:
    id: int
    html_url: str
    body: str = ""


@dataclass(frozen=True)
class Job:
    id: int
    name: str
    conclusion: str | None
    html_url: str
    run_id: int
    failed_steps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    size_in_bytes: int
    expired: bool


@dataclass(frozen=True)
class PullRequest:
    number: int
    html_url: str
    state: str
    draft: bool = False
    created: bool = False  # opened by this call (not found)


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    name: str
    path: str  # .github/workflows/<file>.yml
    event: str
    status: str
    conclusion: str | None
    head_sha: str
    head_branch: str | None
    html_url: str
    pull_requests: tuple[int, ...] = ()
    display_title: str = ""

    @property
    def workflow_file(self) -> str:
        return self.path.rsplit("/", 1)[-1].split("@", 1)[0]

    @classmethod
    def from_api(cls, data: dict) -> "WorkflowRun":
        return cls(id=data["id"], name=data.get("name") or "", path=data.get("path") or "", event=data.get("event") or "",
                   status=data.get("status") or "", conclusion=data.get("conclusion"), head_sha=data["head_sha"],
                   head_branch=data.get("head_branch"), html_url=data.get("html_url") or "",
                   pull_requests=tuple(pr["number"] for pr in data.get("pull_requests") or ()),
                   display_title=data.get("display_title") or "")


@dataclass(frozen=True)
class Download:
    content: bytes
    dropped_bytes: int = 0  # bytes cut from the front because the whole was over the cap


# ---------------------------------------------------------------- the client

@dataclass
class GitHub:
    """A REST client for one token (one installation, or one Actions job)."""

    api_url: str
    auth: TokenSource
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    session: requests.Session = field(default_factory=requests.Session)
    timeout_s: float = 30.0

    def __post_init__(self):
        self.api_url = self.api_url.rstrip("/")

    # -- transport

    def request(self, method: str, path: str, *, params: dict | None = None, json: object = None,
                accept: str = "application/vnd.github+json", stream: bool = False,
                retry_server_errors: bool = True) -> requests.Response:
        """One REST call with the retry policy. 2xx and 3xx-followed responses return; the rest raise.

        `retry_server_errors=False` is for creates that a 5xx may have performed anyway: the caller
        looks for the result before trying again.
        """
        url = path if path.startswith("http") else self.api_url + path
        refreshed = False
        for attempt in range(self.policy.max_attempts):
            headers = {"Accept": accept, "Authorization": f"Bearer {self.auth.token()}",
                       "X-GitHub-Api-Version": API_VERSION, "User-Agent": USER_AGENT}
            try:
                response = self.session.request(method, url, params=params, json=json, headers=headers,
                                                timeout=self.timeout_s, stream=stream)
            except requests.RequestException as exc:
                if attempt == self.policy.max_attempts - 1 or not retry_server_errors:
                    raise GitHubError(method, path, None, str(exc)) from None
                _wait(min(self.policy.backoff_s * 2 ** attempt, self.policy.max_backoff_s),
                      method, path, 0, self.clock, self.sleep, self.policy)
                continue
            if response.status_code < 400:
                return response
            body = response.text if not stream else ""
            if response.status_code == 401 and not refreshed:  # an installation token revoked early
                self.auth.invalidate()
                refreshed = True
                continue
            delay = retry_delay(response.status_code, dict(response.headers), body, attempt, self.clock(), self.policy)
            if response.status_code in SERVER_ERRORS and not retry_server_errors:
                delay = None
            if delay is None or attempt == self.policy.max_attempts - 1:
                error = NotFound if response.status_code == 404 else GitHubError
                raise error(method, path, response.status_code, _message(body))
            _wait(delay, method, path, response.status_code, self.clock, self.sleep, self.policy)
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, **kwargs):
        response = self.request(method, path, **kwargs)
        return response.json() if response.content else None

    def paginate(self, path: str, params: dict | None = None, key: str | None = None) -> Iterator[dict]:
        """Every item of a list endpoint, following `Link: rel="next"` (at most MAX_PAGES pages)."""
        url, query = path, {"per_page": 100, **(params or {})}
        for _ in range(MAX_PAGES):
            response = self.request("GET", url, params=query)
            data = response.json()
            yield from (data[key] if key else data)
            next_url = response.links.get("next", {}).get("url")
            if not next_url:
                return
            url, query = next_url, None

    def download(self, path: str, max_bytes: int, keep: str = "tail") -> Download:
        """A redirected binary download (logs, artifacts), capped; the cap keeps the tail or refuses."""
        response = self.request("GET", path, stream=True, accept="application/vnd.github+json")
        chunks: deque[bytes] = deque()
        size = dropped = 0
        with response:
            for chunk in response.iter_content(1 << 20):
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    if keep != "tail":
                        raise GitHubError("GET", path, response.status_code, f"download larger than {max_bytes} bytes")
                    while size - len(chunks[0]) >= max_bytes:
                        size -= len(chunks[0])
                        dropped += len(chunks.popleft())
        content = b"".join(chunks)
        if len(content) > max_bytes:
            dropped += len(content) - max_bytes
            content = content[-max_bytes:]
        return Download(content, dropped)

    # -- repository contents and config

    def default_branch(self, repo: str) -> str:
        return self.json("GET", f"/repos/{parse_repo(repo)}")["default_branch"]

    def file_text(self, repo: str, path: str, ref: str | None = None) -> tuple[str, str] | None:
        """(text, blob sha) of a file, or None when it does not exist (at `ref`, default branch if None)."""
        try:
            data = self.json("GET", f"/repos/{parse_repo(repo)}/contents/{quote(path)}",
                             params={"ref": ref} if ref else None)
        except NotFound:
            return None
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        text = base64.b64decode(data.get("content") or "").decode("utf-8", errors="replace")
        return text, data["sha"]

    # -- issues, comments, labels, reactions

    def issue(self, repo: str, number: int) -> dict:
        return self.json("GET", f"/repos/{parse_repo(repo)}/issues/{int(number)}")

    def find_marked_comment(self, repo: str, number: int, marker: str) -> Comment | None:
        """The bot's comment on an issue/PR: it carries `marker` and was written by a bot account.

        A person who pastes the marker into their own comment does not make it ours.
        """
        for item in self.paginate(f"/repos/{parse_repo(repo)}/issues/{int(number)}/comments"):
            if is_marked_bot_comment(item, marker):
                return Comment(item["id"], item["html_url"], item.get("body") or "")
        return None

    def edit_comment(self, url: str, body: str) -> Comment:
        data = self.json("PATCH", url, json={"body": body})
        return Comment(data["id"], data["html_url"], body)

    def edit_known_comment(self, url: str, body: str) -> Comment | None:
        """Edit a comment whose id the store remembers; None when someone deleted it meanwhile."""
        try:
            return self.edit_comment(url, body)
        except NotFound:
            return None

    def upsert_comment(self, repo: str, number: int, body: str, marker: str, known_id: int | None = None) -> Comment:
        """Edit the one marked comment, or post it when there is none: never a second one."""
        path = f"/repos/{parse_repo(repo)}/issues"
        if known_id:
            edited = self.edit_known_comment(f"{path}/comments/{int(known_id)}", body)
            if edited:
                return edited
            log.info("comment %s on %s#%s was deleted; posting a new one", known_id, repo, number)
        for attempt in range(self.policy.max_attempts):
            existing = self.find_marked_comment(repo, number, marker)
            if existing:
                return existing if existing.body == body else self.edit_comment(f"{path}/comments/{existing.id}", body)
            try:
                data = self.json("POST", f"{path}/{int(number)}/comments", json={"body": body},
                                 retry_server_errors=False)
                return Comment(data["id"], data["html_url"], body)
            except GitHubError as exc:
                if exc.status not in SERVER_ERRORS or attempt == self.policy.max_attempts - 1:
                    raise
                self.sleep(min(self.policy.backoff_s * 2 ** attempt, self.policy.max_backoff_s))
        raise AssertionError("unreachable")

    def post_comment(self, repo: str, number: int, body: str) -> Comment:
        """A plain reply (help, refusals): callers make sure it is posted once per command."""
        data = self.json("POST", f"/repos/{parse_repo(repo)}/issues/{int(number)}/comments", json={"body": body})
        return Comment(data["id"], data["html_url"], body)

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        if labels:
            self.request("POST", f"/repos/{parse_repo(repo)}/issues/{int(number)}/labels", json={"labels": list(labels)})

    def react(self, repo: str, comment_id: int, content: str = "eyes") -> None:
        """A reaction on an issue comment; GitHub answers 200 for one that already exists."""
        self.request("POST", f"/repos/{parse_repo(repo)}/issues/comments/{int(comment_id)}/reactions",
                     json={"content": content})

    def permission(self, repo: str, username: str) -> str:
        """admin | maintain | write | triage | read | none (the role, where GitHub names one)."""
        try:
            data = self.json("GET", f"/repos/{parse_repo(repo)}/collaborators/{quote(username, safe='')}/permission")
        except NotFound:
            return "none"
        return data.get("role_name") or data.get("permission") or "none"

    def can_write(self, repo: str, username: str) -> bool:
        return self.permission(repo, username) in WRITE_PERMISSIONS

    # -- commits and their comments (CI failures with no PR)

    def pulls_for_commit(self, repo: str, sha: str) -> list[int]:
        data = self.json("GET", f"/repos/{parse_repo(repo)}/commits/{quote(sha)}/pulls")
        return [pr["number"] for pr in data if pr.get("state") == "open"]

    def upsert_commit_comment(self, repo: str, sha: str, body: str, marker: str, known_id: int | None = None) -> Comment:
        base = f"/repos/{parse_repo(repo)}"
        edited = self.edit_known_comment(f"{base}/comments/{int(known_id)}", body) if known_id else None
        if edited:
            return edited
        for item in self.paginate(f"{base}/commits/{quote(sha)}/comments"):
            if is_marked_bot_comment(item, marker):
                return self.edit_comment(f"{base}/comments/{item['id']}", body)
        data = self.json("POST", f"{base}/commits/{quote(sha)}/comments", json={"body": body})
        return Comment(data["id"], data["html_url"], body)

    # -- Actions: runs, jobs, logs, artifacts, dispatch

    def workflow_run(self, repo: str, run_id: int) -> WorkflowRun:
        return WorkflowRun.from_api(self.json("GET", f"/repos/{parse_repo(repo)}/actions/runs/{int(run_id)}"))

    def run_jobs(self, repo: str, run_id: int) -> list[Job]:
        """The latest attempt's jobs of a run."""
        jobs = []
        for item in self.paginate(f"/repos/{parse_repo(repo)}/actions/runs/{int(run_id)}/jobs",
                                  {"filter": "latest"}, key="jobs"):
            failed = tuple(s["name"] for s in item.get("steps") or () if s.get("conclusion") == "failure")
            jobs.append(Job(item["id"], item["name"], item.get("conclusion"), item.get("html_url") or "",
                            item["run_id"], failed))
        return jobs

    def job_log(self, repo: str, job_id: int, max_bytes: int = MAX_LOG_BYTES) -> Download:
        """A job's plain-text log (GitHub redirects to storage; requests drops our token on the way)."""
        return self.download(f"/repos/{parse_repo(repo)}/actions/jobs/{int(job_id)}/logs", max_bytes)

    def run_artifacts(self, repo: str, run_id: int) -> list[Artifact]:
        return [Artifact(a["id"], a["name"], a.get("size_in_bytes", 0), bool(a.get("expired")))
                for a in self.paginate(f"/repos/{parse_repo(repo)}/actions/runs/{int(run_id)}/artifacts",
                                       key="artifacts")]

    def artifact_zip(self, repo: str, artifact_id: int, max_bytes: int = MAX_ARTIFACT_BYTES) -> bytes:
        return self.download(f"/repos/{parse_repo(repo)}/actions/artifacts/{int(artifact_id)}/zip",
                             max_bytes, keep="refuse").content

    def dispatch_workflow(self, repo: str, workflow_file: str, ref: str, inputs: dict[str, str]) -> None:
        """workflow_dispatch: GitHub answers 204 and starts a run; it does not say which one, so
        callers pass their own job id in the inputs and match the run by it later."""
        self.request("POST", f"/repos/{parse_repo(repo)}/actions/workflows/{quote(workflow_file, safe='')}/dispatches",
                     json={"ref": ref, "inputs": {k: str(v) for k, v in inputs.items()}})

    # -- branches, commits, pull requests

    def branch_sha(self, repo: str, branch: str) -> str | None:
        try:
            data = self.json("GET", f"/repos/{parse_repo(repo)}/git/ref/heads/{quote(branch)}")
        except NotFound:
            return None
        return data["object"]["sha"]

    def ensure_branch(self, repo: str, branch: str, from_sha: str) -> bool:
        """Create `branch` at `from_sha` unless it exists; True when it was created now."""
        if self.branch_sha(repo, branch):
            return False
        try:
            self.request("POST", f"/repos/{parse_repo(repo)}/git/refs",
                         json={"ref": f"refs/heads/{branch}", "sha": from_sha})
        except GitHubError as exc:
            if exc.status == 422 and self.branch_sha(repo, branch):  # created concurrently
                return False
            raise
        return True

    def put_file(self, repo: str, path: str, text: str, branch: str, message: str) -> str | None:
        """Commit `text` to `path` on `branch`; the new commit's sha, or None when nothing changed."""
        current = self.file_text(repo, path, ref=branch)
        if current and current[0] == text:
            return None
        payload = {"message": message, "branch": branch,
                   "content": base64.b64encode(text.encode("utf-8")).decode("ascii")}
        if current:
            payload["sha"] = current[1]
        data = self.json("PUT", f"/repos/{parse_repo(repo)}/contents/{quote(path)}", json=payload)
        return data["commit"]["sha"]

    def find_pull(self, repo: str, branch: str) -> PullRequest | None:
        """The PR from `branch` of this repo, open or closed (a closed one is not reopened or duplicated)."""
        owner = parse_repo(repo).split("/")[0]
        data = self.json("GET", f"/repos/{repo}/pulls", params={"head": f"{owner}:{branch}", "state": "all"})
        if not data:
            return None
        pr = sorted(data, key=lambda p: p["state"] != "open")[0]
        return PullRequest(pr["number"], pr["html_url"], pr["state"], bool(pr.get("draft")))

    def upsert_draft_pull(self, repo: str, branch: str, base: str, title: str, body: str) -> PullRequest:
        """The one draft PR from `branch`: opened once, its title and body refreshed afterwards."""
        existing = self.find_pull(repo, branch)
        if existing:
            if existing.state == "open":
                self.request("PATCH", f"/repos/{parse_repo(repo)}/pulls/{existing.number}",
                             json={"title": title, "body": body})
            return existing
        try:
            data = self.json("POST", f"/repos/{parse_repo(repo)}/pulls", retry_server_errors=False,
                             json={"title": title, "head": branch, "base": base, "body": body, "draft": True})
        except GitHubError as exc:
            if (exc.status == 422 or exc.status in SERVER_ERRORS) and (found := self.find_pull(repo, branch)):
                return found
            raise
        return PullRequest(data["number"], data["html_url"], data["state"], bool(data.get("draft")), created=True)


def _message(body: str) -> str:
    """GitHub's error message from a JSON error body, else the start of the body."""
    match = re.search(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"', body or "")
    return match.group(1) if match else (body or "")[:200]


def iso_to_epoch(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
