"""Where the crowd disagrees: measured confusion matrices, per-document disagreement and entropy.

These are the numbers behind the dashboard's worker and document pages. Each function works
on the whole corpus at once (one ``bincount`` over the COO arrays), never one loop per worker,
document or token.

Definitions
-----------
* A worker's *measured* confusion matrix counts, over the tokens where the worker and the
  reference both have a label, how often the worker answered ``o`` when the reference says
  ``t`` (rows: reference, columns: worker), the layout of an aggregator's
  ``worker_confusion_`` (Dawid & Skene 1979), so estimated and measured matrices read alike.
* A worker's disagreement with the aggregate on a document is the share of the worker's
  tokens there whose label differs from the aggregate's.
* A document's posterior entropy is the mean over its tokens of
  :math:`H_t = -\\sum_k p_{tk} \\log p_{tk}` (nats), with :math:`0 \\log 0 = 0`; a document
  where the model is unsure of many tokens ranks high (Nguyen et al., ACL 2017, use the
  posteriors of HMM-Crowd the same way to find uncertain labels).

References
----------
.. [1] A. P. Dawid, A. M. Skene (1979). Maximum likelihood estimation of observer error-rates
   using the EM algorithm. JRSS C 28(1), 20-28. doi:10.2307/2346806
.. [2] A. T. Nguyen, B. C. Wallace, J. J. Li, A. Nenkova, M. Lease (2017). Aggregating and
   predicting sequence labels from crowd annotations. ACL 2017. doi:10.18653/v1/P17-1028
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus

__all__ = ["measured_confusion", "WorkerDocuments", "worker_document_disagreement", "document_entropy",
           "document_disagreement"]


def _check_tokens(values: NDArray, corpus: Corpus, name: str) -> NDArray:
    values = np.asarray(values)
    if values.shape[:1] != (corpus.n_tokens,):
        raise ValueError(f"{name} must have {corpus.n_tokens} rows (one per token), found shape {values.shape}")
    return values


def measured_confusion(corpus: Corpus, reference: NDArray) -> NDArray[np.int64]:
    """Count every annotator's labels against a reference, one matrix per annotator.

    Parameters
    ----------
    corpus : Corpus
    reference : ndarray of shape (n_tokens,)
        Reference class per token; negative (``MISSING``) where there is none.

    Returns
    -------
    ndarray of shape (n_workers, n_classes, n_classes)
        ``out[w, t, o]``: tokens where the reference is ``t`` and annotator ``w`` answered ``o``.

    Examples
    --------
    >>> c = Corpus.from_arrays(token=[0, 0, 1, 1], worker=[0, 1, 0, 1], label=[1, 0, 0, 0],
    ...     doc_lengths=[2], token_start=[0, 2], token_end=[1, 3], doc_ids=["a"], texts=["x y"],
    ...     worker_ids=["w", "v"], worker_roles=["crowd", "crowd"], class_names=["O", "P"])
    >>> measured_confusion(c, np.array([1, -1]))[:, 1].tolist()
    [[0, 1], [1, 0]]
    """
    reference = _check_tokens(reference, corpus, "reference").astype(np.int64, copy=False)
    k, n = corpus.n_classes, corpus.n_workers
    if reference.size and reference.max(initial=-1) >= k:
        raise ValueError(f"reference classes must be < {k}, found {int(reference.max())}")
    ref = reference[corpus.token]
    ok = ref >= 0
    flat = (corpus.worker[ok].astype(np.int64) * k + ref[ok]) * k + corpus.label[ok]
    return np.bincount(flat, minlength=n * k * k).reshape(n, k, k)


@dataclass(frozen=True)
class WorkerDocuments:
    """Each (annotator, document) pair with labels, and how many of its tokens differ from the aggregate.

    Attributes
    ----------
    worker, doc : ndarray of shape (n_pairs,)
        Sorted by worker, then document.
    tokens : ndarray of shape (n_pairs,)
        Tokens the annotator labelled in the document.
    disagree : ndarray of shape (n_pairs,)
        Of those, tokens whose label differs from the aggregate's.
    """

    worker: NDArray[np.int64]
    doc: NDArray[np.int64]
    tokens: NDArray[np.int64]
    disagree: NDArray[np.int64]

    @property
    def rate(self) -> NDArray[np.float64]:
        """ndarray of shape (n_pairs,): ``disagree / tokens``."""
        return self.disagree / np.maximum(self.tokens, 1)


def worker_document_disagreement(corpus: Corpus, labels: NDArray) -> WorkerDocuments:
    """Every annotator's disagreement with the aggregate, per document.

    Parameters
    ----------
    corpus : Corpus
    labels : ndarray of shape (n_tokens,)
        The aggregate's class per token.

    Returns
    -------
    WorkerDocuments
    """
    labels = _check_tokens(labels, corpus, "labels")
    n_docs = max(corpus.n_docs, 1)
    key = corpus.worker.astype(np.int64) * n_docs + corpus.obs_doc
    pairs, inverse = np.unique(key, return_inverse=True)
    differ = (corpus.label != labels[corpus.token]).astype(np.int64)
    return WorkerDocuments(worker=pairs // n_docs, doc=pairs % n_docs,
                           tokens=np.bincount(inverse, minlength=pairs.size).astype(np.int64),
                           disagree=np.bincount(inverse, weights=differ, minlength=pairs.size).astype(np.int64))


def document_entropy(corpus: Corpus, proba: NDArray) -> NDArray[np.float64]:
    """Mean posterior entropy (nats) of each document's tokens.

    Parameters
    ----------
    corpus : Corpus
    proba : ndarray of shape (n_tokens, n_classes)
        Posterior class probabilities of each token.

    Returns
    -------
    ndarray of shape (n_docs,)
        0 for a document without tokens.
    """
    proba = _check_tokens(proba, corpus, "proba").astype(np.float64, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 * log 0 is taken as 0 below
        terms = np.where(proba > 0, proba * np.log(proba), 0.0)
    h = -terms.sum(axis=1)
    total = np.bincount(corpus.token_doc, weights=h, minlength=corpus.n_docs)
    return total / np.maximum(corpus.doc_lengths, 1)


def document_disagreement(corpus: Corpus, labels: NDArray, *, workers: NDArray | None = None) -> NDArray[np.float64]:
    """Share of the annotations in each document that differ from the aggregate.

    Parameters
    ----------
    corpus : Corpus
    labels : ndarray of shape (n_tokens,)
        The aggregate's class per token.
    workers : ndarray of int, optional
        Count only these annotators (e.g. the crowd); default all.

    Returns
    -------
    ndarray of shape (n_docs,)
        NaN for a document without annotations of those annotators.
    """
    labels = _check_tokens(labels, corpus, "labels")
    keep = np.ones(corpus.n_obs, dtype=bool) if workers is None else np.isin(corpus.worker, workers)
    doc = corpus.obs_doc[keep]
    differ = (corpus.label[keep] != labels[corpus.token[keep]]).astype(np.float64)
    n = np.bincount(doc, minlength=corpus.n_docs)
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN marks documents nobody of them labelled
        return np.bincount(doc, weights=differ, minlength=corpus.n_docs) / np.where(n > 0, n, np.nan)
