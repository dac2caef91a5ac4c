r"""M-MSR: worker skills by robust rank-one completion of the worker agreement matrix (Ma & Olshevsky, NeurIPS 2020).

Pair statistics come from two sparse products over the COO arrays (co-labelled items,
and co-labelled items with the same answer); the completion iterates over the observed
worker pairs only, every update one row-wise sort of each bucket of padded rows (one row
per worker, laid out once); the signs come from one sparse eigenvector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import eigsh

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_blas_thread
from crowdqa.aggregation._confusion import empirical_confusion
from crowdqa.aggregation._forward_backward import _buckets
from crowdqa.aggregation._params import ITERATIONS, RANDOM_STATE, Interval
from crowdqa.aggregation.corpus import Corpus

__all__ = ["MMSR"]


def _agreement_matrix(corpus: Corpus) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64],
                                                 NDArray[np.int64]]:
    r"""The observed entries of :math:`C` and every worker's number of co-workers.

    For workers :math:`i \ne j` who labelled :math:`N_{ij} > 0` items in common,
    :math:`C_{ij} = \frac{K}{K-1}\frac{\#\{\text{same answer}\}}{N_{ij}} - \frac{1}{K-1}`, an
    unbiased estimate of :math:`s_i s_j` under the one-coin model with
    :math:`s = \frac{K p - 1}{K - 1}`; other entries (and the diagonal) are unobserved.

    Returns
    -------
    row, col : ndarray of shape (n_pairs,)
        Observed ordered pairs (both orders).
    value : ndarray of shape (n_pairs,)
        :math:`C_{ij}`.
    degree : ndarray of shape (n_workers,)
        Number of co-workers of each worker.
    """
    n_workers, n_items, k = corpus.n_workers, corpus.n_tokens, corpus.n_classes
    ones = np.ones(corpus.n_obs)
    seen = sp.csr_matrix((ones, (corpus.worker, corpus.token)), shape=(n_workers, n_items))
    answered = sp.csr_matrix((ones, (corpus.worker, corpus.token * k + corpus.label)), shape=(n_workers, n_items * k))
    common = (seen @ seen.T).tocoo()
    same = (answered @ answered.T).tocoo()
    off = common.row != common.col
    row, col, n = common.row[off].astype(np.int64), common.col[off].astype(np.int64), common.data[off]
    # Pairs that agree somewhere are a subset of the co-labelling pairs: look them up by a combined key.
    key = row * n_workers + col
    same_key = same.row.astype(np.int64) * n_workers + same.col
    order = np.argsort(same_key)
    sorted_key, sorted_agree = same_key[order], same.data[order]
    pos = np.minimum(np.searchsorted(sorted_key, key), max(sorted_key.size - 1, 0))
    agree = np.where(sorted_key[pos] == key, sorted_agree[pos], 0.0) if key.size else np.zeros(0)
    value = k / (k - 1) * agree / n - 1.0 / (k - 1)
    return row, col, value, np.bincount(row, minlength=n_workers)


@dataclass(frozen=True)
class _Groups:
    """The entries of each group laid out as padded rows, in buckets of groups of similar size.

    ``buckets`` holds ``(groups, index, size)``: the groups of a bucket (n_b,), the entry
    of each cell (n_b, max_size), ``n_entries`` in padding cells, and each group's size (n_b,).
    """

    n_groups: int
    n_entries: int
    buckets: list[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]]


def _groups(group: NDArray[np.int64], n_groups: int) -> _Groups:
    """Lay out the entries of every group (worker) once; the completion loop sorts their values many times."""
    order = np.argsort(group, kind="stable")
    size = np.bincount(group, minlength=n_groups)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    order = np.append(order, group.size)  # padding cells point one past the last entry
    buckets = []
    for groups in _buckets(size):
        steps = np.arange(size[groups].max())
        cell = np.where(steps < size[groups, None], start[groups, None] + steps, group.size)
        buckets.append((groups, order[cell], size[groups]))
    return _Groups(n_groups, group.size, buckets)


def _trimmed_means(values: NDArray[np.float64], groups: _Groups, own: NDArray[np.float64], *, trim: int,
                   n_tasks: int) -> NDArray[np.float64]:
    r"""The MSR update of every group: the mean of its values after dropping extremes around its own value.

    Of the values below the group's own value :math:`a`, the ``trim`` smallest are dropped
    (all of them if there are fewer); likewise the ``trim`` largest above :math:`a`. A
    group with nothing left keeps :math:`a`; one whose remaining values are all 0 gets
    :math:`1/\sqrt{n}` (``n_tasks``), so no factor of the completion becomes 0.

    Each bucket of groups is one padded matrix sorted along its rows (padding sorts last
    as ``inf``), so the ranks are column indices and no per-iteration sort of all entries
    by (group, value) is needed.

    Parameters
    ----------
    values : ndarray of shape (n_entries,)
    groups : _Groups
        The group (worker) of each value, laid out by :func:`_groups`.
    own : ndarray of shape (n_groups,)
        :math:`a` of each group.
    trim : int
        :math:`F >= 0`.
    n_tasks : int

    Returns
    -------
    means : ndarray of shape (n_groups,)
    """
    means = own.copy()  # groups without entries keep their own value
    padded = np.append(values, np.inf)
    for group, index, size in groups.buckets:
        v = np.sort(padded[index], axis=1)
        a = own[group, None]
        below = np.count_nonzero(v < a, axis=1)
        above = np.count_nonzero(v > a, axis=1) - (v.shape[1] - size)  # padding is above every value
        lo, hi = np.minimum(below, trim), size - np.minimum(above, trim)
        step = np.arange(v.shape[1])
        keep = (step >= lo[:, None]) & (step < hi[:, None])
        total = np.where(keep, v, 0.0).sum(axis=1)
        nonzero = np.count_nonzero(keep & (v != 0), axis=1)
        count = hi - lo
        with np.errstate(invalid="ignore", divide="ignore"):  # empty groups are replaced on the next line
            mean = np.where(count > 0, total / count, a[:, 0])
        means[group] = np.where((count > 0) & (nonzero == 0), 1.0 / np.sqrt(n_tasks), mean)
    return means


def _signs(row: NDArray[np.int64], col: NDArray[np.int64], value: NDArray[np.float64], n_workers: int,
           start: NDArray[np.float64]) -> NDArray[np.float64]:
    r"""The sign of every worker's :math:`s` from the signs of :math:`C` (the authors' ``sign_determination``).

    Workers are nodes; a negative :math:`C_{ij}` joins :math:`i` and :math:`j` (opposite
    signs), a positive one joins them through a new middle node (same signs). The
    eigenvector of the random walk on this graph for its eigenvalue nearest -1 alternates
    in sign along edges, so its signs on the worker nodes give the 2-colouring that best
    fits :math:`C`; each connected part is oriented so that most of its workers are
    positive. Computed as the lowest eigenvector of :math:`D^{-1/2} A D^{-1/2}`, which
    has the random walk's eigenvalues. Workers whose :math:`C` row sums to 0 get 0.
    ``start`` (one positive value per worker) starts the iterative eigensolver on large
    parts: a middle node starts at the mean of its two workers' values, so the start does
    not depend on how the workers are numbered.

    Returns
    -------
    signs : ndarray of shape (n_workers,)
        +1, -1 or 0.
    """
    row_sum = np.bincount(row, weights=value, minlength=n_workers)
    valid = row_sum != 0
    use = valid[row] & valid[col]
    neg = use & (value < 0)
    pos = use & (value > 0) & (row < col)  # one middle node per unordered positive pair
    n_mid = int(pos.sum())
    mid = n_workers + np.arange(n_mid)
    r = np.concatenate([row[neg], row[pos], mid, col[pos], mid])
    c = np.concatenate([col[neg], mid, row[pos], mid, col[pos]])
    size = n_workers + n_mid
    node_start = np.concatenate([start, 0.5 * (start[row[pos]] + start[col[pos]])])
    adj = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(size, size))
    degree = np.asarray(adj.sum(axis=1)).ravel()
    signs = np.zeros(n_workers)
    n_parts, part = connected_components(adj, directed=False)
    for p in range(n_parts):  # one eigenvector per connected part (usually one part)
        nodes = np.flatnonzero(part == p)
        workers = nodes[nodes < n_workers]
        if degree[nodes].sum() == 0 or not valid[workers].any():
            continue
        d = 1.0 / np.sqrt(degree[nodes])
        sub = adj[nodes][:, nodes]
        norm = sp.diags(d) @ sub @ sp.diags(d)
        if nodes.size <= 256:
            vec = np.linalg.eigh(norm.toarray())[1][:, 0]
        else:
            vec = eigsh(norm, k=1, which="SA", v0=node_start[nodes])[1][:, 0]
        s = np.sign(vec * d)[: workers.size]
        signs[workers] = s * (np.sign(s.sum()) or 1.0)
    return np.where(valid, signs, 0.0)


class MMSR(BaseAggregator):
    r"""M-MSR: one-coin worker skills from a robust rank-one completion of the worker agreement matrix.

    Under the one-coin model (worker :math:`i` is right with probability :math:`p_i`, else
    answers one of the other :math:`K-1` classes uniformly), the agreement statistic
    :math:`C_{ij}` of two workers has expectation :math:`s_i s_j` with
    :math:`s_i = \frac{K p_i - 1}{K - 1}`. M-MSR completes the observed part of
    :math:`|C| \approx u v^\top` by alternating updates, each a *mean-subsequence-reduced*
    average that drops the :math:`F` most extreme values on each side of the current
    value, so up to :math:`F` adversarial co-workers per worker cannot move it:

    .. math:: v_j \leftarrow \mathrm{MSR}_F\{|C_{ij}| / u_i\}_{i \sim j}, \qquad
              u_i \leftarrow \mathrm{MSR}_F\{|C_{ij}| / v_j\}_{j \sim i},

    until :math:`\|uv^\top - u'v'^\top\|_F <` ``tol``, with
    :math:`F = \lfloor d_{\min}/2 \rfloor - 1` (:math:`d_{\min}`: fewest co-workers of any
    worker; no trimming below 0). Then :math:`|s| = u / \sqrt{\|u\|/\|v\|}`, the signs come
    from the sign pattern of :math:`C` (:func:`_signs`), :math:`s` is clipped to
    :math:`[-\frac{1}{K-1} + n^{-1/2}, 1 - n^{-1/2}]` (:math:`n` items), and each item gets
    the class with the largest sum of the weights
    :math:`\log\frac{(K-1)p_i}{1-p_i}` of the workers who chose it (ties: lowest index).

    Parameters
    ----------
    max_iter : int, default=10000
        Cap on completion iterations (crowd-kit's ``n_iter``).
    tol : float or None, default=1e-10
        Stop when :math:`\|uv^\top - u'v'^\top\|_F` is below ``tol``; None (or 0) runs every one of the
        ``max_iter`` iterations, as for the other methods.
    random_state : int, numpy.random.Generator or None, default=0
        Seeds the initial :math:`u, v \sim U(0, 1)`.

    Attributes
    ----------
    labels_ : ndarray of shape (n_items,)
    proba_ : ndarray of shape (n_items, n_classes)
        Softmax of the summed weights: the one-coin posterior at the estimated skills
        with a uniform class prior.
    skills_ : ndarray of shape (n_workers,)
        :math:`p_i`, the estimated probability of a right answer (NaN: no labels).
    weights_ : ndarray of shape (n_workers,)
        :math:`\log\frac{(K-1)p_i}{1-p_i}` (crowd-kit's ``skills_``); 0 for workers
        without co-workers.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        Each worker's answers tallied against ``labels_``.
    class_prior_ : ndarray of shape (n_classes,)
        Mean of ``proba_`` over the labelled items.
    log_likelihood_ : list of float
        Minus :math:`\|uv^\top - u'v'^\top\|_F` per iteration (no likelihood; recorded so
        progress can be followed).
    n_iter_ : int
    converged_ : bool

    Notes
    -----
    ``true_labels`` items keep their class in the output; the skills do not use them.

    Where crowd-kit 1.4.2 (``MMSR``) departs from the authors' MATLAB code
    (github.com/maqqbu/MMSR), this follows the authors: crowd-kit subtracts
    :math:`1/(K-1)` from every entry of :math:`C`, so unobserved pairs and the diagonal
    become negative edges of the sign graph (on sparse crowds many workers then get a
    negative skill, and the vote goes against their answers; the README's categorical
    table has both on RTE); for :math:`F < 0` it keeps only the largest value where
    MATLAB's empty ranges trim nothing; it replaces a zero mean only
    when one value is left. Its pair statistics need a dense workers x items matrix and a
    Python loop over all worker pairs; its signs a dense eigenproblem with a node per
    positive pair.

    References
    ----------
    .. [1] Q. Ma, A. Olshevsky (2020). Adversarial crowdsourcing through robust rank-one
       matrix completion. NeurIPS 33, 21841-21852.
       https://proceedings.neurips.cc/paper/2020/hash/f86890095c957e9b949d11d15f0d0cd5-Abstract.html

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3], worker=[0, 1, 2] * 4,
    ...     label=[1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0], doc_lengths=[1] * 4, token_start=[0] * 4,
    ...     token_end=[1] * 4, doc_ids=["a", "b", "c", "d"], texts=["a", "b", "c", "d"],
    ...     worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["no", "yes"])
    >>> MMSR().fit(c).labels_
    array([1, 0, 1, 0])
    """

    _n_classes_range: ClassVar[tuple[int, int | None]] = (2, None)
    skill_description: ClassVar[str | None] = "estimated probability of a right answer (one-coin)"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "max_iter": [ITERATIONS],
        "tol": [Interval(float, 0, None), None],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, *, max_iter: int = 10000, tol: float | None = 1e-10,
                 random_state: int | np.random.Generator | None = 0) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None,
            callback: ProgressCallback | None = None) -> MMSR:
        """Estimate the skills, then take the weighted vote.

        ``true_labels`` (class or -1 per token): overrides the vote there. ``callback(iteration, -change)`` after
        every completion iteration. Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, true_labels)
        k, n_workers, n_items = corpus.n_classes, corpus.n_workers, corpus.n_tokens
        rng = np.random.default_rng(self.random_state)
        row, col, value, degree = _agreement_matrix(corpus)
        x = np.abs(value)
        # F from the fewest co-workers among the annotators with labels (the vocabulary may list others).
        present = corpus.worker_answers > 0
        trim = max(int(degree[present].min()) // 2 - 1, 0) if present.any() else 0
        # drawn in the canonical annotator order: a seed means the same start for any row order
        u, v = rng.uniform(size=n_workers)[corpus.worker_rank], rng.uniform(size=n_workers)[corpus.worker_rank]
        by_col, by_row = _groups(col, n_workers), _groups(row, n_workers)
        history: list[float] = []
        converged = not row.size  # no two workers share an item: nothing to complete
        for _ in range(int(self.max_iter) if row.size else 0):
            u_old, v_old = u, v
            v = _trimmed_means(x / u[row], by_col, v, trim=trim, n_tasks=n_items)
            u = _trimmed_means(x / v[col], by_row, u, trim=trim, n_tasks=n_items)
            # ||u v' - a b'||_F from the differences, which keeps its precision near convergence
            du, dv = u - u_old, v - v_old
            change = float(np.sqrt(max(du @ du * (v @ v) + (u_old @ u_old) * (dv @ dv)
                                       + 2 * (du @ u_old) * (v @ dv), 0.0)))
            history.append(-change)
            if callback is not None:
                callback(len(history), -change)
            if self.tol is not None and change < self.tol:
                converged = True
                break
        scale = np.sqrt(np.linalg.norm(u) / np.linalg.norm(v)) if row.size else 1.0
        s = _signs(row, col, value, n_workers, rng.uniform(0.5, 1.5, size=n_workers)[corpus.worker_rank]) * u / scale
        floor = 1.0 / np.sqrt(n_items)
        s = np.clip(s, -1.0 / (k - 1) + floor, 1.0 - floor)
        p = s * (k - 1) / k + 1.0 / k
        weights = np.log(p * (k - 1) / (1.0 - p))

        scores = corpus.vote_counts(weights)
        labels = scores.argmax(axis=1).astype(np.int64)
        with np.errstate(under="ignore"):  # exp of very negative score differences underflows to 0 by design
            proba = np.exp(scores - scores.max(axis=1, keepdims=True))
        proba /= proba.sum(axis=1, keepdims=True)
        informed = np.bincount(corpus.token, minlength=n_items) > 0
        if known is not None:
            idx = np.flatnonzero(known >= 0)
            labels[idx] = known[idx]
            proba[idx] = np.eye(k)[known[idx]]
            informed[idx] = True
        prior = proba[informed].mean(axis=0) if informed.any() else np.full(k, 1.0 / k)
        proba[~informed] = prior
        labels[~informed] = int(np.argmax(prior))
        self.labels_ = labels
        self.proba_ = proba
        self.skills_ = np.where(present, p, np.nan)
        self.weights_ = weights
        self.worker_confusion_ = empirical_confusion(corpus, labels)
        self.class_prior_ = prior
        self._record_run(history, converged, last_change=f"the last of them still moved the rank-one completion by "
                         f"{-history[-1] if history else 0.0:.1e} (Frobenius norm; tol={self.tol})")
        return self
