"""Every example of the README and the tutorials runs as written, on bundled data, and writes nowhere in the checkout.

Each page's shell and Python blocks run in order, as one shell session (:func:`session`), in a fresh copy of the
repository's files (a clone's root), against a ``crowdqa serve`` started in that copy the way
``bash scripts/run.sh`` starts it (its data directory is the copy's ``./crowdqa-data``). Every command must exit 0,
and afterwards the copy must hold exactly the files it held before, but the server's data directory.

Not run, and why (each is covered elsewhere): lines that install or start something long-running, i.e.
``bash scripts/...``, ``source .venv/bin/activate`` (the suite's own environment is first on ``PATH`` instead),
``crowdqa serve`` (the server this test starts), ``crowdqa worker`` (tests/reliability/test_production.py) and
``crowdqa label-studio`` (tests/label_studio/, against a real Label Studio). The production tutorial's blocks run
in tests/docs/test_production_tutorial.py, on a real PostgreSQL and Redis. The command-line reference's examples
run here too: they are the ones a reader copies first.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.utils.docs import DOCS, REPO
from tests.utils.services import free_port, wait_for_port

BIN = Path(sys.executable).parent
#: The pages whose examples run here: every tutorial (but production.md, see above), the command-line reference and
#: the how-to guides whose examples need nothing but the bundled data.
PAGES = [*sorted(f"tutorials/{p.name}" for p in (DOCS / "tutorials").glob("*.md")
                 if p.name not in ("index.md", "production.md")), "reference/cli.md", "how-to/pre-annotate.md"]
SKIPPED = re.compile(r"^\s*(bash scripts/|source \.venv/bin/activate|crowdqa (serve|worker|label-studio)\b)")
BLOCK = re.compile(r"^```(sh|bash|python)\n(.*?)^```", flags=re.M | re.S)
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', flags=re.M)


def examples(markdown: str) -> list[tuple[str, str]]:
    """(language, code) of each shell or Python block, in order: snippets (``--8<-- "path"``) read from the
    repository; in shell, the lines this module does not run are left out, with their continuation lines."""
    found = []
    for language, code in BLOCK.findall(markdown):
        code = SNIPPET.sub(lambda m: (REPO / m[1]).read_text(encoding="utf-8"), code)
        if language == "python":
            found.append((language, code))
            continue
        kept, skipping = [], False
        for line in code.splitlines():
            skipping = skipping or bool(SKIPPED.match(line))
            if not skipping:
                kept.append(line)
            if not line.rstrip().endswith("\\"):
                skipping = False
        if any(line.strip() and not line.lstrip().startswith("#") for line in kept):
            found.append(("sh", "\n".join(kept) + "\n"))
    return found


def test_the_block_reader_skips_what_it_says_and_reads_snippets():
    text = ("```sh\nbash scripts/run.sh --port 1\nsource .venv/bin/activate\ncrowdqa serve \\\n    --port 2\n"
            "crowdqa ingest a.jsonl \\\n    --format spans-jsonl\ncrowdqa worker\n```\n\n```python\nprint(1)\n```\n\n"
            "```sh\ncrowdqa label-studio push --job J\n```\n\n```sh\n--8<-- \"api/sample/README_example.sh\"\n```\n")
    found = examples(text)
    assert found[:2] == [("sh", "crowdqa ingest a.jsonl \\\n    --format spans-jsonl\n"), ("python", "print(1)\n")]
    assert len(found) == 3 and found[2][1].startswith("#!/usr/bin/env bash") and "crowdqa keys create" in found[2][1]


def _fresh_copy(into: Path) -> Path:
    """The repository's files as a commit of the working tree would hold them (tracked, and new files git does not
    ignore; symbolic links kept as links): a fresh clone's root."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot list the tracked files")
    root = into / "checkout"
    for name in filter(None, listed.stdout.split("\0")):
        source, target = REPO / name, root / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return root


def _files(root: Path) -> dict[str, str]:
    """Every file under root (bytecode caches aside) and a hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts}


def _environment(root: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", CROWDQA_API=f"http://127.0.0.1:{port}/api/v1",
               PYTHONUNBUFFERED="1", HOME=str(root.parent / "home"))
    (root.parent / "home").mkdir(exist_ok=True)
    return env


@pytest.fixture
def served_copy(tmp_path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh copy of the repository and ``crowdqa serve`` running embedded in it."""
    if not (BIN / "crowdqa").exists():
        pytest.skip("crowdqa is not installed in this environment")
    root = _fresh_copy(tmp_path)
    port = free_port()
    env = _environment(root, port)
    log = open(tmp_path / "serve.log", "w+")
    server = subprocess.Popen([str(BIN / "crowdqa"), "serve", "--port", str(port), "--log-level", "warning"],
                              cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, timeout=60)
        yield root, env
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        log.seek(0)
        assert "Traceback" not in log.read()
        log.close()


def session(blocks: list[tuple[str, str]]) -> str:
    """The blocks as one shell session, as a reader runs them in one terminal (a variable set in one block is
    there in the next); a Python block runs in the suite's interpreter (``$PYTHON``), reading what the shell
    exported."""
    parts = ["set -euo pipefail"]
    for language, code in blocks:
        parts.append(code if language == "sh" else f'"$PYTHON" - <<\'CROWDQA_PYTHON\'\n{code.rstrip()}\nCROWDQA_PYTHON')
    return "\n".join(parts) + "\n"


def _run_in_order(blocks: list[tuple[str, str]], root: Path, env: dict[str, str]) -> str:
    before = _files(root)
    done = subprocess.run(["bash", "-c", session(blocks)], cwd=root, env={**env, "PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    after = _files(root)
    written = {name for name in set(after) | set(before) if before.get(name) != after.get(name)}
    assert {name for name in written if not name.startswith("crowdqa-data/")} == set(), "written in the checkout"
    return done.stdout


def test_every_readme_example_runs_in_order_from_a_fresh_copy(served_copy):
    """Issue 42: every ``crowdqa`` line of the README's shell blocks (the two commands' block aside: it installs and
    serves) exits 0, in order, from a clone's root, on the bundled sample."""
    root, env = served_copy
    readme = (root / "README.md").read_text(encoding="utf-8")
    blocks = examples(readme.split("```\n", 1)[1])  # after the first block, the two commands
    ran = " ".join(code for _, code in blocks)
    assert len(blocks) >= 2 and len(re.findall(r"^\s*(?:\w+=\$\()?crowdqa ", ran, flags=re.M)) >= 4, blocks
    _run_in_order(blocks, root, env)


@pytest.mark.parametrize("name", PAGES)
def test_every_example_of_the_tutorials_and_the_cli_reference_runs_in_order(served_copy, name):
    root, env = served_copy
    blocks = examples((root / "docs" / name).read_text(encoding="utf-8"))
    if name != "tutorials/label-studio.md":  # its commands all need a Label Studio server
        assert blocks, f"docs/{name} has no example this test runs"
    _run_in_order(blocks, root, env)
