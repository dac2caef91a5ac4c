"""The documentation's behavioural facts that could silently go stale: the endpoints, the command lines' options,
the methods' parameters and choices, the settings' defaults and the upload options. Each check reads the page that
holds the fact (or every page, for facts spread over several) and the product's own tables (the OpenAPI document,
the argparse parsers, the estimators, Settings), so a renamed option or a changed default fails here instead of
leaving a false sentence. These checks read the README until the documentation site took its content over."""

from __future__ import annotations

import re
from pathlib import Path

from tests.utils.docs import every_page, page


def _route(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path.removeprefix("/api/v1"))


def named_endpoints(text: str) -> set[tuple[str, str]]:
    """``METHOD /path`` of every endpoint the text names in backticks; ``/api/...`` paths outside ``/api/v1`` are
    another service's (Label Studio's ``/api/tasks``)."""
    return {(m[1], _route(m[2])) for m in re.finditer(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`?\s]*)", text)
            if m[2].startswith("/api/v1/") or not m[2].startswith("/api/")}


def _api_operations() -> dict[tuple[str, str], set[str]]:
    from crowdqa.api.main import app

    return {(method.upper(), _route(path)): set(op.get("responses", {}))
            for path, ops in app.openapi()["paths"].items() if path.startswith("/api/v1") for method, op in ops.items()}


def test_the_pages_name_every_endpoint_and_only_endpoints_that_exist():
    operations = _api_operations()
    named = named_endpoints(every_page())
    assert named - set(operations) == set(), "the documentation names endpoints the API does not have"
    assert set(operations) - set(named_endpoints(page("reference/rest-api.md"))) == set(), (
        "endpoints the REST API page never names")


def test_the_endpoint_check_sees_a_wrong_path():
    """Oracle: a renamed path and a wrong method are reported; another service's /api path is not ours."""
    text = "`GET /jobs/{id}/reports`, `PUT /jobs/{id}`, `GET /jobs/{job_id}`, `GET /api/tasks`, `GET /api/v1/keys`"
    assert named_endpoints(text) - set(_api_operations()) == {("GET", "/jobs/{}/reports"), ("PUT", "/jobs/{}")}


def test_every_status_code_of_the_endpoint_table_is_in_the_openapi_document():
    """A row's codes (201, 409 naming the earlier upload, 422, ...) are among its endpoints' documented responses."""
    operations = _api_operations()
    rest_api = page("reference/rest-api.md")
    table = rest_api.split("| endpoint | what it does |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    assert len(table) >= 15
    wrong = []
    for row in table:
        endpoints = named_endpoints(row.split("|")[1])
        documented = set().union(*(operations.get(e, set()) for e in endpoints))
        wrong += [(sorted(endpoints), code) for code in set(re.findall(r"\b([2-5]\d\d)\b", row)) - documented]
    assert wrong == []


def unknown_options(text: str) -> list[tuple[str, str]]:
    """(command, option) for every ``--option`` of a ``crowdqa COMMAND [SUBCOMMAND] ...`` line or phrase of the
    text that the command's parser does not take (shell continuation lines joined)."""
    import argparse

    from crowdqa.api.cli import build_parser

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})  # noqa: SLF001

    top = commands(build_parser())
    wrong = []
    for m in re.finditer(r"crowdqa ([a-z-]+)((?: +[^\s`|;#&)]+)*)", text.replace("\\\n", " ")):
        if m[1] not in top:
            continue
        parser, words = top[m[1]], m[2].split()
        if words and words[0] in commands(parser):
            parser, words = commands(parser)[words[0]], words[1:]
        wrong += [(m[1], w.split("=")[0].rstrip(",.:")) for w in words if w.startswith("--")
                  and w.split("=")[0].rstrip(",.:") not in parser._option_string_actions]  # noqa: SLF001
    return wrong


def test_the_command_lines_of_every_page_use_options_the_commands_take():
    text = every_page()
    assert len(re.findall(r"crowdqa [a-z-]+ [^\n`]*--", text)) >= 30
    assert unknown_options(text) == []


def test_the_option_check_sees_a_misspelt_option():
    """Oracle: an option of another command, a misspelt one and a subcommand's are told apart."""
    text = ("crowdqa route a.jsonl --budget 5 --output n.csv --sort f1\n"
            "crowdqa aggregate a.csv --format categorical \\\n    --metod ds --output x.csv\n"
            "`crowdqa keys create --admin --expires-in DAYS` and `crowdqa blocked add X --reason r --project p`")
    assert unknown_options(text) == [("route", "--sort"), ("aggregate", "--metod")]


def documented_parameters(text: str) -> dict[str, dict[str, tuple[str, ...]]]:
    """method -> parameter -> the choices listed in parentheses (empty when none), from the Methods page's
    "Parameters (`params` of a job, ...)" paragraph."""
    paragraph = " ".join(text.split("is asked for):", 1)[1].split("Each class's docstring", 1)[0].split())
    found = {}
    for part in re.split(r"(?:^|; )(?=`[a-z-]+`: )", paragraph.rstrip(". ")):
        if not part:
            continue
        method, rest = re.match(r"`([a-z-]+)`: (.*)", part).groups()
        found[method] = {m[1]: tuple(re.findall(r"`([^`]+)`", m[2] or "")) if m[2] and "`" in m[2] and
                         re.fullmatch(r"\((?:`[^`]+`(?:, )?)+\)", m[2]) else ()
                         for m in re.finditer(r"`([a-z_0-9]+)`(?: (\([^)]*\)))?", rest)}
    return found


def test_the_methods_page_lists_each_methods_parameters_and_choices():
    """Names: the estimator's get_params; choices in parentheses: its Options constraint, as a set."""
    from crowdqa.aggregation._params import Options
    from crowdqa.aggregation.registry import METHODS, aggregator_class

    documented = documented_parameters(page("reference/methods.md"))
    assert set(documented) == set(METHODS)
    for method, params in documented.items():
        cls = aggregator_class(method)
        assert set(params) == set(cls().get_params()), method
        for name, choices in params.items():
            options = {v for c in cls._parameter_constraints[name] if isinstance(c, Options) for v in c.values}
            assert set(choices) <= options and (not choices or set(choices) == options), (method, name, choices)


def test_the_parameter_reader_reads_names_and_choices():
    text = ("is asked for): `mv`: `weights` (per annotator id), `tie_break` (`entity`, `lowest`); `kos`: `max_iter`,\n"
            "`random_state`. Each class's docstring")
    assert documented_parameters(text) == {"mv": {"weights": (), "tie_break": ("entity", "lowest")},
                                           "kos": {"max_iter": (), "random_state": ()}}


def documented_defaults(text: str) -> dict[str, str]:
    """``CROWDQA_NAME`` -> the default the text gives in the parentheses after it (``(20)``, ``(default 1 MiB:
    ...)``, ``(seconds, default 900: ...)``, ``(default `./crowdqa-data`)``), as written."""
    found = {}
    for m in re.finditer(r"`CROWDQA_(\w+)`\s*\(([^()]*)", text):
        inside = " ".join(m[2].split())
        value = re.match(r"(?:[^`]*?\bdefault )?`?(\./[\w-]+|\d[\d,.]*)`?(?: (KiB|MiB|GiB))?(?:[:;)\s]|$)", inside)
        if value is not None:
            found[m[1].lower()] = " ".join(filter(None, value.groups()))
        else:
            assert not re.search(r"\bdefault \d", inside), f"CROWDQA_{m[1]}: unread default in ({inside})"
    return found


def test_the_settings_defaults_of_every_page_are_the_settings():
    from crowdqa.store.settings import Settings

    units = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
    documented = {k: v for k, v in documented_defaults(every_page()).items() if k in Settings.model_fields}
    assert len(documented) >= 8
    for name, written in documented.items():
        default = Settings.model_fields[name].default
        number, _, unit = written.partition(" ")
        if isinstance(default, Path):
            assert Path(written) == default, name
        else:
            assert float(number.replace(",", "")) * units.get(unit, 1) == default, (name, written, default)


def test_the_defaults_reader_reads_each_way_of_writing_one():
    text = ("`CROWDQA_A` (20) and `CROWDQA_B` (default\n1 MiB: the largest), `CROWDQA_C` (seconds, default 900: x), "
            "`CROWDQA_D` (default `./d`), `CROWDQA_E` (see [Run](#run)), `CROWDQA_F` (default 5 GiB of files)")
    assert documented_defaults(text) == {"a": "20", "b": "1 MiB", "c": "900", "d": "./d", "f": "5 GiB"}


def test_the_formats_page_upload_options_are_the_table():
    """The upload options the formats page lists after "at every door with the same message" are ``role`` and the
    table ``ingest.formats.UPLOAD_OPTIONS``, in its order; the choices it gives are theirs."""
    from crowdqa.ingest.formats import ROLES, UPLOAD_OPTIONS

    formats = page("reference/formats.md")
    sentence = " ".join(formats.split("a one-line CLI error):", 1)[1].split(". A span over", 1)[0].split())
    top = sentence
    while (inner := re.sub(r"\([^()]*\)", "", top)) != top:
        top = inner
    assert re.findall(r"`(\w+)`", top) == ["role"] + [o.name for o in UPLOAD_OPTIONS]
    for name, real in [("role", ROLES)] + [(o.name, o.choices) for o in UPLOAD_OPTIONS if o.choices]:
        listed = re.findall(r"`(\w+)`", re.search(rf"`{name}` \(([^)]*)\)", sentence)[1])
        assert listed and set(listed) <= set(real), (name, listed, real)


def test_the_sort_keys_and_cost_order_of_the_pages_are_the_codes():
    """The worker table's ``--sort`` keys (Command line) and compare's cost order (Choose a method)."""
    from crowdqa.aggregation.registry import methods_by_cost
    from crowdqa.quality.report import TABLE_SORT_KEYS

    cli = " ".join(page("reference/cli.md").split())
    assert tuple(re.search(r"`--sort ([a-z_0-9|]+)`", cli)[1].split("|")) == TABLE_SORT_KEYS
    how_to = " ".join(page("how-to/choose-a-method.md").split())
    order = re.search(r"to the cheaper method in the fixed cost order ([a-z, -]+?)\. ", how_to)[1]
    assert order.split(", ") == methods_by_cost()


def test_the_format_table_and_output_formats_are_the_readers_and_writers():
    """Upload formats: the table's rows are the readers (``READ_FORMATS``); "Output formats" names the writers
    (``WRITE_FORMATS``) with their description, each once."""
    from crowdqa.ingest.formats import READ_FORMATS, WRITE_FORMATS

    readme = page("reference/formats.md")
    table = readme.split("| format | what it reads | annotator ids |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    rows = [name for row in table for name in re.findall(r"`([a-z-]+)`", row.split("|")[1])]
    assert sorted(rows) == sorted(READ_FORMATS)
    outputs = " ".join(readme.split("**Output formats**", 1)[1].split("\n\n", 1)[0].split())
    described = re.findall(r"`([a-z-]+)`\s+\(", outputs.split("):", 1)[1])
    assert described == list(WRITE_FORMATS)
