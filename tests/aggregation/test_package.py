"""Tests for the crowdqa.aggregation package as a whole: how its modules share code.

Rule (issue 32): a module's private names are its own. What several methods share (vote counting,
confusion tallies, normalisers, forward-backward, BIO rules) lives in a private module (``_votes``,
``_confusion``, ``_normalise``, ...) that says what it is, and every user imports it from there; no
module of aggregation/ imports a private name from a non-private module (a method's module).
"""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

from crowdqa import aggregation

PACKAGE = "crowdqa.aggregation"
SUBMODULES = {m.name for m in pkgutil.iter_modules(aggregation.__path__)}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_names_from_public_modules(path: Path) -> list[str]:
    """``file:line: module.name`` of each private name ``path`` takes from a non-private module of the package.

    Both spellings: ``from crowdqa.aggregation.mod import _name`` (or ``from .mod import _name``) and
    ``mod._name`` after ``import crowdqa.aggregation.mod as mod`` / ``from crowdqa.aggregation import mod``.
    Importing a private module itself (``from crowdqa.aggregation import _votes``) is allowed.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    aliases: dict[str, str] = {}  # local name -> a non-private module of the package
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = PACKAGE + ("." + module if module else "")
            if module != PACKAGE and not module.startswith(PACKAGE + "."):
                continue
            for alias in node.names:
                if module == PACKAGE and alias.name in SUBMODULES:  # a submodule, by name
                    if not _private(alias.name):
                        aliases[alias.asname or alias.name] = alias.name
                elif _private(alias.name) and not _private(module.rsplit(".", 1)[-1]):
                    found.append(f"{path.name}:{node.lineno}: {module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                last = alias.name.rsplit(".", 1)[-1]
                if alias.name.startswith(PACKAGE + ".") and alias.asname and not _private(last):
                    aliases[alias.asname] = last
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr)):
            found.append(f"{path.name}:{node.lineno}: {PACKAGE}.{aliases[node.value.id]}.{node.attr}")
    return found


def test_no_private_name_is_imported_from_a_method_module() -> None:
    """Oracle: the rule above, read from every source file of the package with ``ast``."""
    files = sorted(p for folder in aggregation.__path__ for p in Path(folder).rglob("*.py"))
    assert len(files) >= 20, f"found only {len(files)} source files under {list(aggregation.__path__)}"
    offenders = [hit for path in files for hit in _private_names_from_public_modules(path)]
    assert offenders == [], "move the shared kernel into a private module and import it from there:\n" + "\n".join(
        offenders)


def test_the_checker_sees_both_spellings(tmp_path: Path) -> None:
    """Oracle: a hand-written file with each kind of crossing, and the allowed imports beside them."""
    source = tmp_path / "example.py"
    source.write_text(
        "from crowdqa.aggregation.majority_vote import _votes, MajorityVote\n"
        "from .dawid_skene import _normalise\n"
        "from crowdqa.aggregation._votes import vote_counts\n"
        "from crowdqa.aggregation._forward_backward import _viterbi\n"
        "from crowdqa.aggregation import _votes, glad\n"
        "import crowdqa.aggregation.kos as kos\n"
        "glad._e_step, kos._iterate, _votes.break_ties\n"
    )
    assert _private_names_from_public_modules(source) == [
        "example.py:1: crowdqa.aggregation.majority_vote._votes",
        "example.py:2: crowdqa.aggregation.dawid_skene._normalise",
        "example.py:7: crowdqa.aggregation.glad._e_step",
        "example.py:7: crowdqa.aggregation.kos._iterate",
    ]
