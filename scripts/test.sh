#!/usr/bin/env bash
# Install what the tests need and run the whole test suite.
# Needs only Python 3.11+; installs redis-server and chromium (the dashboard's browser tests, driven by
# Playwright without a browser download) with apt-get when missing and we are root
# (PostgreSQL is expected on the machine; its tests skip with a message where it is absent).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null
    else
        echo "scripts/test.sh: redis-server not found; the Redis tests will be skipped" >&2
    fi
fi
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
    else
        echo "scripts/test.sh: /usr/bin/chromium not found; the dashboard's browser tests will be skipped" >&2
    fi
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
.venv/bin/python -m ruff check .
exec .venv/bin/python -m pytest -q "$@"
