#!/usr/bin/env bash
# Runs `pt2-triage triage` on an untrusted issue or repro. Nothing this step does can set the job's
# outputs, environment or PATH: the CLI (and so the sandboxed repro under it) starts from an empty
# environment with an allow list, its output cannot issue workflow commands (stop-commands with a
# random token), and on exit this step empties its own GITHUB_OUTPUT/GITHUB_ENV/GITHUB_PATH/summary
# files, so whatever the repro managed to write there is dropped before the runner reads them.
# Outputs come from the next step, which reads report.json as data.
#
# Nor can what the repro writes be imported by us: the CLI runs isolated (`python -I`: the working
# directory is not on sys.path), and not in the workspace but in a fresh directory that holds only a
# read-only copy of the input and that nobody may write to (the report path is made absolute).
#
# Environment: PT2_PYTHON, PT2_INPUT (issue markdown or script), PT2_REPORT_DIR, PT2_ISSUE_NUMBER,
# PT2_DEVICE (auto|cpu|cuda), PT2_TIMEOUT_MINUTES, PT2_MINIMIZE_BUDGET, PT2_ISSUE_BASE_URL (…/OWNER/REPO/issues).
set -euo pipefail

run_dir=""
on_exit() {
  local file
  for file in "${GITHUB_OUTPUT:-}" "${GITHUB_ENV:-}" "${GITHUB_PATH:-}" "${GITHUB_STEP_SUMMARY:-}"; do
    if [[ -n "$file" && -f "$file" ]]; then
      : > "$file"
    fi
  done
  if [[ -n "$run_dir" ]]; then
    chmod -R u+w "$run_dir" && rm -rf -- "$run_dir" || true
  fi
}
trap on_exit EXIT

fail() {
  echo "::error title=pt2-triage::$*"
  exit 2
}

input="${PT2_INPUT:?PT2_INPUT is not set}"
[[ -f "$input" ]] || fail "$input: no such file (repro-path is relative to the workspace)"
case "${PT2_DEVICE:-auto}" in
  auto | cpu | cuda) ;;
  *) fail "device must be auto, cpu or cuda, not '${PT2_DEVICE}'" ;;
esac
minutes="${PT2_TIMEOUT_MINUTES:-30}"
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -gt 0 ]] || fail "timeout-minutes must be a whole number of minutes, not '$minutes'"
mkdir -p "$PT2_REPORT_DIR"

budget="${PT2_MINIMIZE_BUDGET:-300}"
[[ "$budget" =~ ^[0-9]+$ ]] || fail "minimize-budget must be a whole number of seconds, not '$budget'"

report_dir="$PT2_REPORT_DIR"
if [[ "$report_dir" != /* ]]; then
  report_dir="$PWD/$report_dir"
fi
# The input under its own name (the report refers to it by that), as ./NAME so no name reads as an option.
input_name="$(basename -- "$input")"
args=(triage "./$input_name" --out "$report_dir" --device "${PT2_DEVICE:-auto}" --budget "$budget")
if [[ -n "${PT2_ISSUE_NUMBER:-}" ]]; then
  [[ "$PT2_ISSUE_NUMBER" =~ ^[0-9]+$ ]] || fail "issue-number must be a number, not '$PT2_ISSUE_NUMBER'"
  args+=(--issue-number "$PT2_ISSUE_NUMBER")
  if [[ "${PT2_ISSUE_BASE_URL:-}" =~ ^https://[A-Za-z0-9.-]+/[A-Za-z0-9._-]+/[A-Za-z0-9._-]+/issues$ ]]; then
    args+=(--issue-url "$PT2_ISSUE_BASE_URL/$PT2_ISSUE_NUMBER")  # the generated test names the issue, not a runner path
  fi
fi

# The CLI's whole environment: what running torch needs, and nothing that could be a credential.
clean_env=(PATH="$PATH" HOME="${HOME:-/tmp}" LANG=C.UTF-8 LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1)
for name in TMPDIR CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES NVIDIA_DRIVER_CAPABILITIES LD_LIBRARY_PATH \
  CUDA_HOME CC CXX OMP_NUM_THREADS TZ ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES; do
  if [[ -n "${!name:-}" ]]; then
    clean_env+=("$name=${!name}")
  fi
done

run_dir="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/pt2-triage-cwd.XXXXXXXX")"
cp -- "$input" "$run_dir/$input_name"
chmod 0444 "$run_dir/$input_name"
chmod 0555 "$run_dir"
cd "$run_dir"

token="pt2-triage-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
echo "::group::pt2-triage ${args[*]}"
echo "::stop-commands::$token"
status=0
env -i "${clean_env[@]}" timeout --kill-after=30s "${minutes}m" "$PT2_PYTHON" -I -m bot.cli "${args[@]}" || status=$?
echo "::$token::"
echo "::endgroup::"
# The input the triage read goes into the artifact beside its report (our copy, not the repro's).
if [[ -d "$report_dir" && ! -e "$report_dir/$input_name" ]]; then
  cp -- "$input" "$report_dir/$input_name" || true
fi
if [[ "$status" -eq 124 || "$status" -eq 137 ]]; then
  fail "triage did not finish within timeout-minutes ($minutes); what it wrote so far is in the artifact"
fi
if [[ "$status" -ne 0 ]]; then
  fail "pt2-triage triage exited with status $status (its log is in the group above)"
fi
