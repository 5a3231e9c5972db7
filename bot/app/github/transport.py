"""The transport every GitHub call goes through: one retry policy, pagination, capped downloads.

`RestClient.request` retries 5xx with backoff, honours rate limits (`retry_delay`), refreshes a
revoked installation token once, and raises GitHubError/NotFound/RateLimited for the rest. Creates
that a 5xx or a lost answer may or may not have performed go through `RestClient.create_once`: sent
without the transport's blind retries, and sent again only when a look finds nothing done.
"""
from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar

import requests

from bot.app.github.auth import USER_AGENT, TokenSource
from bot.app.github.errors import SERVER_ERRORS, GitHubError, NotFound, RateLimited, error_message
from bot.app.github.records import Download
from bot.app.github.retry import RetryPolicy, retry_delay, wait_before_retry

T = TypeVar("T")
API_VERSION = "2022-11-28"
REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_PAGES = 50


def parse_repo(full_name: str) -> str:
    """`owner/name`, checked, so it can be put into a URL path as is."""
    if not REPO_RE.match(full_name or ""):
        raise ValueError(f"{full_name!r} is not a repository name of the form OWNER/NAME")
    return full_name


@dataclass
class RestClient:
    """A REST client for one token (one installation, or one Actions job): the transport only;
    `GitHub` adds the endpoints the App uses."""

    api_url: str
    auth: TokenSource
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    session: requests.Session = field(default_factory=requests.Session)
    timeout_s: float = 30.0
    # our bot account, `<app-slug>[bot]`: only its comments are ours. None where it is not known (the
    # CLI on an Actions token): then any bot's comment that starts with our marker is taken for ours.
    bot_login: str | None = None

    def __post_init__(self):
        self.api_url = self.api_url.rstrip("/")

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
                wait_before_retry(min(self.policy.backoff_s * 2 ** attempt, self.policy.max_backoff_s),
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
                raise error(method, path, response.status_code, error_message(body))
            wait_before_retry(delay, method, path, response.status_code, self.clock, self.sleep, self.policy)
        raise AssertionError("unreachable")

    def create_once(self, send: Callable[[], T], find: Callable[[], T | None], settle_s: float = 0.0) -> T:
        """A create (a comment, a dispatch) made at most once: `find()` looks for its effect, and only
        when it finds nothing is `send()` called, which must pass `retry_server_errors=False`.

        A 5xx or a lost answer may come after GitHub did the work, so after one the effect is looked
        for again (after the policy's backoff, and at least `settle_s`: what GitHub does after
        answering, like starting a dispatched run, takes a moment to show) before anything is
        re-sent. The first look also covers a job retried after such a failure, or after a crash
        between the create and its checkpoint. Past the policy's attempts the error goes to the
        caller, whose job is retried later.
        """
        for attempt in range(self.policy.max_attempts):
            found = find()
            if found is not None:
                return found
            try:
                return send()
            except GitHubError as exc:
                if not _may_have_been_done(exc) or attempt == self.policy.max_attempts - 1:
                    raise
                backoff = min(self.policy.backoff_s * 2 ** attempt, self.policy.max_backoff_s)
                wait_before_retry(max(backoff, settle_s), exc.method, exc.path, exc.status or 0, self.clock,
                                  self.sleep, self.policy)
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


def _may_have_been_done(error: GitHubError) -> bool:
    """A failure after which GitHub may have done the work anyway: a 5xx, or no answer at all (a
    rate limit or a refusal is answered before anything is done)."""
    return not isinstance(error, RateLimited) and (error.status is None or error.status in SERVER_ERRORS)
