"""MkDocs hooks: pages and files the site takes from the repository at build time.

* The benchmark plots: ``benchmarks/tables.py`` renders the tables into ``docs/benchmarks.md`` with image links
  to ``benchmarks/results/*.png``; those files are added to the site under the same path, so the links resolve.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[2]


def on_files(files: Files, config) -> Files:
    """Add the benchmark plots of benchmarks/results to the site."""
    for png in sorted((REPO / "benchmarks" / "results").glob("*.png")):
        files.append(File(f"benchmarks/results/{png.name}", src_dir=str(REPO), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files
