#!/usr/bin/env bash
# Build the documentation site (mkdocs.yml, docs/) strictly and serve it on http://127.0.0.1:8001; arguments go
# to `mkdocs serve` (e.g. --dev-addr 127.0.0.1:9000). `bash scripts/docs.sh build` writes the site to site/ and
# stops. Installs from locks/test.txt (which holds the docs extra); the build needs no network: the reference
# pages are made from the code (docs/_hooks/).
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_MKDOCS_2_WARNING=1  # Material 9.7+ prints a notice about MkDocs 2 on every build
bash scripts/install.sh locks/test.txt
if [ "${1:-}" = build ]; then
    shift
    exec .venv/bin/mkdocs build --strict "$@"
fi
exec .venv/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8001 "$@"
