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
bash scripts/install.sh locks/test.txt
.venv/bin/python -m ruff check .
# Label Studio 1.23 (about 1 GB) for the tests of `crowdqa label-studio`, in its own venv, cached between runs and
# made again from locks/label-studio.txt when that lock changed: scripts/label_studio_venv.py keeps the rule (the
# tests call it too); on failure it says why and those tests skip with the reason.
"$PY" scripts/label_studio_venv.py >/dev/null || true
exec .venv/bin/python -m pytest -q "$@"
