"""The house's layout: one import package, ``crowdqa``, mapped onto the design card's top-level folders.

The folders ``aggregation/``, ``ingest/``, ``quality/``, ``store/``, ``jobs/`` and ``api/`` install as
``crowdqa.aggregation`` and so on (pyproject's ``package-dir``), so nothing else lands at the top of
site-packages. From a checkout the bare names would still import (the working directory is on
``sys.path``) and would load every module twice under two names; these tests keep that from creeping back.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("aggregation", "ingest", "quality", "store", "jobs", "api")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _python_files() -> list[Path]:
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: cannot list the tracked sources")
    return [ROOT / name for name in tracked.stdout.split()]


def test_every_package_folder_is_installed_under_crowdqa() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    on_disk = {
        "crowdqa." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == on_disk
    assert setuptools["package-dir"] == {f"crowdqa.{folder}": folder for folder in FOLDERS}


def test_no_source_imports_a_bare_top_level_name() -> None:
    offenders = []
    for path in _python_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names
                          if name.split(".")[0] in FOLDERS]
    assert offenders == []


def test_the_command_line_runs_from_anywhere(tmp_path: Path) -> None:
    """The entry point resolves through the installed mapping, not through the checkout on sys.path."""
    done = subprocess.run([sys.executable, "-c", "import crowdqa.api.cli, crowdqa.aggregation; "
                           "print(crowdqa.api.cli.__file__)"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT / "api" / "cli.py"


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_folder_imports_as_one_module(folder: str) -> None:
    module = importlib.import_module(f"crowdqa.{folder}")
    assert Path(module.__file__).parent == ROOT / folder
