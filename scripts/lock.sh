#!/usr/bin/env bash
# Renew the lock: exact versions, with hashes, of everything the README's two commands, .ci/run, the image and
# the Label Studio test venv install, made from pyproject.toml's ranges by uv's resolver (`uv pip compile`).
# Run scripts/drift_check.sh first: it tries the newest versions the ranges allow and says whether they work.
#   locks/test.txt          scripts/test.sh (and .ci/run): crowdqa with the test extra
#   locks/run.txt           scripts/run.sh and deploy/Dockerfile: crowdqa alone (+ setuptools, the build backend)
#   locks/label-studio.txt  the Label Studio venv the `crowdqa label-studio` tests start
# Every lock is universal (any platform, Python 3.11 and newer); run.txt is constrained to test.txt's versions,
# so the service runs on exactly what the suite tested.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
TOOLS=${XDG_CACHE_HOME:-$HOME/.cache}/crowdqa-tools/uv-$UV_VERSION
if [ ! -x "$TOOLS/bin/uv" ]; then
    python3 -m venv "$TOOLS"
    "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
fi
compile() {
    "$TOOLS/bin/uv" pip compile --quiet --generate-hashes --universal --python-version 3.11 \
        --custom-compile-command "bash scripts/lock.sh" "$@"
}
build_requires=$(python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
compile pyproject.toml --extra test -o locks/test.txt
printf '%s\n' "$build_requires" | compile pyproject.toml - -c locks/test.txt -o locks/run.txt
ls_spec=$(python3 -c 'import re; print(re.search(r"SPEC = \"([^\"]+)\"", open("tests/utils/label_studio.py").read())[1])')
printf '%s\n' "$ls_spec" | compile - -o locks/label-studio.txt
echo "scripts/lock.sh: locks/test.txt, locks/run.txt and locks/label-studio.txt renewed from pyproject.toml" >&2
