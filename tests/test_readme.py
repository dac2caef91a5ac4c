"""The README shows what really runs: its two commands, and the API example the suite executes."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_one():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    commands = [line.split("#", 1)[0].strip() for line in first_block if line.strip()]
    assert commands == ["bash scripts/run.sh", "bash scripts/test.sh"]
    assert readme.startswith("```sh\n")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert [line for line in ci.splitlines() if line and not line.startswith("#")] == ["exec bash scripts/test.sh"]


def test_readme_api_example_is_the_script_the_suite_runs():
    """tests/api/test_readme_example.py runs api/sample/README_example.sh; the README shows that very text."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- api-example:start -->", 1)[1].split("<!-- api-example:end -->", 1)[0]
    shown = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    script = (REPO / "api" / "sample" / "README_example.sh").read_text(encoding="utf-8")
    assert shown == "\n".join(line for line in script.splitlines() if not line.startswith("#!"))
