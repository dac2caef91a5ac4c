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
# made again when locks/label-studio.txt changed (its digest is kept in the venv; tests/utils/label_studio.py does
# the same when those tests run).
LS_VENV=${CROWDQA_LABEL_STUDIO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/crowdqa-tests/label-studio-1.23}
LS_WANT=$(sha256sum locks/label-studio.txt | cut -d' ' -f1)
if [ ! -x "$LS_VENV/bin/label-studio" ] || [ "$(cat "$LS_VENV/.crowdqa-lock" 2>/dev/null)" != "$LS_WANT" ]; then
    rm -rf "$LS_VENV"
    { "$PY" -m venv "$LS_VENV" && "$LS_VENV/bin/python" -m pip install -q --disable-pip-version-check \
        --require-hashes -r locks/label-studio.txt && echo "$LS_WANT" > "$LS_VENV/.crowdqa-lock"; } \
        || { rm -rf "$LS_VENV"; echo "scripts/test.sh: label-studio not installed" >&2; }
fi
exec .venv/bin/python -m pytest -q "$@"
