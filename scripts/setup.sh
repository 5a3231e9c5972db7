#!/usr/bin/env bash
# One-time, idempotent set-up: a virtualenv in .venv with the CPU build of torch and
# this package (editable) plus its test tools. Safe to re-run; fast when done already.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${PT2_TRIAGE_TORCH:-torch==2.13.0}"
# The sandbox runs repros under bubblewrap; as root (CI, runner images) install it when missing.
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# torch first and pinned: an unpinned requirement would fetch a CUDA build. On a machine without
# an NVIDIA driver the CPU wheel comes from PyTorch's CPU index when that index answers (PyPI's
# Linux wheel pulls in gigabytes of CUDA libraries); where it does not (an offline mirror or a
# wheel directory pip is configured with), pip's own configuration decides.
# PT2_TRIAGE_TORCH_INDEX overrides the index; PT2_TRIAGE_TORCH the requirement.
torch_index_args() {
  if [ -n "${PT2_TRIAGE_TORCH_INDEX:-}" ]; then echo "--extra-index-url $PT2_TRIAGE_TORCH_INDEX"; return; fi
  command -v nvidia-smi >/dev/null 2>&1 && return
  local cpu_index=https://download.pytorch.org/whl/cpu
  if "$PYTHON" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=3)" "$cpu_index" 2>/dev/null; then
    echo "--extra-index-url $cpu_index"
  fi
}
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  # shellcheck disable=SC2046  # the index arguments are words on purpose
  .venv/bin/pip install -q --disable-pip-version-check $(torch_index_args) "$TORCH_SPEC"
fi
.venv/bin/pip install -q --disable-pip-version-check -e '.[test,app,runner]'
bash scripts/fetch_octokit_specs.sh >/dev/null  # GitHub OpenAPI specs for the contract tests (tests/contract)
