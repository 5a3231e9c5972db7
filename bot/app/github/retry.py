"""One retry policy for every GitHub call (pure, with the clock passed in): backoff on 5xx,
`Retry-After` on secondary rate limits, `x-ratelimit-reset` on the primary one. A wait longer than
`RetryPolicy.max_wait_s` is not slept: it becomes `RateLimited`, and the job is re-queued instead."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.app.github.errors import SERVER_ERRORS, RateLimited

log = logging.getLogger("pt2_triage.github")


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


def wait_before_retry(delay: float, method: str, path: str, status: int, clock, sleep, policy: RetryPolicy) -> None:
    """Sleep `delay` before the next try, or raise RateLimited when that is longer than a worker should block."""
    if delay > policy.max_wait_s:
        raise RateLimited(method, path, status, clock() + delay)
    log.warning("github %s %s answered %s; retrying in %.1fs", method, path, status, delay)
    sleep(delay)
