"""MkDocs hooks: the reference pages made from the code at build time, and the files the site takes from the repository.

Nothing here is written by hand twice: each generated part reads the table the code itself reads.

* Methods: :data:`crowdqa.aggregation.registry.METHODS` (one page per method id: its entry, its parameters with
  their defaults and allowed values from the estimator's ``_parameter_constraints``, and its class docstring through
  mkdocstrings), and a summary table on the Methods page.
* Formats: :data:`crowdqa.ingest.formats.FORMATS` and :data:`~crowdqa.ingest.formats.UPLOAD_OPTIONS`.
* The command line: the ``--help`` of every command and subcommand, from :func:`crowdqa.api.cli.build_parser`.
* The REST API: every operation and schema of the app's OpenAPI document, as pages (read offline), and the
  document itself as ``reference/openapi.json``.
* Settings: :class:`crowdqa.store.settings.Settings`' fields.
* The benchmark plots: ``benchmarks/tables.py`` renders the tables into ``docs/benchmarks.md`` with image links to
  ``benchmarks/results/*.png``; those files are added to the site under the same path, so the links resolve.

A written page asks for a generated part with a line ``<!-- generated: NAME -->`` (:data:`PARTS`). The registry's
entries are read through their public names only, and fields an entry may not have are shown only when present.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[2]
#: How the memory estimate's parts grow (:mod:`crowdqa.aggregation.memory`), in the size names of the code.
MEMORY_PARTS = {"confusion": "n_workers × K²", "tokens": "n_tokens × K", "answers": "n_obs × K",
                "words": "vocabulary × K (at most n_tokens × K)", "sequential": "n_workers × K³",
                "pairs": "annotator pairs × K²"}


#: The registry's data kinds (``DATA_KINDS``), in words.
KIND_WORDS = {"typed-bio": "BIO labels with several entity types", "spans": "span labels of one type",
              "categorical": "categorical answers"}


def _cell(text: object) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _text(text: object) -> str:
    """Free text (a docstring's or a schema's description) for a table cell: square brackets are not links."""
    return _cell(text).replace("[", "\\[").replace("]", "\\]")


def _prose(text: str) -> str:
    """A description of several lines as a paragraph: square brackets are not links."""
    return text.strip().replace("[", "\\[").replace("]", "\\]")


def _code(value: object) -> str:
    """A value as a job's JSON writes it (``null``, ``true``, ``"viterbi"``), else as Python shows it."""
    try:
        return f"`{json.dumps(value)}`"
    except TypeError:
        return f"`{value!r}`"


# ------------------------------------------------------------------------------------------------------- methods
def _entries() -> dict[str, Any]:
    from crowdqa.aggregation.registry import METHODS

    return dict(METHODS)


def _cost_order() -> list[str]:
    """Method ids, cheapest first: the registry's own order when it keeps one, else compare's."""
    from crowdqa.aggregation import registry

    if hasattr(registry, "methods_by_cost"):
        return list(registry.methods_by_cost())
    from crowdqa.quality.compare import COST_ORDER

    return list(COST_ORDER)


def data_kinds(entry: Any) -> str:
    """What data a method takes, in words, from its entry's rules."""
    low, high = getattr(entry, "classes", (1, None))
    if (low, high) == (2, 2):
        classes = "binary labels only"
    elif high is None:
        classes = f"{low} or more classes" if low > 1 else "any number of classes"
    else:
        classes = f"{low} to {high} classes"
    kinds = "token sequences (span labels in documents) only" if getattr(entry, "sequences", False) \
        else "span labels and categorical answers"
    needs = "; needs the experts' labels in the fit (`use_experts`)" if getattr(entry, "experts", False) else ""
    return f"{kinds}; {classes}{needs}"


def _memory(method: str, entry: Any) -> dict[str, float] | None:
    memory = getattr(entry, "memory", None)
    if memory is None:
        from crowdqa.aggregation import memory as estimates

        memory = getattr(estimates, "FIT_ARRAYS", {}).get(method)
    return None if memory is None else dict(memory)


def memory_model(method: str, entry: Any) -> str:
    memory = _memory(method, entry)
    if not memory:
        return "not estimated"
    terms = [f"{n:g} × {MEMORY_PARTS.get(part, part)}" for part, n in memory.items() if n]
    return " + ".join(terms) + " float64 values"


def _constraint(constraints: list) -> str:
    """The values a parameter takes, in words, from its ``_parameter_constraints`` entry."""
    described = []
    for c in constraints:
        if c is None:
            described.append("null")
        elif isinstance(getattr(c, "values", None), tuple):
            described.append("one of " + ", ".join(f"`{v}`" for v in c.values))
        elif hasattr(c, "describe"):
            described.append(_text(c.describe()))
        else:
            described.append(_text(repr(c)))
    return " or ".join(d for d in described if d) or "any value"


def parameters_table(cls: type) -> str:
    defaults = cls().get_params()
    constraints = getattr(cls, "_parameter_constraints", {})
    rows = ["| parameter | default | allowed |", "|---|---|---|"]
    for name, default in defaults.items():
        rows.append(f"| `{name}` | {_cell(_code(default))} | {_cell(_constraint(constraints.get(name, [])))} |")
    return "\n".join(rows)


def methods_summary() -> str:
    from crowdqa.aggregation.registry import aggregator_class

    entries, order = _entries(), _cost_order()
    rows = ["| method | estimator | data | cost rank | page |", "|---|---|---|---|---|"]
    for method, entry in entries.items():
        rank = order.index(method) + 1 if method in order else "–"
        cls = aggregator_class(method)
        rows.append(f"| `{method}` | `{cls.__name__}` | {_cell(data_kinds(entry))} | {rank} of {len(order)} | "
                    f"[{method}](methods/{method}.md) |")
    return ("Every method of the registry (`aggregation/registry.py`), in its order. The cost rank is the order in "
            "which `crowdqa compare` prefers simpler methods (1 is the cheapest).\n\n" + "\n".join(rows))


def method_page(method: str) -> str:
    from crowdqa.aggregation.registry import aggregator_class

    entry, order = _entries()[method], _cost_order()
    cls = aggregator_class(method)
    first_line = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
    facts = [("method id", f"`{method}` (a job's `method`, `crowdqa aggregate --method`)"),
             ("estimator", f"`{cls.__module__}.{cls.__name__}`"),
             ("data", data_kinds(entry)),
             ("cost rank", f"{order.index(method) + 1} of {len(order)} (compare's order, cheapest first: "
                           f"{', '.join(order)})" if method in order else "not ranked"),
             ("memory of a fit", memory_model(method, entry))]
    default_for = getattr(entry, "default_for", ())
    if default_for:
        facts.append(("`auto` without experts", "the method it runs on " + ", ".join(KIND_WORDS.get(k, k)
                                                                                for k in default_for)))
    table = "\n".join(f"- **{name}**: {_cell(value)}" for name, value in facts)
    return (f"# `{method}`: {cls.__name__}\n\n{first_line}\n\n{table}\n\n"
            f"## Parameters\n\nA job's `params`, `crowdqa aggregate --params` (JSON). Each is checked before "
            f"anything is queued or read; a value outside its set is refused naming it.\n\n{parameters_table(cls)}\n\n"
            f"## The model\n\nThe estimator's docstring: its model, parameters, fitted attributes and references.\n\n"
            f"::: {cls.__module__}.{cls.__name__}\n    options:\n      show_root_heading: false\n"
            f"      show_root_toc_entry: false\n      heading_level: 3\n      members: [fit, predict, predict_proba]\n")


# ------------------------------------------------------------------------------------------------------- formats
def formats_tables() -> str:
    from crowdqa.ingest.formats import FORMATS, UPLOAD_OPTIONS

    rows = ["| format | what it is | options | upload | written | read back as an aggregate "
            "| experts in the same file |", "|---|---|---|---|---|---|---|"]
    for name, f in FORMATS.items():
        options = ", ".join(f"`{o}`" for o in f.options) or "–"
        writer = f"yes (`{f.writer.suffix}`{', a folder' if f.writer.folder else ''})" if f.writer else "–"
        rows.append(f"| `{name}` | {_text(f.description)} | {options} | {'yes' if f.reader else '–'} | {writer} | "
                    f"{'yes' if f.aggregate else '–'} | {'yes' if f.experts else '–'} |")
    options = ["| option | API form field | command line | values | default | what it does |",
               "|---|---|---|---|---|---|"]
    for o in UPLOAD_OPTIONS:
        values = ", ".join(f"`{c}`" for c in o.choices) or ("a switch" if o.type is bool else f"`{o.metavar}`")
        flag = "--" + o.name.replace("_", "-")
        options.append(f"| `{o.name}` | {'`' + o.name + '`' if o.client else '– (a `docs` zip)'} | `{flag}` | "
                       f"{values} | {_cell(_code(o.default)) if o.default is not None else '–'} | {_text(o.help)} |")
    return ("Made from `ingest/formats.py`, the table the command line, the API's upload form and the dashboard are "
            "made from.\n\n" + "\n".join(rows) + "\n\nThe upload options besides the file, its format and its role "
            "(`crowd` or `expert`):\n\n" + "\n".join(options))


# --------------------------------------------------------------------------------------------------- command line
def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    for action in parser._actions:  # argparse keeps its subcommands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def cli_reference() -> str:
    from crowdqa.api.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # argparse wraps --help to the terminal's width: one width for every build
    try:
        top = build_parser()
        parts = ["Every command's `--help`, made from its parser (`api/cli.py`, `api/commands/`).", "",
                 "| command | what it does |", "|---|---|"]
        commands = _subcommands(top)
        parts += [f"| [`crowdqa {name}`](#crowdqa-{name}) | {_cell(help_line)} |"
                  for name, (_, help_line) in commands.items()]
        for name, (parser, help_line) in commands.items():
            parts += ["", f"### `crowdqa {name}` {{#crowdqa-{name}}}", "", _cell(help_line), "",
                      "```text", parser.format_help().rstrip(), "```"]
            for sub_name, (sub, sub_help) in _subcommands(parser).items():
                parts += ["", f"#### `crowdqa {name} {sub_name}`", "", _cell(sub_help), "",
                          "```text", sub.format_help().rstrip(), "```"]
        return "\n".join(parts)
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


# ------------------------------------------------------------------------------------------------------- REST API
def openapi_document() -> dict:
    from crowdqa.api.main import app

    return app.openapi()


def _schema_type(schema: dict) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return f"[{name}](api-schemas.md#{name.lower()})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(_schema_type(s) for s in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    return kind if isinstance(kind, str) else " or ".join(kind)


def api_operations(document: dict | None = None) -> str:
    document = openapi_document() if document is None else document
    by_tag: dict[str, list[str]] = {}
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            text = [f"### `{method.upper()} {path}`", "", _text(op.get("summary", "")), ""]
            if op.get("description"):
                text += [_prose(op["description"]), ""]
            params = op.get("parameters", [])
            if params:
                text += ["| parameter | in | type | required | what it is |", "|---|---|---|---|---|"]
                text += [f"| `{p['name']}` | {p['in']} | {_cell(_schema_type(p.get('schema', {})))} | "
                         f"{'yes' if p.get('required') else 'no'} | {_text(p.get('description', ''))} |"
                         for p in params]
                text.append("")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                text += [f"Body ({media}): {_schema_type(content.get('schema', {}))}", ""]
            text += ["| status | meaning |", "|---|---|"]
            text += [f"| {code} | {_text(r.get('description', ''))} |" for code, r in op.get("responses", {}).items()]
            by_tag.setdefault((op.get("tags") or ["other"])[0], []).append("\n".join(text))
    parts = [f"Every operation of the OpenAPI document ({document['info']['title']} "
             f"{document['info'].get('version', '')}, OpenAPI {document.get('openapi', '')}), grouped by tag. The "
             "document itself: [openapi.json](openapi.json); a running server serves it at `/openapi.json`, and "
             "Swagger UI at `/docs`."]
    for tag, operations in by_tag.items():
        parts += [f"## {tag}", *operations]
    return "\n\n".join(parts)


def api_schemas(document: dict | None = None) -> str:
    document = openapi_document() if document is None else document
    parts = ["The request and response bodies of the [REST API](api-operations.md), from the OpenAPI document."]
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        text = [f"## {name} {{#{name.lower()}}}", ""]
        if schema.get("description"):
            text += [_prose(schema["description"]), ""]
        properties = schema.get("properties", {})
        if properties:
            required = set(schema.get("required", []))
            text += ["| field | type | required | what it is |", "|---|---|---|---|"]
            text += [f"| `{field}` | {_cell(_schema_type(s))} | {'yes' if field in required else 'no'} | "
                     f"{_text(s.get('description', ''))} |" for field, s in properties.items()]
        elif "enum" in schema:
            text.append("One of " + ", ".join(f"`{v}`" for v in schema["enum"]) + ".")
        parts.append("\n".join(text))
    return "\n\n".join(parts)


# ------------------------------------------------------------------------------------------------------- settings
def settings_table() -> str:
    from crowdqa.store.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    rows = ["| environment variable | type | default | what it sets |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        annotation = getattr(field.annotation, "__name__", None) or str(field.annotation).replace("typing.", "")
        default = field.default
        shown = "–" if default is None else f"`{default:,}`" if isinstance(default, int) and not isinstance(
            default, bool) else _code(str(default) if isinstance(default, Path) else default)
        rows.append(f"| `{(prefix + name).upper()}` | {_cell(annotation)} | {_cell(shown)} | "
                    f"{_text(field.description or '')} |")
    return "Made from `store/settings.py` (`Settings`): every setting, its type and default.\n\n" + "\n".join(rows)


#: ``<!-- generated: NAME -->`` in a written page -> what replaces it.
PARTS: dict[str, Callable[[], str]] = {
    "methods": methods_summary,
    "formats": formats_tables,
    "cli": cli_reference,
    "settings": settings_table,
}


# ---------------------------------------------------------------------------------------------------- the hooks
def on_config(config):
    """Put each method's page under Methods in the navigation (the registry decides which pages exist)."""
    def expand(items: list) -> list:
        out = []
        for item in items:
            if isinstance(item, dict):
                (title, value), = item.items()
                if value == "reference/methods.md":
                    value = ["reference/methods.md", *(f"reference/methods/{m}.md" for m in _entries())]
                elif isinstance(value, list):
                    value = expand(value)
                item = {title: value}
            out.append(item)
        return out

    config["nav"] = expand(config["nav"] or [])
    return config


def on_files(files: Files, config) -> Files:
    """Add the generated pages, the OpenAPI document and the benchmark plots to the site."""
    document = openapi_document()
    generated = {f"reference/methods/{m}.md": method_page(m) for m in _entries()}
    generated["reference/api-operations.md"] = "# REST API: every operation\n\n" + api_operations(document)
    generated["reference/api-schemas.md"] = "# REST API: the schemas\n\n" + api_schemas(document)
    for uri, content in generated.items():
        files.append(File.generated(config, uri, content=content))
    files.append(File.generated(config, "reference/openapi.json", content=json.dumps(document, indent=1)))
    for png in sorted((REPO / "benchmarks" / "results").glob("*.png")):
        files.append(File(f"benchmarks/results/{png.name}", src_dir=str(REPO), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files


def _mathml():
    """``mathml`` of the griffe extension beside this file (one converter for docstrings and pages)."""
    spec = importlib.util.spec_from_file_location("docs_hooks_rst_docstrings", Path(__file__).with_name(
        "rst_docstrings.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.mathml


#: ``\\( ... \\)`` (inline) and ``\\[ ... \\]`` (display) in the written pages of docs/explanation/.
PAGE_MATH = re.compile(r"\\\((?P<inline>.+?)\\\)|\\\[(?P<display>.+?)\\\]", flags=re.S)


def page_math(markdown: str) -> str:
    """The LaTeX of a written page as MathML, drawn by the browser (no script, no network)."""
    mathml = _mathml()
    return PAGE_MATH.sub(lambda m: mathml(m["inline"]) if m["inline"] is not None
                         else f'<div class="math">{mathml(m["display"], display=True)}</div>', markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each ``<!-- generated: NAME -->`` line with its part; draw the explanation pages' equations."""
    if page.file.src_uri.startswith("explanation/"):
        markdown = page_math(markdown)
    for name, make in PARTS.items():
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown
