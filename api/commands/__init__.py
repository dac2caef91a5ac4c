"""The ``crowdqa`` subcommands, one module each, and what they share with the entry point.

Each module exposes ``register(subparsers)``, which adds its parser and sets ``func(args) -> int``.
The modules parse, call one use case of :mod:`crowdqa.jobs`, and print; they import nothing from
:mod:`crowdqa.api.cli` (the entry point imports them, never the other way round).
"""

from __future__ import annotations

import re
import sys

from crowdqa.ingest.formats import UPLOAD_OPTIONS

__all__ = ["COMMANDS", "UserError", "cli_wording", "server_session", "server_project"]

#: Subcommand -> (module, one-line help), in the order ``crowdqa --help`` lists them. Only the module
#: of the command being run is imported (``crowdqa --help`` imports none), so start-up never pays for
#: numpy, scipy or the service when it does not use them.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("crowdqa.api.commands.ingest", "parse a label dump and print what it holds"),
    "aggregate": ("crowdqa.api.commands.aggregate", "aggregate a crowd dump and report against experts"),
    "compare": ("crowdqa.api.commands.compare",
                "compare aggregation methods on the experts and recommend one"),
    "report": ("crowdqa.api.commands.report", "score an aggregate and every worker against the experts"),
    "sample-size": ("crowdqa.api.commands.sample_size",
                    "documents, positives and negatives to annotate for a gold standard (SLiCE)"),
    "route": ("crowdqa.api.commands.route", "rank the documents without expert labels for the experts to label next"),
    "serve": ("crowdqa.api.commands.serve", "run the API (embedded: SQLite and an in-process queue)"),
    "worker": ("crowdqa.api.commands.worker", "run queued jobs from CROWDQA_REDIS_URL"),
    "keys": ("crowdqa.api.commands.keys", "create, list and revoke API keys"),
    "review": ("crowdqa.api.commands.review",
               "approve or reject a Mechanical Turk batch's assignments by rules on worker scores"),
    "blocked": ("crowdqa.api.commands.blocked", "list, add and remove a project's blocked workers"),
    "label-studio": ("crowdqa.api.commands.label_studio",
                     "pull a Label Studio project's annotations, push a job's aggregate back as predictions"),
}


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""


#: Upload options, as messages of the shared readers name them (``docs=DIR``, ``text_column``).
_OPTIONS = tuple(o.name for o in UPLOAD_OPTIONS)
_OPTION_VALUE = re.compile(r"\b(" + "|".join(_OPTIONS) + r")=([A-Z]+)\b")
_OPTION_WORD = re.compile(r"(?<![-\w'\"])(" + "|".join(o for o in _OPTIONS if "_" in o) + r")\b(?!['\"])")


def cli_wording(text: str) -> str:
    """A reader's message in command-line words: docs=DIR becomes --docs DIR, text_column --text-column."""
    text = _OPTION_VALUE.sub(lambda m: f"--{m[1].replace('_', '-')} {m[2]}", text)
    return _OPTION_WORD.sub(lambda m: f"--{m[1].replace('_', '-')}", text)


def server_session(*, create: bool = False):
    """A database session on the server's rows (``CROWDQA_DATA_DIR`` or ``CROWDQA_DATABASE_URL``), for the commands
    that work where ``crowdqa serve`` runs (keys, blocked, review, label-studio). Which database it is goes to
    stderr first. Where no SQLite database exists yet, only a command that makes something (``create``: a key, a
    pull) makes one, with a note (a server started elsewhere sees none of it); the others (a block list, a review's
    ``--project``, listing or revoking keys, a push) stop with one line and leave nothing behind."""
    from crowdqa.store.db import open_session
    from crowdqa.store.settings import describe, get_settings

    settings = get_settings()
    new = settings.database_url.startswith("sqlite") and not (settings.data_dir / "crowdqa.db").exists()
    if new and not create:
        raise UserError(f"{settings.data_dir.resolve()} holds no crowdqa database: run the command where `crowdqa "
                        "serve` runs (its data directory), or set CROWDQA_DATA_DIR or CROWDQA_DATABASE_URL")
    session = open_session(settings)  # a database it cannot use is one line (UserError) before anything is said
    print(f"crowdqa: {describe(settings)}", file=sys.stderr)
    if new:
        print(f"crowdqa: note: {settings.data_dir.resolve()} held no crowdqa data; a new database was created "
              "there. A server started elsewhere will not see what this command writes: run the command where "
              "`crowdqa serve` runs, or set CROWDQA_DATA_DIR.", file=sys.stderr)
    return session


def server_project(session, name: str):
    """The project named ``name`` (``--project``); a UserError pointing at ``crowdqa keys list`` if there is none."""
    from crowdqa.jobs.blocklist import project_named

    try:
        return project_named(session=session, name=name)
    except LookupError as exc:
        raise UserError(f"{exc} (see `crowdqa keys list`)") from None
