#!/usr/bin/env bash
# Install crowdqa (only when pyproject.toml changed since the last install) and run `crowdqa serve` on its
# embedded defaults (SQLite and an in-process queue); arguments go to `crowdqa serve` (e.g. --port 8001).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
STAMP=.venv/.crowdqa-installed
WANT=$(cat pyproject.toml | .venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
if [ ! -x .venv/bin/crowdqa ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
    echo "scripts/run.sh: installing crowdqa into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check -e .
    echo "$WANT" > "$STAMP"
fi
exec .venv/bin/crowdqa serve "$@"
