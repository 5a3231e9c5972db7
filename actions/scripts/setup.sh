#!/usr/bin/env bash
# Chooses the interpreter the action runs with and installs pt2-triage from the action's own
# checkout into it, so `uses: pt2bash/triage@v1` always runs the code of v1.
#
# Environment (set by the action's step, never interpolated into this script):
#   PT2_ACTION_ROOT   the action repository's root (holds pyproject.toml)
#   PT2_PYTHON        an interpreter to use (a self-hosted image's python with torch), or empty
#   PT2_INSTALL       true: pip-install the package into that interpreter; false: it must have it
#   PT2_TORCH         pip arguments for torch when a fresh venv is made and PT2_NEEDS_TORCH is true
#   PT2_NEEDS_TORCH   true for modes that run a repro
#   PT2_EXTRAS        the package extras to install (runner, app)
# Writes the output `python`.
#
# Every python the action starts, here and in the later steps, runs isolated (`-I`): the working
# directory is the workspace, where a checked-out repository or a repro may have left a `bot/`
# (or `yaml.py`, `pip/` ...) that `python -m`/`-c` would otherwise import ahead of the real one,
# and PYTHON* variables are ignored. (-I also leaves out the user site-packages: install into a
# virtualenv or the interpreter's own site-packages, as this script does.)
set -euo pipefail

fail() {
  echo "::error title=pt2-triage set-up::$*"
  exit 1
}

root="${PT2_ACTION_ROOT:?PT2_ACTION_ROOT is not set}"
python="${PT2_PYTHON:-}"
pip_quiet=(--disable-pip-version-check --quiet)

if [[ -z "$python" ]]; then
  venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/pt2-triage-venv"
  python3 -I -m venv "$venv" || fail "could not create a virtualenv with python3; give the action a \`python\`"
  python="$venv/bin/python"
  if [[ "${PT2_NEEDS_TORCH:-false}" == true ]] && ! "$python" -I -c 'import torch' 2>/dev/null; then
    read -r -a torch_args <<< "${PT2_TORCH:-torch}"
    echo "::group::Install ${PT2_TORCH:-torch}"
    "$python" -I -m pip install "${pip_quiet[@]}" "${torch_args[@]}"
    echo "::endgroup::"
  fi
elif ! command -v "$python" > /dev/null; then
  fail "python '$python' was not found on this runner"
fi

if [[ "${PT2_INSTALL:-true}" == true ]]; then
  install_args=("${pip_quiet[@]}")
  # With setuptools already there (the runner image has it) the build needs no index: this
  # keeps ephemeral runners without general egress working.
  if "$python" -I -c 'import setuptools, wheel' 2> /dev/null; then
    install_args+=(--no-build-isolation)
  fi
  echo "::group::Install pt2-triage from $root"
  "$python" -I -m pip install "${install_args[@]}" "${root}[${PT2_EXTRAS:-runner}]"
  echo "::endgroup::"
fi

wanted="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml" | head -n 1)"
installed="$("$python" -I -c 'import bot; print(bot.__version__)' 2> /dev/null)" \
  || fail "pt2-triage is not importable by $python -I (isolated: no user site-packages); set install: true or use the runner image from runners/setup"
if [[ "$installed" != "$wanted" ]]; then
  fail "$python has pt2-triage $installed but this action is $wanted; set install: true or rebuild the runner image"
fi
echo "pt2-triage $installed with $("$python" --version 2>&1) at $python"
echo "python=$python" >> "$GITHUB_OUTPUT"
