"""No function in quality/ or jobs/ longer than 80 lines (issue 32): a function a reader takes in at once.

Lengths are counted by :mod:`ast` from a function's ``def`` line to its last line, docstring included; nested
functions and methods are counted on their own (and inside the function that holds them).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 80


def long_functions(package: str, *, root: Path = ROOT, max_lines: int = MAX_LINES) -> list[str]:
    """``path:line name (n lines)`` of every function of ``root / package`` longer than ``max_lines``."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > max_lines:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_no_function_in_quality_is_over_80_lines() -> None:
    assert long_functions("quality") == []


def test_no_function_in_jobs_is_over_80_lines() -> None:
    assert long_functions("jobs") == []


def test_the_check_sees_a_long_function(tmp_path) -> None:
    """Oracle: an 81-line function is found, an 80-line one is not."""
    body = "\n".join(f"    x{i} = {i}" for i in range(79))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(f"def long():\n{body}\n    return 0\n\n\ndef short():\n{body}\n")
    assert long_functions("pkg", root=tmp_path) == ["pkg/m.py:1 long (81 lines)"]
