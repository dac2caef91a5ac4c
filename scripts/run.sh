#!/usr/bin/env bash
# Install crowdqa and run it on its embedded defaults (SQLite and an in-process queue).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e .
exec .venv/bin/crowdqa serve "$@"
