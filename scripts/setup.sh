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
# torch first and pinned: an unpinned requirement would fetch a CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/pip install -q --disable-pip-version-check "$TORCH_SPEC"
.venv/bin/pip install -q --disable-pip-version-check -e '.[test,app,runner]'
bash scripts/fetch_octokit_specs.sh >/dev/null  # GitHub OpenAPI specs for the contract tests (tests/contract)
