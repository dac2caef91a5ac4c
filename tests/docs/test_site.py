"""The documentation site builds with ``mkdocs build --strict`` (no broken link or anchor, no missing reference, no
warning) and without the network, and its pages load nothing from another origin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.utils.docs import REPO


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built strictly into a temporary folder; any attempt to reach the network fails (a proxy that
    refuses every connection)."""
    out = tmp_path_factory.mktemp("site")
    refuse = "http://127.0.0.1:9"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HTTP_PROXY": refuse, "HTTPS_PROXY": refuse,
           "http_proxy": refuse, "https_proxy": refuse, "NO_PROXY": "", "no_proxy": ""}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def test_the_site_builds_strict_with_every_section(site):
    for page in ("index.html", "tutorials/first-job/index.html", "how-to/choose-a-method/index.html",
                 "reference/methods/index.html", "explanation/architecture/index.html", "benchmarks/index.html"):
        assert (site / page).is_file(), page
    benchmarks = (site / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert "PICO / EBM-NLP aggregation study" in benchmarks
    for image in re.findall(r'<img[^>]* src="([^"]+)"', benchmarks):
        assert (site / "benchmarks" / image).resolve().is_file(), image


def test_no_page_loads_anything_from_another_origin(site):
    """Scripts, stylesheets, fonts and images come from the site itself (it is read offline); links may point out."""
    outside = []
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        loaded = re.findall(r'<(?:script|img|iframe|source)\b[^>]*\bsrc="([^"]+)"', text)
        loaded += [re.search(r'\bhref="([^"]+)"', tag)[1] for tag in re.findall(r"<link\b[^>]*>", text)
                   if re.search(r'\brel="(?:stylesheet|preload|icon)"', tag) and 'href="' in tag]
        outside += [(str(html.relative_to(site)), url) for url in loaded if "//" in url]
    assert outside == []
