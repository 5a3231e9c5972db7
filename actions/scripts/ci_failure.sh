#!/usr/bin/env bash
# Classifies the failed jobs of a workflow run from their logs (text only: nothing is executed)
# and, with PT2_POST_COMMENT, comments on the run's pull requests.
#
# Environment: PT2_PYTHON, PT2_RUN_ID, PT2_REPORT_DIR, PT2_POST_COMMENT, GITHUB_TOKEN,
# GITHUB_REPOSITORY, GITHUB_API_URL.
set -euo pipefail

fail() {
  echo "::error title=pt2-triage ci-failure::$*"
  exit 2
}

[[ -n "${GITHUB_TOKEN:-}" ]] || fail "github-token is empty: reading a run's logs needs a token with actions read"
run_id="${PT2_RUN_ID:-}"
[[ "$run_id" =~ ^[0-9]+$ ]] || fail "run-id is '$run_id': give the failed run (\${{ github.event.workflow_run.id }})"
mkdir -p "$PT2_REPORT_DIR"

args=(ci-failure --repo "$GITHUB_REPOSITORY" --run-id "$run_id" --api-url "${GITHUB_API_URL:-https://api.github.com}"
  --out "$PT2_REPORT_DIR" --json)
if [[ "${PT2_POST_COMMENT:-false}" == true ]]; then
  args+=(--comment)
fi
"$PT2_PYTHON" -I -m bot.cli "${args[@]}" > "$PT2_REPORT_DIR/ci_failure.json"
"$PT2_PYTHON" -I -m bot.cli.actions_io ci "$PT2_REPORT_DIR/ci_failure.json" --report-path "$PT2_REPORT_DIR/ci_report.json"
