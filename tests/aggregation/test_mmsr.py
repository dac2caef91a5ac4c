"""M-MSR (Ma & Olshevsky 2020).

Oracles: a line-by-line Python transcription of the authors' MATLAB (``MainProgram.m``,
``remove.m``, ``sign_determination_valid.m`` at github.com/maqqbu/MMSR) with dense
matrices and loops, from the same initial vectors; crowd-kit 1.4.2's ``MMSR`` with the
authors' agreement matrix (crowd-kit makes unobserved pairs negative, see ``MMSR``'s
Notes) on TEMP and Bluebirds, within 0.005 accuracy; the paper's claim that M-MSR
resists adversarial workers that majority vote follows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.majority_vote import MajorityVote
from crowdqa.aggregation.mmsr import MMSR
from tests.aggregation.crowdkit_reference import accuracy, crowdkit, load_set, quiet
from tests.aggregation.test_dawid_skene import random_corpus


def _remove(x: np.ndarray, f: int, a: float, n_tasks: int) -> np.ndarray:
    """remove.m: MATLAB's empty ranges (1:F with F < 1) delete nothing."""
    y = np.sort(x)
    if np.count_nonzero(y < a) < f:
        y = y[y >= a]
    elif f > 0:
        y = y[f:]
    if np.count_nonzero(y > a) < f:
        y = y[y <= a]
    elif f > 0:
        y = y[: y.size - f]
    if y.size and np.all(y == 0):
        y = np.array([1.0 / np.sqrt(n_tasks)])
    return y


def _sign_determination(c: np.ndarray, s_abs: np.ndarray) -> np.ndarray:
    s = np.sign(c)
    n = s_abs.size
    valid = np.flatnonzero(c.sum(axis=1) != 0)
    sv = s[np.ix_(valid, valid)]
    k = valid.size
    ends_i, ends_j = np.nonzero(np.triu(sv) == 1)
    sv[sv == 1] = 0
    eye = np.eye(k)
    new = eye[ends_i] + eye[ends_j]
    m = new.shape[0]
    a = np.block([[np.abs(sv), new.T], [new, np.zeros((m, m))]])
    w = a / a.sum(axis=1, keepdims=True)
    values, vectors = np.linalg.eig(w + np.eye(k + m))
    vec = np.sign(vectors[:, np.argmin(np.abs(values))].real)
    out = np.zeros(n)
    out[valid] = np.sign(vec[:k].sum()) * s_abs[valid] * vec[:k]
    return out


def reference_mmsr(corpus: Corpus, u: np.ndarray, v: np.ndarray, *, max_iter: int = 10000, tol: float = 1e-10):
    """The authors' M-MSR with dense matrices and loops; returns (vote weights, labels)."""
    n_workers, n_tasks, k = corpus.n_workers, corpus.n_tokens, corpus.n_classes
    y = np.zeros((n_workers, n_tasks))
    y[corpus.worker, corpus.token] = corpus.label + 1
    n = np.zeros((n_workers, n_workers))
    c = np.zeros((n_workers, n_workers))
    for i in range(n_workers):
        for j in range(n_workers):
            if i != j:
                both = (y[i] > 0) & (y[j] > 0)
                n[i, j] = both.sum()
                if n[i, j]:
                    c[i, j] = k / ((k - 1) * n[i, j]) * np.sum((y[i] == y[j]) & both) - 1 / (k - 1)
    x = np.abs(c)
    idx = n > 0
    f = int(np.floor(np.min(np.sign(n).sum(axis=0)) / 2)) - 1
    u, v = u.copy(), v.copy()
    for _ in range(max_iter):
        u_pre, v_pre = u.copy(), v.copy()
        for j in range(n_workers):
            kept = _remove(x[idx[:, j], j] / u[idx[:, j]], f, v[j], n_tasks)
            if kept.size:
                v[j] = kept.mean()
        for i in range(n_workers):
            kept = _remove(x[i, idx[i]] / v[idx[i]], f, u[i], n_tasks)
            if kept.size:
                u[i] = kept.mean()
        if np.linalg.norm(np.outer(u, v) - np.outer(u_pre, v_pre)) < tol:
            break
    s = _sign_determination(c, u / np.sqrt(np.linalg.norm(u) / np.linalg.norm(v)))
    s = np.maximum(np.minimum(s, 1 - 1 / np.sqrt(n_tasks)), -1 / (k - 1) + 1 / np.sqrt(n_tasks))
    p = s * (k - 1) / k + 1 / k
    weights = np.log(p * (k - 1) / (1 - p))
    scores = np.zeros((n_tasks, k))
    for w, t, lab in zip(corpus.worker.tolist(), corpus.token.tolist(), corpus.label.tolist(), strict=True):
        scores[t, lab] += weights[w]
    return weights, scores.argmax(axis=1)


def adversarial_crowd(rng: np.random.Generator, *, n_items: int = 80, honest: int = 8, adversaries: int = 2,
                      per_item: int = 5) -> tuple[Corpus, np.ndarray]:
    """Honest one-coin workers plus adversaries who give the same wrong answer (class (truth + 1) % K)."""
    corpus, truth = random_corpus(rng, n_items=n_items, n_workers=honest + adversaries, n_classes=3,
                                  per_item=per_item, accuracy=(0.6, 0.9))
    bad = corpus.worker >= honest
    label = np.where(bad, (truth[corpus.token] + 1) % 3, corpus.label)
    fields = {f: getattr(corpus, f) for f in ("token", "worker", "doc_lengths", "token_start", "token_end",
                                                "doc_ids", "texts", "worker_ids", "worker_roles", "class_names")}
    return Corpus.from_arrays(**fields, label=label), truth


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_matches_the_authors_algorithm(seed):
    corpus, _ = adversarial_crowd(np.random.default_rng(seed))
    model = MMSR(random_state=seed).fit(corpus)
    init = np.random.default_rng(seed)
    u, v = init.uniform(size=corpus.n_workers), init.uniform(size=corpus.n_workers)
    weights, labels = reference_mmsr(corpus, u, v)
    np.testing.assert_allclose(model.weights_, weights, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(model.labels_, labels)


def test_resists_adversaries_that_outvote_the_honest(seed):
    """Three colluding adversaries among five labels per item: majority vote follows them often; M-MSR does not."""
    rng = np.random.default_rng(seed)
    corpus, truth = adversarial_crowd(rng, n_items=150, honest=9, adversaries=3, per_item=6)
    mv = accuracy(MajorityVote().fit(corpus).labels_, truth)
    mmsr = MMSR().fit(corpus)
    assert accuracy(mmsr.labels_, truth) >= mv
    assert np.all(mmsr.weights_[9:] < np.min(mmsr.weights_[:9]))


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["snow2008_temp", "bluebirds"])
def test_matches_crowdkit_with_the_authors_agreement_matrix(name, tmp_path, monkeypatch):
    ck = crowdkit()
    import pandas as pd

    crowd, gold = load_set(name, tmp_path)
    original = ck.MMSR._construnct_covariation_matrix

    def authors(self, answers):  # the authors' C: unobserved pairs and the diagonal are 0, not -1/(K-1)
        original(self, answers)
        self._covariation_matrix[self._n_common_tasks == 0] = 0.0

    monkeypatch.setattr(ck.MMSR, "_construnct_covariation_matrix", authors)
    df = pd.DataFrame({"task": crowd.token, "worker": crowd.worker.astype(np.int64), "label": crowd.label})
    with quiet():
        s = ck.MMSR().fit_predict(df)
    theirs = np.full(crowd.n_tokens, -1)
    theirs[s.index.to_numpy(dtype=np.int64)] = s.to_numpy(dtype=np.int64)
    assert accuracy(MMSR().fit(crowd).labels_, gold) == pytest.approx(accuracy(theirs, gold), abs=0.005)
