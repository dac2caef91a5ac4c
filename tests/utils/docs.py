"""The documentation's pages (docs/, mkdocs.yml) and the README, for the tests that check what they say."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def page(name: str) -> str:
    """The Markdown source of one page, by its path under docs/ (``reference/formats.md``)."""
    return (DOCS / name).read_text(encoding="utf-8")


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def every_page() -> str:
    """Every written page of the site (the generated reference pages aside) and the README, one after another."""
    pages = sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)
    return "\n\n".join([readme(), *(p.read_text(encoding="utf-8") for p in pages)])
