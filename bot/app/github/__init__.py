"""All GitHub I/O: the one package that talks to GitHub's REST API.

Authentication uses PyGithub: `Auth.AppAuth` signs the App's JWT and `GithubIntegration` exchanges
it for an installation token, cached until shortly before it expires (`auth`). Every REST call then
goes through `RestClient.request` (`transport`), so each one shares one retry policy (`retry_delay`,
a pure function in `retry`): backoff on 5xx, `Retry-After` on secondary rate limits,
`x-ratelimit-reset` on the primary one. The clock and the sleeper are injected, so tests never wait
and a worker never blocks longer than `RetryPolicy.max_wait_s` (past that the job is re-queued).

Writes are idempotent where GitHub lets them be: the bot's comment is found by its hidden marker
(its first line, in a comment our bot account wrote) and edited, never posted twice; the draft PR
is found by its branch; a file is committed only when its content changed.

Creates that a 5xx or a lost answer may have performed anyway are never blindly re-sent
(`RestClient.create_once`): they are sent with `retry_server_errors=False`, and before each send,
the first included, GitHub is asked whether the effect is already there. A marked comment is found
by its marker; a plain reply by the hidden id it carries as its last line (its job and step:
`post_comment(reply_id=...)`); a workflow_dispatch by the job id its run's title carries (the
`job-id` input, in the runner workflow's run-name), looked for after a settle time because GitHub
lists a run a moment after starting it. Looking before the first send as well costs one GET per
create and makes a job retried after a failure, or after a crash before its checkpoint, safe too.
A create with no identity to look for is sent once and its failure left to the job's retry.

The endpoints are grouped by what they touch: `issues` (comments, labels, reactions,
permissions), `actions` (runs, jobs, logs, artifacts, dispatch), `contents` (files, branches,
the draft PR). `GitHub` is all of them, for one token.
"""
from __future__ import annotations

from bot.app.github.actions import MAX_ARTIFACT_BYTES, MAX_LOG_BYTES, ActionsApi
from bot.app.github.auth import AppCredentials, InstallationToken, StaticToken, TokenSource
from bot.app.github.contents import ContentsApi
from bot.app.github.errors import SERVER_ERRORS, GitHubError, NotFound, RateLimited
from bot.app.github.issues import IssuesApi, is_marked_bot_comment
from bot.app.github.records import Artifact, Comment, Download, PullRequest, WorkflowJob, WorkflowRun
from bot.app.github.retry import RetryPolicy, retry_delay
from bot.app.github.transport import API_VERSION, parse_repo

__all__ = ["API_VERSION", "MAX_ARTIFACT_BYTES", "MAX_LOG_BYTES", "SERVER_ERRORS", "AppCredentials", "Artifact",
           "Comment", "Download", "GitHub", "GitHubError", "InstallationToken", "NotFound", "PullRequest",
           "RateLimited", "RetryPolicy", "StaticToken", "TokenSource", "WorkflowJob", "WorkflowRun",
           "is_marked_bot_comment", "parse_repo", "retry_delay"]


class GitHub(IssuesApi, ActionsApi, ContentsApi):
    """A REST client for one token (one installation, or one Actions job), with every endpoint the
    App and the CLI use."""
