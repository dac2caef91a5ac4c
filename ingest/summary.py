"""The parse summary of a corpus: as data (:func:`summarize`, what the API stores and returns) and as the
lines the command line prints (:func:`format_summary`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._bytes import unique_sorted
from crowdqa.ingest.errors import Problem
from crowdqa.ingest.formats import ROLES

__all__ = ["annotator_coverage", "format_summary", "summarize", "summary_fields"]


def summarize(corpus: Corpus, *, problems: list[Problem] | None = None, notes: list[str] | None = None,
              dropped: dict[str, int] | None = None) -> dict:
    """The parse summary: sizes, annotators by role, labels, coverage per document.

    Parameters
    ----------
    corpus : Corpus
    problems : list of Problem, optional
        Skipped rows to count (and list, up to 20) in the summary.
    notes : list of str, optional
        What the reader assumed or left out by rule, listed as ``notes``.
    dropped : dict of str to int, optional
        Rows left out by rule, by reason (``{"rejected": 17}``), listed as ``dropped``.

    Returns
    -------
    dict
        JSON-serialisable: ``documents``, ``tokens``, ``annotations`` (labels in the
        COO arrays), ``annotators`` (``{"crowd": n, "expert": m}``), ``labels`` (class
        names), ``label_counts`` (annotations per class), ``coverage`` (annotators per
        document: ``min``, ``median``, ``max``, overall and per role, and
        ``documents_with_expert``), and ``skipped`` / ``problems`` when given.
    """
    # Unique (document, annotator) pairs, sorted: under a span scheme the rows on each document's first token (the
    # corpus is sorted by (token, annotator) and an annotator of a document labels all of its tokens); under tags
    # (any tokens labelled) the distinct pairs of all rows.
    obs_doc = corpus.obs_doc
    if corpus.scheme == "tags":
        n_w = max(corpus.n_workers, 1)
        pairs = np.unique(obs_doc * n_w + corpus.worker)
        pair_doc, pair_worker = pairs // n_w, pairs % n_w
    else:
        at_first = corpus.token == corpus.doc_start[obs_doc]
        pair_doc, pair_worker = obs_doc[at_first], corpus.worker[at_first].astype(np.int64)
    label_counts = np.bincount(corpus.label, minlength=corpus.n_classes)
    out = summary_fields(
        n_docs=corpus.n_docs, n_tokens=corpus.n_tokens, n_obs=corpus.n_obs, worker_roles=corpus.worker_roles,
        pair_doc=pair_doc, pair_worker=pair_worker,
        class_names=corpus.class_names,
        label_counts={name: int(k) for name, k in zip(corpus.class_names, label_counts.tolist(), strict=True)})
    if problems is not None:
        out["skipped"] = len(problems)
        out["problems"] = [str(p) for p in problems[:20]]
    if dropped:
        out["dropped"] = dict(dropped)
    if notes:
        out["notes"] = list(notes)
    return out


def summary_fields(*, n_docs: int, n_tokens: int, n_obs: int, worker_roles: Sequence[str],
                   pair_doc: NDArray[np.int64], pair_worker: NDArray[np.int64], class_names: Sequence[str],
                   label_counts: dict[str, int]) -> dict:
    """The fields every parse summary has, from a corpus (:func:`summarize`) or from upload indexes
    (:func:`crowdqa.ingest.index.summarize_indexes`): sizes, annotators by role, labels, coverage.

    Parameters
    ----------
    n_docs, n_tokens, n_obs : int
    worker_roles : sequence of str
        Each annotator's role (one of :data:`~crowdqa.ingest.formats.ROLES`).
    pair_doc, pair_worker : ndarray of shape (n_pairs,)
        The unique (document, annotator) assignments, as indexes.
    class_names : sequence of str
    label_counts : dict of str to int
        Annotations per class.

    Returns
    -------
    dict
    """
    role_of = np.array([ROLES.index(r) for r in worker_roles], dtype=np.int64)  # compared as integers
    return {
        "documents": n_docs,
        "tokens": n_tokens,
        "annotations": n_obs,
        "annotators": {r: int(np.sum(role_of == k)) for k, r in enumerate(ROLES)},
        "labels": list(class_names),
        "label_counts": label_counts,
        "coverage": annotator_coverage(pair_doc, role_of[pair_worker], n_docs=n_docs),
    }


def annotator_coverage(pair_doc: NDArray[np.int64], pair_role: NDArray[np.int64], *, n_docs: int) -> dict:
    """Annotators per document (``min``, ``median``, ``max``), overall and per role, the documents both an
    expert and a crowd annotator labelled (``documents_with_expert``; without any crowd annotator, all the expert
    documents) and those only experts labelled (``expert_documents_without_crowd``: they match no crowd document,
    so no aggregate covers them).

    Parameters
    ----------
    pair_doc, pair_role : ndarray of shape (n_pairs,)
        The (document, annotator) assignments: the document's index and the annotator's role (an index
        into :data:`~crowdqa.ingest.formats.ROLES`).
    n_docs : int

    Returns
    -------
    dict
    """
    def stats(mask: NDArray[np.bool_]) -> dict:
        per_doc = np.bincount(pair_doc[mask], minlength=n_docs)
        if n_docs == 0:
            return {"min": 0, "median": 0.0, "max": 0}
        return {"min": int(per_doc.min()), "median": float(np.median(per_doc)), "max": int(per_doc.max())}

    coverage = {"annotators_per_document": stats(np.ones(pair_doc.shape[0], dtype=bool))}
    for k, r in enumerate(ROLES):
        coverage[r] = stats(pair_role == k)
    # Documents only experts labelled are not aggregated (crowdqa.ingest.merge.drop_expert_only): counted apart
    # when there is a crowd to match (an expert file on its own, or uploaded first, has every document "with expert").
    expert_docs = unique_sorted(pair_doc[pair_role == ROLES.index("expert")])
    crowd = pair_role == ROLES.index("crowd")
    matched = np.isin(expert_docs, pair_doc[crowd]) if crowd.any() else np.ones(expert_docs.size, dtype=bool)
    coverage["documents_with_expert"] = int(np.count_nonzero(matched))
    coverage["expert_documents_without_crowd"] = int(expert_docs.size - np.count_nonzero(matched))
    return coverage


def format_summary(summary: dict, *, wording: Callable[[str], str] = str) -> str:
    """The summary of :func:`summarize` as a few readable lines.

    Parameters
    ----------
    summary : dict
    wording : callable, default=str
        How a note is worded for the reader (the command line says ``--text-column`` for ``text_column``).

    Returns
    -------
    str
    """
    cov = summary["coverage"]
    ann = summary["annotators"]

    def trio(s: dict) -> str:
        return f"min {s['min']}, median {s['median']:g}, max {s['max']}"

    lines = [
        f"documents    {summary['documents']}",
        f"tokens       {summary['tokens']}",
        f"annotations  {summary['annotations']}",
        f"annotators   {ann['crowd']} crowd, {ann['expert']} expert",
        "labels       " + ", ".join(f"{k} ({v})" for k, v in summary["label_counts"].items()),
        f"annotators per document: {trio(cov['annotators_per_document'])}",
        f"  crowd:  {trio(cov['crowd'])}",
        f"  expert: {trio(cov['expert'])}; documents with an expert: {cov['documents_with_expert']}",
    ]
    if cov.get("expert_documents_without_crowd"):
        lines.append(f"expert documents no crowd annotator labelled: {cov['expert_documents_without_crowd']} "
                     "(not aggregated)")
    if summary.get("skipped"):
        lines.append(f"skipped rows: {summary['skipped']}")
        lines.extend(f"  {p}" for p in summary["problems"])
        if summary["skipped"] > len(summary["problems"]):
            lines.append(f"  ... and {summary['skipped'] - len(summary['problems'])} more")
    for reason, n in (summary.get("dropped") or {}).items():
        lines.append(f"left out    {n} {reason} rows")
    lines.extend(f"note: {wording(n)}" for n in summary.get("notes") or ())
    if summary.get("saved"):
        lines.append(f"saved        {summary['saved']}")
    return "\n".join(lines)
