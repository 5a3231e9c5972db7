"""What a GitHub call that did not succeed raises: a refusal, a missing thing, or a request to wait."""
from __future__ import annotations

import re

SERVER_ERRORS = frozenset({500, 502, 503, 504})


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



def error_message(body: str) -> str:
    """GitHub's error message from a JSON error body, else the start of the body."""
    match = re.search(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"', body or "")
    return match.group(1) if match else (body or "")[:200]
