"""The calibration stage of a job: every aggregate token, item, span and document gets a calibrated score.

A score is the probability that the aggregate is exactly right there (:mod:`crowdqa.aggregation.confidence`),
under the method's posterior tempered by one temperature:

* **Without expert labels** the temperature is the method's label-free default (its registry entry's
  ``temperature`` and ``temperature_scope``, chosen on conll_val and PICO dev by ``benchmarks/calibration.py``).
* **With expert labels** it is fitted on the expert documents (:func:`~crowdqa.aggregation.confidence.fit_temperatures`:
  the log loss of the spans' exactness, or of the items' rightness, against the reference), and the report says how
  calibrated the scores are against the experts both ways: at the default, and cross-fitted (the expert documents
  in ``folds`` seeded folds, each scored at the temperature fitted on the others), ECE and Brier score with 95%
  document-bootstrap intervals and the reliability diagram's bins. With ``use_experts`` the expert documents are
  clamped in the main fit, so their scores come from the cross-fitting's held-out fits instead (each fold's own
  posterior chain), as the report's scores of the aggregate do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.confidence import (
    AggregateConfidence,
    ChainMarginals,
    PosteriorChain,
    fit_temperatures,
    score_aggregate,
    sequence_starts,
    span_probability,
    tempered_scores,
    token_probability,
)
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.registry import METHODS
from crowdqa.aggregation.spans import decode_spans
from crowdqa.quality.calibration import calibration_summary

__all__ = ["HeldoutChain", "ExpertItems", "Calibrated", "calibrate", "expert_items"]

#: Fewer expert documents than this, or no right or no wrong item among them: the default temperature stays.
MIN_EXPERT_DOCUMENTS = 4


@dataclass(frozen=True)
class HeldoutChain:
    """A posterior chain of some whole documents and the labels it decoded there (a cross-fitting fold's
    held-out documents, or the main fit's expert documents)."""

    tokens: NDArray[np.bool_]  # (n_tokens,) of the corpus: the documents it covers
    chain: PosteriorChain  # of those tokens (PosteriorChain.select)
    labels: NDArray[np.int64]  # (n_tokens,) of the corpus; read on ``tokens`` only


@dataclass(frozen=True)
class ExpertItems:
    """The items of one held-out chain that the reference grades: spans (span data) or tokens (categorical)."""

    piece: HeldoutChain
    first: NDArray[np.int64]  # span bounds in the piece's own token indices (empty for tokens)
    last: NDArray[np.int64]
    span_type: NDArray[np.int64]
    token: NDArray[np.int64]  # the piece's token index of each item (categorical), or empty
    right: NDArray[np.bool_]
    doc: NDArray[np.int64]  # document of each item

    def scores(self, corpus: Corpus, temperatures: NDArray[np.float64], scope: str) -> NDArray[np.float64]:
        """Each item's probability of being right at each of ``temperatures``: shape (n_temps, n_items)."""
        def score(mg: ChainMarginals) -> NDArray[np.float64]:
            if self.token.size or not corpus.has_outside:
                return token_probability(mg, self.piece.labels[self.piece.tokens]).reshape(mg.copies, -1)[:, self.token]
            return span_probability(mg, first=self.first, last=self.last, span_type=self.span_type, corpus=corpus,
                                    doc_first=sequence_starts(corpus)[self.piece.tokens]).reshape(mg.copies, -1)

        return tempered_scores(self.piece.chain, temperatures, scope=scope, score=score)


@dataclass(frozen=True)
class Calibrated:
    """The calibration stage's outcome: the scores and the report's ``calibration`` block."""

    confidence: AggregateConfidence
    report: dict[str, Any]


def expert_items(corpus: Corpus, piece: HeldoutChain, reference: NDArray[np.int64]) -> ExpertItems:
    """The spans (span data) or items (categorical answers) of ``piece``'s labels, graded by ``reference``: a span is
    right when the reference holds exactly that span (type and both boundaries), an item when its label is the
    reference's."""
    new_index = np.cumsum(piece.tokens) - 1
    empty = np.zeros(0, dtype=np.int64)
    if not corpus.has_outside:
        tok = np.flatnonzero(piece.tokens & (reference >= 0))
        return ExpertItems(piece, empty, empty, empty, new_index[tok], piece.labels[tok] == reference[tok],
                           corpus.token_doc[tok].astype(np.int64))
    labels = np.where(piece.tokens, piece.labels, 0)
    spans = decode_spans(labels, corpus)
    ref = decode_spans(np.where(piece.tokens & (reference >= 0), reference, 0), corpus)
    width = corpus.n_tokens + 1
    key = (spans.first * width + spans.last) * 64 + spans.type
    right = np.isin(key, (ref.first * width + ref.last) * 64 + ref.type)
    return ExpertItems(piece, new_index[spans.first], new_index[spans.last - 1] + 1, spans.type, empty, right,
                       spans.doc)


def _scores(items: list[ExpertItems], corpus: Corpus, temperatures: NDArray[np.float64], scope: str
            ) -> NDArray[np.float64]:
    """Every item's score at each of ``temperatures``: shape (n_temps, n_items)."""
    temperatures = np.asarray(temperatures, dtype=np.float64)
    parts = [it.scores(corpus, temperatures, scope) for it in items]
    return np.concatenate(parts, axis=1) if parts else np.zeros((temperatures.size, 0))


def calibrate(corpus: Corpus, chain: PosteriorChain, labels: NDArray[np.int64], *, method: str,
              reference: NDArray[np.int64] | None, pieces: list[HeldoutChain] | None, folds: int = 4,
              seed: int = 0) -> Calibrated:
    """Scores of the aggregate ``labels`` under ``chain`` at the calibrated temperature, and the report's block.

    Parameters
    ----------
    corpus : Corpus
        The crowd corpus the chain was fitted on.
    chain : PosteriorChain
    labels : ndarray of shape (n_tokens,)
    method : str
        Its registry entry gives the label-free default.
    reference : ndarray of shape (n_tokens,), optional
        The experts' reference labels (``MISSING`` where none); None without experts.
    pieces : list of HeldoutChain, optional
        The expert documents' held-out chains (``use_experts``: the cross-fitting's folds); default: the main
        chain on the expert documents.
    folds, seed : int
        The cross-fitting of the temperature over the expert documents.
    """
    entry = METHODS[method]
    default, scope = entry.temperature, entry.temperature_scope
    # In the order of the report model's fields (quality.report_model.Calibration): the stored report is this data.
    block: dict[str, Any] = {"temperature": default, "default_temperature": default, "scope": scope,
                             "source": "default", "items": "spans" if corpus.has_outside else "items",
                             "expert_documents": 0, "without_experts": None, "with_experts": None,
                             "fold_temperatures": []}
    temperature = default
    if reference is not None and (reference >= 0).any():
        covered = np.bincount(corpus.token, minlength=corpus.n_tokens) > 0
        expert_doc = np.bincount(corpus.token_doc[(reference >= 0) & covered], minlength=corpus.n_docs) > 0
        if pieces is None:
            tokens = expert_doc[corpus.token_doc]
            pieces = [HeldoutChain(tokens, chain.select(tokens), labels)]
        items = [expert_items(corpus, p, reference) for p in pieces]
        right = np.concatenate([it.right for it in items])
        doc = np.concatenate([it.doc for it in items])
        block["expert_documents"] = int(expert_doc.sum())
        block["without_experts"] = calibration_summary(_scores(items, corpus, [default], scope)[0], right,
                                                       doc).as_data()
        docs = np.flatnonzero(expert_doc)
        if docs.size >= MIN_EXPERT_DOCUMENTS and right.any() and not right.all():
            crossed, temps, temperature = _cross_fitted(items, corpus, docs, scope=scope, folds=folds, seed=seed)
            block["with_experts"] = calibration_summary(crossed, right, doc).as_data()
            block["fold_temperatures"] = temps
            block.update(temperature=round(temperature, 6), source="experts")
    confidence = score_aggregate(chain, labels, corpus, temperature=temperature, scope=scope)
    return Calibrated(confidence=confidence, report=block)


def _cross_fitted(items: list[ExpertItems], corpus: Corpus, docs: NDArray[np.int64], *, scope: str, folds: int,
                  seed: int) -> tuple[NDArray[np.float64], list[float], float]:
    """Each fold of the expert documents scored at the temperature fitted on the other folds' items; the fold
    temperatures; and the temperature fitted on every item. The folds' fits and the whole fit are one search
    (:func:`~crowdqa.aggregation.confidence.fit_temperatures`): the items' chains are the same, only the items each
    fit counts differ."""
    doc = np.concatenate([it.doc for it in items])
    right = np.concatenate([it.right for it in items])
    parts = np.array_split(np.random.default_rng(seed).permutation(docs), min(folds, docs.size))
    held = np.array([np.isin(doc, part) for part in parts])  # (n_folds, n_items)
    fitted = fit_temperatures(lambda t: _scores(items, corpus, t, scope), right,
                              subsets=np.concatenate([~held, np.ones((1, doc.size), dtype=bool)]))
    temps = [round(float(t), 6) for t in fitted[:-1]]
    at_fold = _scores(items, corpus, fitted[:-1], scope)  # (n_folds, n_items): each row read on its fold alone
    out = (at_fold * held).sum(axis=0)
    return out, temps, float(fitted[-1])
