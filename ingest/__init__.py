"""Parsers: every upload format becomes one canonical :class:`~crowdqa.aggregation.corpus.Corpus`.

Use :func:`read_corpus` with a format name from :data:`~crowdqa.ingest.formats.READ_FORMATS`; it
returns a :class:`ParseResult` (the corpus, the rows skipped under ``on_error="skip"``, the
format). :func:`crowdqa.ingest.summary.summarize` gives the parse summary the API returns and
:func:`crowdqa.ingest.summary.format_summary` the lines the CLI prints.

The formats and the options an upload takes are tables in :mod:`crowdqa.ingest.formats`
(name, type, choices, default and help of each option; the options each format's reader takes);
the command line's flags and the API's form fields are made from them.

Annotator ids: formats tied to one source are namespaced by it (``mturk:<WorkerId>``,
``ebmnlp:<WID>``, ``pico:<id>``); generic formats (CoNLL, brat, Label Studio, doccano,
spans tables) keep the annotator names as written, so one set of annotations
exported from different tools gives the same corpus.
"""

from __future__ import annotations

import csv
import importlib
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crowdqa.ingest.errors import IngestError, Problem, ProblemLog
from crowdqa.ingest.formats import FORMATS, NO_SUCH_PATH, ROLES, UPLOAD_OPTIONS, check_options, check_upload
from crowdqa.ingest.limits import DocumentLimits

if TYPE_CHECKING:  # numpy and the corpus load on first use, so `crowdqa --help` starts without them
    from crowdqa.aggregation.corpus import Corpus

__all__ = ["DocumentLimits", "ParseResult", "check_options", "check_upload", "read_corpus", "read_merged",
           "IngestError", "Problem"]


@dataclass(frozen=True)
class ParseResult:
    """What one upload parsed into.

    Attributes
    ----------
    corpus : Corpus
    problems : list of Problem
        Rows left out under ``on_error="skip"`` (empty under ``"fail"``).
    format : str
    """

    corpus: Corpus
    problems: list[Problem] = field(default_factory=list)
    format: str = ""
    #: What the reader assumed, or left out by rule (rejected assignments, columns read by position).
    notes: list[str] = field(default_factory=list)
    #: Rows left out by rule, by reason (``{"rejected": 17}``).
    dropped: dict[str, int] = field(default_factory=dict)
    #: Expert-labelled documents (items) that matched no crowd document, left out (:func:`read_merged`).
    unmatched_expert_documents: int = 0

    def remarks(self) -> list[str]:
        """The notes, then one line counting the rows ``on_error="skip"`` left out (naming the first) and one per
        reason rows were left out by rule: what a command prints beside its output, so no skip goes unsaid."""
        out = list(self.notes)
        if self.problems:
            out.append(f"on_error=skip left out {len(self.problems)} bad row(s); the first: {self.problems[0]}")
        out.extend(f"left out {n} {reason} row(s)" for reason, n in self.dropped.items())
        return out


def read_corpus(path: str | os.PathLike, *, format: str, role: str = ROLES[0], limits: DocumentLimits | None = None,
                **options: Any) -> ParseResult:
    """Parse one upload (file, folder or zip) into a corpus.

    Parameters
    ----------
    path : str or PathLike
    format : str
        One of :data:`~crowdqa.ingest.formats.READ_FORMATS`.
    role : {"crowd", "expert"}, default="crowd"
        The role of the upload's annotators where the format does not say.
    limits : DocumentLimits, optional
        The longest document accepted (default :class:`~crowdqa.ingest.limits.DocumentLimits`'s), checked
        while the file is read.
    **options
        Upload options (:data:`~crowdqa.ingest.formats.UPLOAD_OPTIONS`); ``None`` or absent means the
        option's default. An option the format does not take is ignored (one set of options serves a
        crowd file and its expert files of another format).

    Returns
    -------
    ParseResult

    Raises
    ------
    IngestError
        Unknown format, option or option value, unreadable file, or (``on_error="fail"``) the
        first bad row; the message is one line naming the file and line or row.
    """
    check_upload({"format": format, "role": role, **options}, source=str(path))
    given = {o.name: o.default for o in UPLOAD_OPTIONS} | {k: v for k, v in options.items() if v is not None}
    problems = ProblemLog(given["on_error"], limits=limits or DocumentLimits())
    path = Path(path)
    if not path.exists():
        raise IngestError(NO_SUCH_PATH, source=str(path))
    spec = FORMATS[format]
    module, _, func = spec.reader.partition(":")
    reader = getattr(importlib.import_module(module), func)
    try:
        corpus = reader(path, role=role, problems=problems, **{k: given[k] for k in spec.options})
    except IngestError:
        raise
    except RecursionError:
        # json.loads on a nesting bomb ("[[[[...") recurses past the interpreter's limit.
        raise IngestError("the file is nested too deeply to parse (a JSON nesting bomb?)", source=str(path)) from None
    except (ValueError, OSError, zipfile.BadZipFile, csv.Error) as exc:
        # A reader's own checks raise IngestError; this is a last line of defence so that
        # bad input never ends in a traceback (e.g. Corpus validation of a malformed file,
        # or a CSV field over the csv module's size limit in a header row).
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IngestError(msg, source=str(path)) from exc
    from crowdqa.ingest.vocabulary import alike_labels  # numpy: loaded by the reader already

    return ParseResult(corpus=corpus, problems=list(problems.problems), format=format,
                       notes=[*problems.notes, *alike_labels(corpus)], dropped=dict(problems.dropped))


def read_merged(uploads: Sequence[dict]) -> ParseResult:
    """Read several uploads of the same documents (crowd and expert files) and merge them.

    Parameters
    ----------
    uploads : sequence of dict
        Keyword arguments of :func:`read_corpus` for each upload, with ``path``.

    Returns
    -------
    ParseResult
        The merged corpus (:func:`crowdqa.ingest.merge.merge_corpora`) without the documents only experts
        labelled (:func:`crowdqa.ingest.merge.drop_expert_only`, counted in ``unmatched_expert_documents`` and
        a note), every upload's problems, and the first upload's format; a note names the labels only the
        experts or only the crowd use (:func:`crowdqa.ingest.vocabulary.check_vocabularies`, which raises
        IngestError when they share none).

    Notes
    -----
    ``scheme="auto"`` picks IO for one entity type and BIO for several, per upload; when
    the uploads disagree (a crowd file with two types, an expert file with one), the
    IO uploads whose format takes a scheme are read again as BIO, so the merge keeps
    every entity boundary instead of failing.
    """
    from crowdqa.ingest.merge import (  # numpy loads here, not for the CLI's parser
        drop_expert_only,
        merge_corpora,
        unmatched_ids_hint,
    )
    from crowdqa.ingest.vocabulary import check_corpus_vocabularies

    if not uploads:
        raise IngestError("nothing to read: no upload given")
    results = [read_corpus(**u) for u in uploads]
    schemes = [r.corpus.scheme if r.corpus.n_classes > 1 else None for r in results]
    if "bio" in schemes:
        for i, (u, sch) in enumerate(zip(uploads, schemes, strict=True)):
            takes = FORMATS[u["format"]].options
            if sch == "io" and "scheme" in takes and u.get("scheme") in (None, "auto"):
                results[i] = read_corpus(**{**u, "scheme": "bio"})
    experts = ", ".join(str(u["path"]) for u in uploads if u.get("role") == "expert") or str(uploads[0]["path"])
    merged = merge_corpora([r.corpus for r in results], sources=[str(u["path"]) for u in uploads])
    corpus, unmatched = drop_expert_only(merged, source=experts)
    vocabulary = check_corpus_vocabularies(corpus, source=experts)  # IngestError when they share no label
    dropped: dict[str, int] = {}
    for r in results:
        for k, v in r.dropped.items():
            dropped[k] = dropped.get(k, 0) + v
    notes = [n for r in results for n in r.notes]
    if unmatched:
        alike = unmatched_ids_hint(merged)
        notes.append(unmatched_note(unmatched) + (f" ({alike})" if alike else ""))
    notes.extend(vocabulary)
    return ParseResult(corpus=corpus, problems=[p for r in results for p in r.problems], format=results[0].format,
                       notes=notes, dropped=dropped, unmatched_expert_documents=unmatched)


def unmatched_note(n: int) -> str:
    """The note for ``n`` expert documents that matched no crowd document."""
    return (f"{n} expert document(s) (items) matched no crowd document by id and are left out: only documents "
            f"the crowd labelled are aggregated and scored")
