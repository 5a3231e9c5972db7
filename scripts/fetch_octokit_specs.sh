#!/usr/bin/env bash
# GitHub's official OpenAPI descriptions (npm @octokit/openapi and @octokit/openapi-webhooks), which the
# contract tests check every mocked REST call and every webhook fixture against. Installed once into a
# cache directory (not the repo: ~400 MB); pinned so a new GitHub release never changes a CI run by itself.
# Usage: scripts/fetch_octokit_specs.sh   (prints the directory; PT2_TRIAGE_OCTOKIT_DIR overrides it)
set -euo pipefail
OPENAPI_VERSION=23.0.2
WEBHOOKS_VERSION=12.1.0
DIR="${PT2_TRIAGE_OCTOKIT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pt2-triage/octokit}"
STAMP="$DIR/.installed-$OPENAPI_VERSION-$WEBHOOKS_VERSION"
if [ ! -f "$STAMP" ]; then
  command -v npm >/dev/null || { echo "fetch_octokit_specs: npm is required (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@octokit/openapi@$OPENAPI_VERSION" "@octokit/openapi-webhooks@$WEBHOOKS_VERSION" >&2
  touch "$STAMP"
fi
echo "$DIR"
