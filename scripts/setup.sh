#!/usr/bin/env bash
# One-time, idempotent set-up: a virtualenv in .venv with the CPU build of torch and
# this package (editable) plus its test tools. Safe to re-run; fast when done already.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${PT2_TRIAGE_TORCH:-torch==2.13.0}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# torch first and pinned: an unpinned requirement would fetch a CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/pip install -q --disable-pip-version-check "$TORCH_SPEC"
.venv/bin/pip install -q --disable-pip-version-check -e '.[test,app,runner]'
bash scripts/fetch_octokit_specs.sh >/dev/null  # GitHub OpenAPI specs for the contract tests (tests/contract)
