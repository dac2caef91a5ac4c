#!/usr/bin/env bash
# Install what the tests need and run the whole test suite.
# Needs only Python 3.11+; installs redis-server, PostgreSQL and chromium (the dashboard's browser tests,
# driven by Playwright without a browser download) with apt-get when they are missing and we are root;
# elsewhere the tests that need them skip with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1 || missing+=(postgresql)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
    else
        echo "scripts/test.sh: ${missing[*]} not found; the tests that need them will be skipped" >&2
    fi
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
.venv/bin/python -m ruff check .
exec .venv/bin/python -m pytest -q "$@"
