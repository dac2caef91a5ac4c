"""The import arrows between packages (DESIGN.md): which of our packages each package may import, checked on the
sources.

Every import counts, at the top of a module or inside a function: a function-local import is still an
arrow, only a later one. The entry points (``api``: CLI, API, dashboard) reach the other packages through the use
cases of ``jobs`` and the rows of ``store``; ``quality`` computes on ``aggregation``'s corpus and nothing else of
ours; ``store`` keeps corpora, method ids and the typed report, so it may name their types; nothing imports
``api``. The one schema module the CLI and the API both render from is ``ingest.formats``: the table of formats
and upload options that the API's form and the command line's flags are made from.

Start-up (issue 14) is a property of the same graph, checked in a fresh interpreter by the modules it has
loaded, not by a clock: ``crowdqa --help`` and every ``crowdqa COMMAND --help`` build their parser from
light tables and load the numerical stack, the store's ORM, the web stack and the queue only when a
command runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from crowdqa.api.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[1]

#: package -> the packages (or single modules) of ours it may import, besides itself.
ALLOWED: dict[str, frozenset[str]] = {
    "aggregation": frozenset(),
    "quality": frozenset({"aggregation"}),
    "ingest": frozenset({"aggregation"}),
    "store": frozenset({"aggregation.corpus", "aggregation.registry", "quality.report_model"}),
    "jobs": frozenset({"aggregation", "quality", "ingest", "store"}),
    "api": frozenset({"jobs", "store", "ingest.formats"}),
}


def imports_of(package: str, root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, imported module without the ``crowdqa.`` prefix) of every import of ours in ``package``."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # ``from crowdqa.quality import report`` imports a module named by the alias
                names = [node.module] if node.module != "crowdqa" else [f"crowdqa.{a.name}" for a in node.names]
            else:
                continue
            found += [(str(path.relative_to(root)), node.lineno, name.removeprefix("crowdqa."))
                      for name in names if name.startswith("crowdqa.")]
    return found


def _allowed(package: str, module: str) -> bool:
    if module.split(".")[0] == package:
        return True
    return any(module == rule or module.startswith(rule + ".") for rule in ALLOWED[package])


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_the_design_allows(package: str) -> None:
    wrong = [f"{where}:{line}: imports crowdqa.{module}" for where, line, module in imports_of(package)
             if not _allowed(package, module)]
    assert wrong == [], f"{package} may import only {sorted(ALLOWED[package])}"


def private_imports(package: str, root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, ``module.name``) of every private name (a leading underscore) ``package`` imports from another
    module of ours. A private module of a package (``ingest._inflate``) is a module of that package's own; a private
    name is one module's own, so another module uses it only once it is public (documented, in ``__all__``)."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("crowdqa."):
                found += [(str(path.relative_to(root)), node.lineno, f"{node.module}.{a.name}")
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return found


@pytest.mark.parametrize("package", sorted(set(ALLOWED) - {"aggregation"}))
def test_no_module_imports_anothers_private_name(package: str) -> None:
    """Outside aggregation/ (whose private kernel modules are being reshaped), no module reaches into another's
    privates."""
    assert private_imports(package) == []


def test_the_private_name_rule_catches_one(tmp_path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "m.py").write_text("from crowdqa.api.commands.keys import _session, UserError\n"
                                           "from crowdqa.ingest._inflate import BoundedZip\n")
    assert private_imports("api", tmp_path) == [("api/m.py", 1, "crowdqa.api.commands.keys._session")]


def test_the_rule_catches_a_wrong_arrow(tmp_path) -> None:
    """Oracle: a function-local import of ingest in quality, and jobs importing api, are both reported."""
    (tmp_path / "quality").mkdir()
    (tmp_path / "quality" / "bad.py").write_text("def f():\n    from crowdqa.ingest import read_corpus\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "bad.py").write_text("import crowdqa.api.main\nfrom crowdqa import store\n")
    assert [(m, _allowed("quality", m)) for _, _, m in imports_of("quality", tmp_path)] == [("ingest", False)]
    assert [(m, _allowed("jobs", m)) for _, _, m in imports_of("jobs", tmp_path)] == [("api.main", False),
                                                                                      ("store", True)]


#: What no ``--help`` may load.
HEAVY = frozenset({"numpy", "scipy", "pandas", "pyarrow", "sqlalchemy", "sqlmodel", "pydantic", "fastapi",
                   "starlette", "uvicorn", "rq", "redis"})


def loaded_by(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter has loaded after ``crowdqa *argv`` (help on stdout, the list on stderr)."""
    code = ("import sys\nfrom crowdqa.api.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sys.modules), file=sys.stderr)")
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True).stderr.split())


@pytest.mark.parametrize("argv", [["--help"]] + [[name, "--help"] for name in COMMANDS],
                         ids=lambda argv: " ".join(argv))
def test_help_loads_no_heavy_module(argv: list[str]) -> None:
    assert HEAVY & loaded_by(argv) == set()


def test_the_help_check_sees_a_heavy_command() -> None:
    """Oracle: running a command (not its help) loads numpy, so the check above can fail."""
    assert "numpy" in loaded_by(["sample-size", "--precision", "0.8", "--recall", "0.7", "--frequency", "0.1",
                                 "--half-width", "0.05"])


def test_review_help_lists_the_rules_own_choices() -> None:
    """``crowdqa review`` writes the rules' choices again so that its ``--help`` loads no rules, and the API's
    request model as Literal types; all must agree with the rules' own tuples."""
    from typing import get_args

    from crowdqa.api.commands import review as command
    from crowdqa.api.routes import review as route
    from crowdqa.quality import review_rules as rules

    expected = (rules.METRICS, rules.AGAINST, rules.DECIDE_BY)
    assert (command.METRICS, command.AGAINST, command.DECIDE_BY) == expected
    assert tuple(get_args(t) for t in (route.Metric, route.Against, route.DecideBy)) == expected


def test_table_and_reference_help_list_the_reports_own_keys() -> None:
    """``--sort`` and ``--reference`` write the report's keys again in their help so that ``--help`` loads no
    report code (numpy); the lists must agree with ``quality.report.TABLE_SORT_KEYS`` and
    ``quality.references.RULES``."""
    import argparse
    import re

    from crowdqa.api.commands import aggregate, report, route
    from crowdqa.quality.references import RULES
    from crowdqa.quality.report import TABLE_SORT_KEYS

    for command in (aggregate, report, route):
        parser = argparse.ArgumentParser()
        command.register(parser.add_subparsers())
        sub = next(iter(parser._subparsers._group_actions[0].choices.values()))  # noqa: SLF001 - argparse's own
        helps = {a.dest: a.help for a in sub._actions}  # noqa: SLF001
        if command is not route:  # route prints no worker table
            listed = re.findall(r"[a-z_0-9]+", helps["sort"].split(";")[0].split(":", 1)[1])
            assert [w for w in listed if w not in ("worst", "first", "or")] == list(TABLE_SORT_KEYS), command.__name__
        named = set(re.findall(r"[a-z_]+", helps["reference"].split("(")[0]))
        assert set(RULES) <= named, command.__name__
