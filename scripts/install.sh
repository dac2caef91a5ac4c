#!/usr/bin/env bash
# Install crowdqa into .venv from a lock (locks/run.txt or locks/test.txt): the exact versions, hash-checked,
# then crowdqa itself (editable, without resolving anything again). Skips the work when the venv already holds
# what this lock and pyproject.toml say. Used by scripts/run.sh and scripts/test.sh; renew locks with scripts/lock.sh.
#   bash scripts/install.sh locks/run.txt
set -euo pipefail
cd "$(dirname "$0")/.."
LOCK=${1:?usage: scripts/install.sh LOCKFILE}
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
STAMP=.venv/.crowdqa-installed
WANT="$LOCK $(cat "$LOCK" pyproject.toml | .venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
if [ ! -x .venv/bin/crowdqa ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
    echo "scripts/install.sh: installing crowdqa into .venv from $LOCK" >&2
    # --no-deps: the lock is the whole resolution (every dependency pinned, with its hashes), so pip resolves nothing
    # again. Without it pip reads each package's own requirements, and one asked with an extra (pip-audit's
    # CacheControl[filecache]) is not matched to the lock's pin: pip fetched the newest release and refused it.
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r "$LOCK"
    # ...and the lock is checked to be whole: every installed package's requirements are installed.
    if ! broken=$(.venv/bin/python -m pip check); then echo "$broken" >&2; exit 1; fi
    # The build backend (setuptools) is in the lock: no isolated build env, so nothing unpinned is fetched.
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
    echo "$WANT" > "$STAMP"
fi
