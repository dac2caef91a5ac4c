#!/usr/bin/env bash
# Install crowdqa from the lock (locks/run.txt; only when it or pyproject.toml changed since the last install)
# and run `crowdqa serve` on its embedded defaults (SQLite and an in-process queue); arguments go to
# `crowdqa serve` (e.g. --port 8001).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh locks/run.txt
exec .venv/bin/crowdqa serve "$@"
