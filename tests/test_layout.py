"""The repository's layout: one import package, ``crowdqa``, whose subpackages are the design card's top-level folders.

The folders ``aggregation/``, ``ingest/``, ``quality/``, ``store/``, ``jobs/`` and ``api/`` install as
``crowdqa.aggregation`` and so on. ``src/crowdqa/`` is a real package folder whose subpackages are symbolic
links to those folders, so ``pip install -e .`` puts one plain path (``src``) on ``sys.path``: editors
(jedi) follow it, where the earlier ``package-dir`` mapping was served by an import hook they cannot see,
and nothing else lands at the top of ``sys.path``. From a checkout the bare names would still import (the
working directory is on ``sys.path``) and would load every module twice under two names; these tests keep
that from creeping back, and check what a wheel (``pip install .``) holds.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("aggregation", "ingest", "quality", "store", "jobs", "api")
PACKAGE = ROOT / "src" / "crowdqa"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _tracked(*paths: str) -> list[str]:
    """The files git tracks (a symbolic link is one entry), or skip where this is not a git checkout."""
    done = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout: cannot list the tracked sources")
    return [name for name in done.stdout.split("\0") if name]


def _python_files() -> list[Path]:
    return [ROOT / name for name in _tracked("*.py")]


def _installed_from_this_checkout() -> None:
    aggregation = importlib.import_module("crowdqa.aggregation")
    if Path(aggregation.__file__).resolve().parent != ROOT / "aggregation":
        pytest.skip(f"crowdqa is imported from {aggregation.__file__}, not from this checkout: run pip install -e .")


def test_every_package_folder_is_installed_under_crowdqa() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    on_disk = {
        "crowdqa." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == on_disk | {"crowdqa"}
    assert setuptools["package-dir"] == {"": "src"}


def test_the_package_folder_holds_only_links_to_the_top_level_folders() -> None:
    """``src/crowdqa/<folder>`` is a relative link to ``<folder>/`` (it works in any clone), and nothing else
    lives in ``src/`` but the package's ``__init__.py``: the code stays in the design card's folders."""
    assert sorted(_tracked("src")) == sorted(["src/crowdqa/__init__.py", *(f"src/crowdqa/{f}" for f in FOLDERS)])
    for folder in FOLDERS:
        link = PACKAGE / folder
        assert link.is_symlink(), f"{link} is not a symbolic link"
        assert os.readlink(link) == f"../../{folder}"
        assert link.resolve() == ROOT / folder


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
    """The entry point resolves through the installed package, not through the checkout on sys.path."""
    done = subprocess.run([sys.executable, "-c", "import crowdqa.api.cli, crowdqa.aggregation; "
                           "print(crowdqa.api.cli.__file__)"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == ROOT / "api" / "cli.py"


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_folder_imports_as_one_module(folder: str) -> None:
    module = importlib.import_module(f"crowdqa.{folder}")
    assert Path(module.__file__).resolve().parent == ROOT / folder


_LOAD_EVERYTHING = """
import importlib, importlib.util, json, os, pkgutil, sys
import crowdqa
names = [m.name for m in pkgutil.walk_packages(crowdqa.__path__, "crowdqa.")]
for name in names:
    importlib.import_module(name)
files = {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if path and os.path.realpath(path).startswith(OURS):
        files.setdefault(os.path.realpath(path), []).append(name)
bare = {f: importlib.util.find_spec(f) is not None for f in FOLDERS}
print(json.dumps({"imported": len(names), "twice": {f: n for f, n in files.items() if len(n) > 1}, "bare": bare}))
"""


def test_no_module_is_importable_under_two_names(tmp_path: Path) -> None:
    """Every module of the package imported in one process is one module object per file, and the install puts
    none of the bare folder names (``aggregation``, ``api``, ...) on ``sys.path``: a path-based editable install
    of the repository root would."""
    ours = tuple(f"{ROOT / folder}{os.sep}" for folder in FOLDERS)
    done = subprocess.run([sys.executable, "-c", f"FOLDERS, OURS = {FOLDERS!r}, {ours!r}" + _LOAD_EVERYTHING],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["imported"] > 100
    assert found["twice"] == {}
    assert found["bare"] == dict.fromkeys(FOLDERS, False)


def _definition_line(path: Path, pattern: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if re.match(pattern, line))


@pytest.mark.parametrize(("code", "file", "pattern"), [
    ("import crowdqa.aggregation\ncrowdqa.aggregation.DawidSkene", "aggregation/dawid_skene.py", r"class DawidSkene\b"),
    ("from crowdqa.aggregation import HMMCrowd\nHMMCrowd", "aggregation/hmm_crowd.py", r"class HMMCrowd\b"),
    ("from crowdqa.quality.agreement import cohen_kappa\ncohen_kappa", "quality/agreement.py", r"def cohen_kappa\b"),
    ("import crowdqa.api.deps\ncrowdqa.api.deps.OwnedJobDep", "api/deps.py", r"OwnedJobDep = "),
], ids=["aggregation", "aggregation-from", "quality", "api"])
@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_jump_to_definition(code: str, file: str, pattern: str, where: str, tmp_path: Path) -> None:
    """jedi (the engine behind most editors' Python support), run on this environment's interpreter as an editor
    runs it, finds the definition a ``crowdqa.*`` name refers to, in an editor opened on the checkout or on
    a script elsewhere. Oracle: the line of the definition in the file."""
    jedi = pytest.importorskip("jedi")
    _installed_from_this_checkout()
    environment = jedi.create_environment(sys.executable, safe=False)
    project = jedi.Project(ROOT if where == "checkout" else tmp_path)
    script = jedi.Script(code, path=project.path / "scratch.py", project=project, environment=environment)
    line, column = len(code.splitlines()), len(code.splitlines()[-1])
    expected = (ROOT / file, _definition_line(ROOT / file, pattern))
    found = [(Path(d.module_path).resolve(), d.line) for d in script.goto(line, column, follow_imports=True)]
    assert found == [expected]
    if pattern.startswith(("class", "def")):
        inferred = [(Path(d.module_path).resolve(), d.line) for d in script.infer(line, column)]
        assert inferred == [expected]


def test_aggregation_lists_its_lazy_names_for_editors() -> None:
    """``crowdqa.aggregation`` imports its classes on first use (PEP 562 ``__getattr__``), which editors cannot
    run; its ``if TYPE_CHECKING:`` block names the same classes in the same modules for them."""
    aggregation = importlib.import_module("crowdqa.aggregation")
    tree = ast.parse(Path(aggregation.__file__).read_text(encoding="utf-8"))
    block = next((node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"),
                 ast.If(test=ast.Constant(True), body=[], orelse=[]))
    written = {alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom)
               for alias in node.names}
    missing = [f"from {module} import {name} as {name}" for name, module in aggregation._HOME.items()
               if written.get(name) != module]
    assert written == aggregation._HOME, f"write in the TYPE_CHECKING block of aggregation/__init__.py: {missing}"


def test_the_wheel_holds_every_module_once_and_runs(tmp_path: Path) -> None:
    """``pip install .`` builds a wheel: it holds each tracked file of the six folders once, under ``crowdqa/``,
    and the ``crowdqa`` command installed from it alone aggregates the bundled sample."""
    tracked = _tracked()
    source = tmp_path / "source"
    for name in tracked:  # a copy of the checkout, so the build leaves nothing in it
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_symlink():
            os.symlink(os.readlink(ROOT / name), source / name)
        elif (ROOT / name).is_file():
            shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
                            str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("crowdqa-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert len(names) == len(set(names))
    expected = {f"crowdqa/{name}" for name in tracked if name.split("/")[0] in FOLDERS} | {"crowdqa/__init__.py"}
    assert {name for name in names if not name.startswith("crowdqa-")} == expected

    target = tmp_path / "site"
    installed = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}  # before site-packages, and so before this checkout's src
    sample = target / "crowdqa" / "api" / "sample" / "crowd.jsonl"
    run = subprocess.run([str(target / "bin" / "crowdqa"), "aggregate", str(sample), "--format", "spans-jsonl",
                          "--method", "mv", "--output", str(tmp_path / "agg.jsonl"), "--quiet"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "agg.jsonl").read_text().count("\n") > 0
    where = subprocess.run([sys.executable, "-c", "import crowdqa.aggregation.dawid_skene as m; print(m.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert Path(where.stdout.strip()) == target / "crowdqa" / "aggregation" / "dawid_skene.py"


def test_no_test_file_is_named_after_an_issue() -> None:
    """A test file is named after the module it tests (``tests/aggregation/test_dawid_skene.py``), not after the
    issue that asked for it: an issue number says when a test was written, not what it tests (issue 32)."""
    named_after_issues = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_issue*"))
    assert named_after_issues == []
