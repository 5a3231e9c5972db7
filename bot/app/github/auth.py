"""Who the client is: a token given from outside (Actions, a PAT), or the App's installation tokens.

The App's JWT is signed by PyGithub (`Auth.AppAuth`), and `GithubIntegration` exchanges it for an
installation token, cached until shortly before it expires.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import timezone
from typing import Callable, Protocol

from bot.app.github.errors import GitHubError
from bot.app.github.retry import RetryPolicy, retry_delay, wait_before_retry

USER_AGENT = "pt2-triage"
TOKEN_REFRESH_MARGIN_S = 300  # refresh an installation token 5 minutes before GitHub expires it


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
                wait_before_retry(delay, "POST", path, exc.status, self._clock, self._sleep, self._policy)
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
