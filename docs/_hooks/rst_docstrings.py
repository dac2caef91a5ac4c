"""A griffe extension: the reStructuredText of this package's numpydoc docstrings, as Markdown mkdocstrings renders.

The docstrings are written for Sphinx (STYLE.md): ``:math:`...``` and ``.. math::`` for the models' equations,
``:func:`` / ``:class:`` / ``:data:`` roles for names, ``.. [1]`` for references. mkdocstrings reads Markdown, where
those would show as raw markup (and an equation's underscores as emphasis). Each docstring is rewritten once, when
griffe loads it: equations become MathML (``latex2mathml``; browsers draw MathML themselves, so the site needs no
script and no network), roles become code spans, references and citations (``[1]_``) become numbered lines and ``[1]``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe
from latex2mathml.converter import convert

ROLE = re.compile(r":(?:func|class|data|mod|meth|attr|obj|exc|const|py:\w+):`~?([^`]+)`")
INLINE_MATH = re.compile(r":math:`([^`]+)`")
DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<first>.*)$")
REFERENCE = re.compile(r"^\.\. \[(\w+)\][ \t]+", flags=re.M)
CITATION = re.compile(r"\[(\w+)\]_")


def mathml(latex: str, *, display: bool = False) -> str:
    """One LaTeX expression as MathML on one line (raw HTML that Markdown passes through). Inline math is wrapped in
    a ``<span>``: a line that starts with an unknown tag such as ``<math>`` would be read as an HTML block."""
    markup = convert(" ".join(latex.split()), display="block" if display else "inline").replace("\n", "")
    return markup if display else f'<span class="math">{markup}</span>'


def _block_math(text: str) -> str:
    """Each ``.. math::`` directive (its expression on the same line and/or on the more-indented lines after it,
    blank lines between allowed) as one display equation."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        m = DIRECTIVE.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        latex, i = [m["first"]], i + 1
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(m["indent"])):
            latex.append(lines[i])
            i += 1
        out += [f"{m['indent']}<div class=\"math\">{mathml(' '.join(latex), display=True)}</div>", ""]
    return "\n".join(out)


def rst_to_markdown(text: str) -> str:
    """The Sphinx markup of a docstring as Markdown; text without it is returned unchanged."""
    text = _block_math(text)
    text = INLINE_MATH.sub(lambda m: mathml(m[1]), text)
    text = ROLE.sub(lambda m: f"`{m[1]}`", text)
    text = CITATION.sub(lambda m: f"\\[{m[1]}\\]", text)
    return REFERENCE.sub(lambda m: f"\n\\[{m[1]}\\] ", text)


class RstToMarkdown(griffe.Extension):
    """Rewrite every loaded object's docstring with :func:`rst_to_markdown`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
