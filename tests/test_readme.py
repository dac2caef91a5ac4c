"""The README shows what really runs: its two commands, and the API example the suite executes."""

from __future__ import annotations

import re
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


def test_readme_is_a_front_page_of_at_most_200_lines_whose_links_resolve():
    """Issue 45: the README is read in five minutes; the rest lives in docs/, which its links must reach."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme) if "://" not in t]
    assert len(targets) >= 15 and all(t.startswith("docs/") for t in targets), targets
    assert [t for t in targets if not (REPO / t).is_file()] == []


def missing_headline_numbers(readme: str, tables_text: str) -> list[str]:
    """The numbers of the README's headline table (thousands separators kept; the data-set descriptions' counts
    too) that the tables do not write as shown; the CoNLL data set's year aside."""
    section = readme.split("## Headline numbers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not line.startswith(("| what", "|---"))]
    numbers = [n for row in rows for n in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)*", row)]
    assert len(numbers) >= 15, numbers
    return [n for n in numbers if n != "2003"
            and not re.search(rf"(?<![\d.,]){re.escape(n)}(?![\d,]|\.\d)", tables_text)]


def test_readme_headline_numbers_are_in_the_rendered_benchmark_tables():
    """Each headline number is written, as shown, in the generated part of docs/benchmarks.md, which
    tests/benchmarks/test_meta.py holds equal to what benchmarks/results renders."""
    from benchmarks import tables

    generated = tables.PAGE.read_text(encoding="utf-8").split(tables.START, 1)[1].split(tables.END, 1)[0]
    assert missing_headline_numbers((REPO / "README.md").read_text(encoding="utf-8"), generated) == []


def test_the_headline_check_sees_a_wrong_number():
    """Oracle: a hand-made table; a figure off by one digit, or cut short, is reported, a written one is not."""
    readme = ("## Headline numbers\n\n| what | crowdqa | beside it |\n|---|---|---|\n"
              "| a (4,613 docs, 2003) | 0.735 and 0.736 | 5.7 s, 12 runs |\n"
              "| b | 1.1 1.2 1.3 1.4 1.5 1.6 | 2.1 2.2 2.3 2.4 2.5 |\n\n## Next\n")
    tables_text = "| 0.735 | 5.78 s | 4,613 | 12 | 1.1 1.2 1.3 1.4 1.5 1.6 2.1 2.2 2.3 2.4 2.5 |"
    assert missing_headline_numbers(readme, tables_text) == ["0.736", "5.7"]
