#!/usr/bin/env bash
# Publishes a report another job produced: the one triage comment, labels, and (with PT2_DRAFT_PR)
# the draft regression-test PR. Runs no user code; report.json is read as data only. The issue
# number comes from the workflow (the event or an input), never from the report, which was
# written next to untrusted code.
#
# Environment: PT2_PYTHON, PT2_REPORT_DIR, PT2_ISSUE_NUMBER, PT2_DRAFT_PR, GITHUB_TOKEN,
# GITHUB_REPOSITORY, GITHUB_API_URL, RUNNER_TEMP.
set -euo pipefail

fail() {
  echo "::error title=pt2-triage publish::$*"
  exit 2
}

[[ -n "${GITHUB_TOKEN:-}" ]] || fail "github-token is empty: publishing needs a token with issues and pull-requests write"
issue="${PT2_ISSUE_NUMBER:-}"
[[ "$issue" =~ ^[0-9]+$ ]] || fail "issue-number is '$issue': give the issue to publish to (e.g. \${{ github.event.issue.number }})"
[[ -f "$PT2_REPORT_DIR/report.json" ]] || fail "$PT2_REPORT_DIR/report.json not found: download the triage job's artifact to report-dir first"

args=(publish "$PT2_REPORT_DIR" --repo "$GITHUB_REPOSITORY" --issue "$issue" --api-url "${GITHUB_API_URL:-https://api.github.com}" --json)
if [[ "${PT2_DRAFT_PR:-false}" == true ]]; then
  args+=(--draft-pr)
fi
result="${RUNNER_TEMP:-/tmp}/pt2-triage-publish-$issue.json"
"$PT2_PYTHON" -I -m bot.cli "${args[@]}" > "$result"
"$PT2_PYTHON" -I -m bot.cli.actions_io published "$result"
