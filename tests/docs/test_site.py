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


def _html(site: Path, page: str) -> str:
    import html

    return html.unescape((site / page / "index.html").read_text(encoding="utf-8"))


def test_the_reference_shows_every_method_format_command_endpoint_and_setting(site):
    """Issue 45: the reference is made from the code, so it lists what the code has, all of it."""
    from crowdqa.aggregation.registry import METHODS, aggregator_class
    from crowdqa.api.cli import COMMANDS
    from crowdqa.api.main import app
    from crowdqa.ingest.formats import FORMATS, UPLOAD_OPTIONS
    from crowdqa.store.settings import Settings

    methods = _html(site, "reference/methods")
    for method in METHODS:
        page = _html(site, f"reference/methods/{method}")
        cls = aggregator_class(method)
        assert f"{method}: {cls.__name__}" in page and f'href="{method}/"' in methods, method
        for name in cls().get_params():
            assert f"<code>{name}</code>" in page, (method, name)
    formats = _html(site, "reference/formats")
    assert all(f"<code>{name}</code>" in formats for name in [*FORMATS, *(o.name for o in UPLOAD_OPTIONS)])
    cli = _html(site, "reference/cli")
    assert all(f"usage: crowdqa {name}" in cli for name in COMMANDS)
    operations = _html(site, "reference/api-operations")
    for path, ops in app.openapi()["paths"].items():
        assert all(f"{method.upper()} {path}" in operations for method in ops), path
    settings = _html(site, "reference/settings")
    assert all(f"CROWDQA_{name.upper()}" in settings for name in Settings.model_fields)
    assert (site / "reference" / "openapi.json").is_file()


def test_equations_are_mathml_and_no_sphinx_markup_is_left(site):
    """The docstrings' ``:math:`` and ``.. math::`` are drawn as MathML, their roles and references as text."""
    for method in ("ds", "glad", "kos"):
        page = _html(site, f"reference/methods/{method}")
        assert "<math" in page and ":math:" not in page and ".. math::" not in page, method
        assert ":func:" not in page and ":class:" not in page and ".. [1]" not in page, method
    metrics = _html(site, "explanation/metrics")
    assert metrics.count("<math") >= 5 and "\\(" not in metrics and "[1]_" not in metrics
