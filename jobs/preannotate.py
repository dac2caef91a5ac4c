"""Pre-annotation: a fitted model that reads the text labels documents nobody annotated.

The use case behind ``crowdqa aggregate --predict DOCS --predictions OUT``: a model learned from the crowd
(the one just fitted, or an earlier job's, ``--from-model``, which ``GET /jobs/{id}/model`` serves) labels
new documents, so an annotation team can pre-fill its next batch. Only a model with a text model of its own
can do this (its estimator says so with ``labels_unannotated``: a tagger that votes on any document); the others
know nothing of a document without labels and are refused by name.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus

__all__ = ["pre_annotation_methods", "check_pre_annotation", "read_documents", "pre_annotate", "label_documents"]


def pre_annotation_methods() -> tuple[str, ...]:
    """The methods whose fitted model labels documents nobody annotated (their estimator says so)."""
    from crowdqa.aggregation.registry import METHODS, aggregator_class

    return tuple(m for m in METHODS if getattr(aggregator_class(m), "labels_unannotated", False))


def check_pre_annotation(method: str) -> None:
    """ValueError naming the methods that can, for a ``method`` whose model cannot label unannotated documents."""
    if method not in pre_annotation_methods():
        raise ValueError(f"--predict needs a method whose model reads the text: {method} labels only what annotators "
                         f"labelled; use {', '.join(pre_annotation_methods())}")


def read_documents(path: str | os.PathLike, *, format: str, options: dict[str, Any]) -> Corpus:
    """The documents of ``path`` (read as ``format``, like an upload), their labels, if any, left out.

    Raises IngestError (naming the file) for a file that cannot be read, and for one with no document.
    """
    from crowdqa.ingest import read_merged
    from crowdqa.ingest.errors import IngestError

    corpus = read_merged([dict(path=path, format=format, role="crowd", **options)]).corpus
    if corpus.n_tokens == 0:
        raise IngestError("the file holds no document with tokens to label", source=str(path))
    return corpus


def pre_annotate(state: dict[str, NDArray], *, method: str, params: dict[str, Any] | None,
                 documents: Corpus) -> tuple[NDArray[np.int64], Corpus]:
    """Labels of ``documents`` under a fitted model's state (``fitted_state`` plus ``class_names``).

    Returns
    -------
    labels : ndarray of shape (n_tokens,)
        Class indices of the model's classes.
    corpus : Corpus
        ``documents`` without labels, in the model's classes (what the labels are written with).
    """
    from crowdqa.aggregation import make_aggregator
    from crowdqa.aggregation.batches import restore_state

    check_pre_annotation(method)
    names = tuple(str(c) for c in state["class_names"].tolist())
    bare = Corpus.from_arrays(token=[], worker=[], label=[], doc_lengths=documents.doc_lengths,
                              token_start=documents.token_start, token_end=documents.token_end,
                              doc_ids=documents.doc_ids, texts=documents.texts, worker_ids=[], worker_roles=[],
                              class_names=names)
    model = restore_state(make_aggregator(method, dict(params or {})), state)
    return np.asarray(model.predict(bare), dtype=np.int64), bare


def label_documents(state: dict[str, NDArray], *, method: str, params: dict[str, Any] | None,
                    path: str | os.PathLike, format: str, options: dict[str, Any], output: str | os.PathLike,
                    output_format: str) -> Corpus:
    """Read the documents of ``path``, label them with the model ``state`` and write the labels to ``output``
    (``crowdqa aggregate --predict``); returns the documents as labelled (without their labels)."""
    from crowdqa.ingest.writers import write_labels

    labels, corpus = pre_annotate(state, method=method, params=params,
                                  documents=read_documents(path, format=format, options=options))
    write_labels(labels, corpus, output, format=output_format)
    return corpus
