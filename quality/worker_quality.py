"""Worker quality that finds spammers: each worker's confusion, spammer score, label bias and verdict.

For every annotator, all at once over the corpus's COO arrays:

* ``confusion``: counts of (reference label, the worker's label) on the items (tokens) the worker labelled
  where the reference has a label. The reference (``against``) is the one the verdict rests on: the experts
  when the worker has at least ``min_items`` items with an expert label, unless the verdict came from the
  aggregate's evidence (below), else the aggregate on all of the worker's items; the counts against the
  experts are always kept (``confusion_vs_expert``).
* ``model_confusion``: the aggregator's own estimate, ``worker_confusion_[w]`` (rows the true class, columns
  the worker's answer, each row summing to 1), where the method has one.
* ``spammer_score`` (Raykar & Yu [1]_): how far apart the rows of the worker's confusion matrix are. A
  spammer answers without looking at the item, so its answer does not depend on the truth: every row of its
  confusion matrix :math:`A` (:math:`a_{ck}` = P(answer k | truth c)) is the same, :math:`A = e u^\\top`
  is of rank one. The score is the squared distance to the closest such matrix, scaled to [0, 1]:

  .. math:: S = \\frac{1}{C'(C'-1)} \\sum_{c < c'} \\sum_k (a_{ck} - a_{c'k})^2

  over the :math:`C'` rows the worker was seen on (true classes with at least one compared item; the paper
  has every row, :math:`C' = C`). 0: rows identical, a spammer; 1: a perfect worker (the identity).
  Binary labels give the paper's :math:`(\\alpha + \\beta - 1)^2` (sensitivity plus specificity minus one,
  squared); with :math:`C` classes, accuracy :math:`a` and errors spread evenly it is
  :math:`(a - \\frac{1-a}{C-1})^2`. An adversarial worker (one who swaps labels) has distinct rows and a
  high score: the score finds workers whose answers carry no information, not workers who are wrong in a
  way a confusion matrix corrects. Fewer than two seen rows: no score (``null``).
  ``model_spammer_score`` is the same of ``model_confusion`` (every row).
* ``spammer_score_ci``: an equal-tailed *posterior* interval (:func:`posterior_spammer_bounds`): each seen
  row of the worker's confusion counts is a multinomial with Jeffreys' Dirichlet(1/2) prior, so its
  posterior is Dirichlet(counts + 1/2), and the score of joint draws from the rows' posteriors gives the interval. A
  row seen on one or two items is then as uncertain as it is: a bootstrap of the items would resample the
  same single answer and report an interval of width 0 (seen on AdultContent2: a worker with 19 items of
  one class and 1 of another got [0, 0]). On a few items the interval need not hold the plug-in score:
  posterior draws of two rows are never exactly alike (a plug-in 0 sits below its interval) and the prior
  pulls every row toward the uniform row (a perfect worker's plug-in 1 sits above it); the block rule
  reads the upper bound, which stays high wherever the evidence is thin. For span
  data the items are tokens, and the tokens of one document are not independent: there the interval is
  narrower than it would be for independent items.
* ``label_bias``: each label's share of the worker's answers, and its share of the *other* annotators'
  answers on the same items (tokens), so a worker who answers one label far more often than the crowd does
  on the same items shows it. ``bias`` is the largest excess (worker share minus crowd share) over labels.
* ``spammer_score_vs_aggregate`` (and its interval): the same against the aggregate on all of the worker's
  items, whichever reference the main score uses.
* ``verdict`` (:func:`verdicts`, rules in :class:`VerdictRules`): ``block`` when the whole interval of the
  spammer score against the experts is below ``block_below``, or the whole interval against the aggregate
  is, unless the experts show the worker informative (their interval's lower bound at or above
  ``watch_below``): a handful of expert items per class rarely settles a verdict, while the worker's
  hundreds of items against the aggregate may; ``watch`` when an interval lies wholly below
  ``watch_below``, or the worker overuses a label by at least ``bias_above``; ``keep`` otherwise, and for
  every worker with fewer than ``min_items`` items against either reference (too few to judge: the reason
  says so). Evidence against a reference counts only from ``min_items`` items. Experts are not judged
  (``null``).

References
----------
.. [1] V. C. Raykar, S. Yu (2012). Eliminating spammers and ranking annotators for crowdsourced labeling
   tasks. Journal of Machine Learning Research 13, 491-518.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.quality.report_schema import record
from crowdqa.quality.score_blocks import id_rank

__all__ = ["VerdictRules", "WorkerConfusions", "Evidence", "spammer_score", "worker_confusions",
           "posterior_spammer_bounds", "posterior_draws", "label_shares", "verdicts", "worker_quality_blocks",
           "VERDICTS"]

#: Posterior draws of each worker's spammer score (at most the report's ``n_boot``): the 2.5% and 97.5% quantiles
#: of 400 draws are within about one percentile of the posterior's. The draws cost n_draws x n_classes^2 gamma
#: variates per worker, so a crowd with many workers and many classes gets fewer (:func:`posterior_draws`).
POSTERIOR_DRAWS = 400
#: Gamma variates per reference before :func:`posterior_draws` draws fewer than :data:`POSTERIOR_DRAWS` (about
#: 2 s of draws), and the fewest draws it takes.
DRAW_BUDGET, MIN_DRAWS = 20_000_000, 100


def posterior_draws(n_boot: int, *, n_workers: int, n_classes: int) -> int:
    """The posterior draws of a report: :data:`POSTERIOR_DRAWS`, at most ``n_boot`` (0: no intervals), and fewer
    (down to :data:`MIN_DRAWS`) where ``n_workers`` x ``n_classes``^2 x the draws would pass :data:`DRAW_BUDGET`
    (measured: 800 workers on 20 classes took 20 s with 400 draws)."""
    fit = DRAW_BUDGET // max(1, n_workers * n_classes * n_classes)
    return int(min(n_boot, POSTERIOR_DRAWS, max(MIN_DRAWS, fit)))

#: The verdicts, from the most to the least severe.
VERDICTS = ("block", "watch", "keep")


@dataclass(frozen=True)
class VerdictRules:
    """When a worker is blocked, watched or kept (module notes).

    Parameters
    ----------
    min_items : int, default=20
        Judge only workers with at least this many compared items (tokens for span data).
    block_below : float, default=0.05
        Block when the spammer score's interval lies wholly below this. 0.05 is a binary worker whose
        sensitivity plus specificity is within 0.22 of 1 (a symmetric accuracy under 0.61).
    watch_below : float, default=0.15
        Watch when the spammer score's interval lies wholly below this (a symmetric binary accuracy under
        about 0.69).
    bias_above : float, default=0.3
        Watch when the worker gives a label at least this much more often than the other annotators on the
        same items.
    """

    min_items: int = 20
    block_below: float = 0.05
    watch_below: float = 0.15
    bias_above: float = 0.3

    def __post_init__(self) -> None:
        if isinstance(self.min_items, bool) or not isinstance(self.min_items, int) or self.min_items < 1:
            raise ValueError(f"min_items must be an integer >= 1, found {self.min_items!r}")
        for name in ("block_below", "watch_below", "bias_above"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], found {value!r}")
        if self.watch_below < self.block_below:
            raise ValueError(f"watch_below ({self.watch_below}) must not be below block_below ({self.block_below})")

    def as_record(self) -> dict[str, int | float]:
        """The rules as the report's ``verdict_rules`` holds them."""
        return {"min_items": int(self.min_items), "block_below": float(self.block_below),
                "watch_below": float(self.watch_below), "bias_above": float(self.bias_above)}


def spammer_score(confusion: NDArray) -> NDArray[np.float64]:
    """Raykar & Yu's spammer score of confusion matrices (module notes), rows normalised here.

    Parameters
    ----------
    confusion : ndarray of shape (..., n_classes, n_classes)
        Counts or probabilities; ``confusion[..., c, k]``: truth ``c``, answer ``k``. Rows summing to 0 are
        rows the worker was not seen on and are left out.

    Returns
    -------
    ndarray of shape (...)
        In [0, 1]; NaN with fewer than two seen rows.

    Notes
    -----
    For any row :math:`p`, :math:`\\sum_{c<c'} \\|a_c - a_{c'}\\|^2 = C' \\sum_c \\|d_c\\|^2 - \\|\\sum_c d_c\\|^2`
    with :math:`d_c = a_c - p` over the seen rows, so no pair of rows is formed. :math:`p` is the first seen
    row: rows equal to it give :math:`d_c = 0` exactly, so identical rows score exactly 0 (the same sum
    around the rows' mean would leave a rounding residue).
    """
    conf = np.asarray(confusion, dtype=np.float64)
    totals = conf.sum(axis=-1, keepdims=True)
    seen = totals[..., 0] > 0
    with np.errstate(invalid="ignore", divide="ignore"):  # unseen rows: 0/0, zeroed below
        rows = np.where(totals > 0, conf / totals, 0.0)
    pivot = np.take_along_axis(rows, np.argmax(seen, axis=-1)[..., None, None], axis=-2)
    d = np.where(seen[..., None], rows - pivot, 0.0)
    n_seen = seen.sum(axis=-1).astype(np.float64)
    pair_sum = n_seen * np.square(d).sum(axis=(-1, -2)) - np.square(d.sum(axis=-2)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = pair_sum / (n_seen * (n_seen - 1))
    return np.where(n_seen >= 2, np.clip(score, 0.0, 1.0), np.nan)


@dataclass(frozen=True)
class WorkerConfusions:
    """Every annotator's confusion counts against the experts and against the aggregate.

    Attributes
    ----------
    vs_expert, vs_aggregate : ndarray of shape (n_workers, n_classes, n_classes)
        ``[w, c, k]``: items the reference labels ``c`` and worker ``w`` labels ``k``.
    answers : ndarray of shape (n_workers, n_classes)
        Each worker's answers by label.
    others : ndarray of shape (n_workers, n_classes)
        The other annotators' answers by label on the worker's items.
    """

    vs_expert: NDArray[np.int64]
    vs_aggregate: NDArray[np.int64]
    answers: NDArray[np.int64]
    others: NDArray[np.int64]


def worker_confusions(corpus: Corpus, *, expert: NDArray, aggregate: NDArray) -> WorkerConfusions:
    """Confusion counts of every worker against ``expert`` and ``aggregate`` (arrays of shape (n_tokens,),
    ``MISSING`` where there is none), and the label counts of :func:`label_shares`, in bincounts over the
    annotations."""
    k, n_w = corpus.n_classes, corpus.n_workers
    label = corpus.label.astype(np.int64)
    base = corpus.worker.astype(np.int64) * (k * k) + label

    def counts(ref: NDArray) -> NDArray[np.int64]:
        ref_obs = np.asarray(ref, dtype=np.int64)[corpus.token]
        ok = ref_obs != MISSING
        flat = np.bincount(base[ok] + ref_obs[ok] * k, minlength=n_w * k * k)
        return flat.reshape(n_w, k, k)

    answers = np.bincount(corpus.worker.astype(np.int64) * k + label, minlength=n_w * k).reshape(n_w, k)
    # The other annotators' answers on the worker's tokens: every annotation's token label counts, summed per
    # worker, less the worker's own answer (one class at a time: no (n_obs, n_classes) temporary).
    per_token = corpus.vote_counts()
    others = np.empty((n_w, k), dtype=np.int64)
    for c in range(k):
        others[:, c] = np.rint(np.bincount(corpus.worker, weights=per_token[corpus.token, c], minlength=n_w))
    others -= answers
    return WorkerConfusions(vs_expert=counts(expert), vs_aggregate=counts(aggregate), answers=answers,
                            others=others)


def posterior_spammer_bounds(confusion: NDArray, *, n_draws: int, level: float, rng: np.random.Generator,
                             prior: float = 0.5, ranks: NDArray | None = None, min_items: int = 0,
                             max_cells: int = 5_000_000) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Equal-tailed posterior interval of every worker's spammer score (module notes).

    Each seen row of a worker's confusion counts gets the posterior of a multinomial row under a symmetric
    Dirichlet(``prior``) prior, Dirichlet(counts + ``prior``); the score of ``n_draws`` joint draws gives the
    interval's quantiles. All workers are drawn at once (gamma draws normalised per row), in chunks.

    Parameters
    ----------
    confusion : ndarray of shape (n_workers, n_classes, n_classes)
        Counts; rows summing to 0 (true classes the worker was not seen on) are left out.
    n_draws : int
    level : float
    rng : numpy Generator
    prior : float, default=0.5
        The Dirichlet pseudo-count of every cell (0.5: Jeffreys' prior of a multinomial row).
    ranks : ndarray of shape (n_workers,), optional
        The order workers are drawn in (:func:`crowdqa.quality.score_blocks.id_rank`), so a worker's interval
        does not depend on the order of the upload's rows; default their index.
    min_items : int, default=0
        Workers with fewer counted items get no interval (NaN): the verdict does not judge them, and most
        workers of a large crowd are such (the draws cost n_draws x n_classes^2 per worker).
    max_cells : int, default=5_000_000
        Workers are drawn in chunks of at most this many drawn cells.

    Returns
    -------
    low, high : ndarray of shape (n_workers,)
        NaN where the score is undefined (fewer than two seen rows), the worker has fewer than ``min_items``
        items, or ``n_draws`` is 0.
    """
    conf = np.asarray(confusion, dtype=np.float64)
    n_w, k = conf.shape[0], conf.shape[1]
    low, high = np.full(n_w, np.nan), np.full(n_w, np.nan)
    todo = np.flatnonzero(((conf.sum(axis=2) > 0).sum(axis=1) >= 2) & (conf.sum(axis=(1, 2)) >= min_items))
    if n_draws <= 0 or todo.size == 0:
        return low, high
    if ranks is not None:
        todo = todo[np.argsort(np.asarray(ranks)[todo], kind="stable")]
    alpha = (1 - level) / 2
    chunk = max(1, max_cells // (n_draws * k * k))
    for lo in range(0, todo.size, chunk):
        w = todo[lo:lo + chunk]
        counts = conf[w]
        seen = counts.sum(axis=2, keepdims=True) > 0
        # (n_draws, chunk, k, k); single precision: the quantiles need no more, and the draws cost half the time.
        draws = rng.standard_gamma((counts + prior).astype(np.float32), size=(n_draws, *counts.shape),
                                   dtype=np.float32)
        draws *= seen  # an unseen row stays empty and out of the score
        scores = _scores_of_draws(draws, seen[..., 0].sum(axis=-1))
        low[w], high[w] = np.quantile(scores, [alpha, 1 - alpha], axis=0)
    return low, high


def _scores_of_draws(draws: NDArray[np.float32], n_seen: NDArray) -> NDArray[np.float32]:
    """:func:`spammer_score` of posterior draws of shape (n_draws, n_workers, n_classes, n_classes), in place and
    in single precision: the rows' mean form :math:`(C' \\sum_c \\|a_c\\|^2 - \\|\\sum_c a_c\\|^2) / (C'(C'-1))`.
    Drawn rows are never exactly alike, so the exact-zero pivot of :func:`spammer_score` is not needed here; the
    seen rows' count ``n_seen`` (shape (n_workers,), at least 2) is each worker's."""
    totals = draws.sum(axis=-1, keepdims=True)
    np.divide(draws, totals, out=draws, where=totals > 0)  # unseen rows stay 0
    squares = np.einsum("...ck,...ck->...", draws, draws)
    columns = draws.sum(axis=-2)
    n = n_seen.astype(np.float32)
    return (n * squares - np.einsum("...k,...k->...", columns, columns)) / (n * (n - 1))


def label_shares(answers: NDArray, others: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Each label's share of the worker's answers and of the other annotators' answers on its items, and the
    worker's largest excess over labels (arrays of shape (n_workers, n_classes) and (n_workers,); NaN where a
    side has no answer)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        own = answers / answers.sum(axis=1, keepdims=True)
        crowd = others / others.sum(axis=1, keepdims=True)
    excess = own - crowd
    bias = np.where(np.isfinite(excess).any(axis=1), np.nanmax(np.where(np.isfinite(excess), excess, -np.inf),
                                                                  axis=1), np.nan)
    return own, crowd, bias


class Evidence(NamedTuple):
    """Every worker's spammer score against one reference (arrays of shape (n_workers,); NaN: none)."""

    score: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    #: Items compared with the reference.
    items: NDArray[np.int64]


def verdicts(expert: Evidence, aggregate: Evidence, bias: NDArray, *, judged: NDArray, rules: VerdictRules,
             bias_label: list[str | None] | None = None) -> tuple[list[str | None], list[str], NDArray[np.bool_]]:
    """Every worker's verdict and its reason (module notes), one rule set for all workers.

    Evidence against a reference counts when the worker has at least ``min_items`` items with it, the
    experts' first, the aggregate's unless the experts show the worker informative (their interval's lower
    bound at or above ``watch_below``). Block: an interval wholly below ``block_below``; watch: wholly below
    ``watch_below``, or a label overused by ``bias_above``; keep: otherwise.

    Parameters
    ----------
    expert, aggregate : Evidence
        The spammer scores against the experts and against the aggregate.
    bias : ndarray of shape (n_workers,)
        The largest excess of a label's share over the other annotators' (NaN: none).
    judged : ndarray of shape (n_workers,) of bool
        Workers to judge (crowd workers); the others get ``None`` and an empty reason.
    rules : VerdictRules
    bias_label : list of str or None, optional
        The label each worker overuses most, named in the reason.

    Returns
    -------
    verdict : list of str or None
    reason : list of str
    by_expert : ndarray of shape (n_workers,) of bool
        Whether the evidence the verdict rests on is the experts' (else the aggregate's): the side that blocked
        or watched the worker, else the experts where they count.
    """
    by_expert = np.zeros(bias.shape[0], dtype=bool)
    counts = {name: (ev.items >= rules.min_items) & np.isfinite(ev.score) for name, ev in
              (("experts", expert), ("aggregate", aggregate))}
    out: list[str | None] = []
    why: list[str] = []
    for w in range(bias.shape[0]):
        e_ok, a_ok = bool(counts["experts"][w]), bool(counts["aggregate"][w])
        if not judged[w]:
            out.append(None)
            why.append("")
            continue
        if not (e_ok or a_ok):
            out.append("keep")
            why.append(f"too few items to judge ({int(expert.items[w])} with the experts, {int(aggregate.items[w])} "
                       f"with the aggregate, < {rules.min_items}; or fewer than two labels among them)")
            continue
        # The experts' evidence first; the aggregate's where the experts do not show the worker informative.
        shown_informative = e_ok and float(expert.low[w]) >= rules.watch_below
        sides = [("experts", expert)] * e_ok + [("aggregate", aggregate)] * (a_ok and not shown_informative)
        found = next(((bar, name, ev) for bar in ("block", "watch") for name, ev in sides
                      if float(ev.high[w]) < getattr(rules, f"{bar}_below")), None)
        name, ev = ("experts", expert) if e_ok else ("aggregate", aggregate)
        if found is not None:
            bar, name, ev = found
        by_expert[w] = name == "experts"
        if found is not None:
            out.append(bar)
            whose = "the experts'" if name == "experts" else "the aggregate's"
            how = "do not depend" if bar == "block" else "depend little"
            why.append(f"answers {how} on {whose} labels: spammer score {float(ev.score[w]):.3f}, interval up to "
                       f"{float(ev.high[w]):.3f} < {getattr(rules, f'{bar}_below'):g}, on {int(ev.items[w])} items"
                       + (f" (the experts' {int(expert.items[w])} item{'' if expert.items[w] == 1 else 's'} "
                          "do not show otherwise)" if name == "aggregate" and expert.items[w] else ""))
        elif np.isfinite(bias[w]) and bias[w] >= rules.bias_above:
            out.append("watch")
            label = bias_label[w] if bias_label is not None else None
            why.append(f"answers {label!r} {float(bias[w]):.0%} more often than the other annotators on the same "
                       "items")
        else:
            out.append("keep")
            why.append(f"spammer score {float(ev.score[w]):.3f} (interval {float(ev.low[w]):.3f} to "
                       f"{float(ev.high[w]):.3f}) against the {name} on {int(ev.items[w])} items")
    return out, why, by_expert


def _matrix(conf: NDArray, labels: list[str], *, rows: str) -> dict:
    return record("WorkerConfusion", {"labels": labels, "rows": rows, "matrix": conf.tolist()})


def worker_quality_blocks(corpus: Corpus, *, expert: NDArray, aggregate: NDArray,
                          model_confusion: NDArray | None, rules: VerdictRules, n_draws: int, level: float,
                          seed: list[int]) -> list[dict | None]:
    """One ``WorkerQuality`` block per annotator (module notes; experts get theirs without a verdict).

    Parameters
    ----------
    corpus : Corpus
    expert, aggregate : ndarray of shape (n_tokens,)
        The expert reference and the aggregate (``MISSING`` where there is none).
    model_confusion : ndarray of shape (n_workers, n_classes, n_classes), optional
        The aggregator's ``worker_confusion_`` (NaN rows: no estimate for that worker).
    rules : VerdictRules
    n_draws : int
        Posterior draws of each interval (:func:`posterior_draws`; 0: no interval). Workers with fewer than
        ``rules.min_items`` items against a reference get no interval there.
    level : float
    seed : list of int
        Seed sequence of the posterior draws.

    Returns
    -------
    list of dict or None
        None for an annotator without an answer.
    """
    conf = worker_confusions(corpus, expert=expert, aggregate=aggregate)
    evidence = {}
    for name, counts in (("experts", conf.vs_expert), ("aggregate", conf.vs_aggregate)):
        low, high = posterior_spammer_bounds(counts, n_draws=n_draws, level=level,
                                             ranks=id_rank(corpus.worker_ids), min_items=rules.min_items,
                                             rng=np.random.default_rng([*seed, len(evidence)]))
        evidence[name] = Evidence(spammer_score(counts), low, high, counts.sum(axis=(1, 2)))
    own, crowd, bias = label_shares(conf.answers, conf.others)
    names = list(corpus.class_names)
    excess = np.where(np.isfinite(own - crowd), own - crowd, -np.inf)
    top = [names[int(i)] for i in np.argmax(excess, axis=1)]
    judged = np.array([r == "crowd" for r in corpus.worker_roles]) & (conf.answers.sum(axis=1) > 0)
    verdict, reason, by_expert = verdicts(evidence["experts"], evidence["aggregate"], bias, judged=judged,
                                          rules=rules, bias_label=top)
    # The score shown is the evidence the verdict rests on (for an unjudged annotator: the experts' where they
    # count), so a worker blocked on the aggregate's evidence does not show the experts' wide interval.
    use_expert = np.where(judged, by_expert, evidence["experts"].items >= rules.min_items)
    primary = {key: np.where(use_expert, getattr(evidence["experts"], key), getattr(evidence["aggregate"], key))
               for key in Evidence._fields}
    measured = np.where(use_expert[:, None, None], conf.vs_expert, conf.vs_aggregate)
    n_expert = evidence["experts"].items
    agg = evidence["aggregate"]
    model_score = None if model_confusion is None else spammer_score(model_confusion)
    blocks: list[dict | None] = []
    for w in range(corpus.n_workers):
        if conf.answers[w].sum() == 0:
            blocks.append(None)
            continue
        has_model = model_confusion is not None and bool(np.all(np.isfinite(model_confusion[w])))
        blocks.append(record("WorkerQuality", {
            "against": "experts" if use_expert[w] else "aggregate", "items": int(primary["items"][w]),
            "confusion": _matrix(measured[w], names, rows="experts" if use_expert[w] else "aggregate"),
            "confusion_vs_expert": _matrix(conf.vs_expert[w], names, rows="experts") if n_expert[w] else None,
            "model_confusion": np.round(model_confusion[w], 6).tolist() if has_model else None,
            "spammer_score": _finite(primary["score"][w]),
            "spammer_score_ci": _ci(primary["low"][w], primary["high"][w]),
            "spammer_score_vs_aggregate": _finite(agg.score[w]),
            "spammer_score_vs_aggregate_ci": _ci(agg.low[w], agg.high[w]),
            "model_spammer_score": _finite(model_score[w]) if has_model else None,
            "label_share": {n: _finite(own[w, c]) for c, n in enumerate(names)},
            "crowd_label_share": {n: _finite(crowd[w, c]) for c, n in enumerate(names)},
            "bias": _finite(bias[w]), "bias_label": top[w] if np.isfinite(bias[w]) else None,
            "verdict": verdict[w], "reason": reason[w],
        }))
    return blocks


def _ci(low: float, high: float) -> list[float] | None:
    return [float(low), float(high)] if np.isfinite(low) and np.isfinite(high) else None


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
