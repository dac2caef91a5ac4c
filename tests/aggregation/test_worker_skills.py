"""Worker skills rank planted spammers last (issue 17: MACE and GLAD; also IBCC).

Oracle: the planted crowd. Ten workers answer right with probability 0.6-0.9 (else a
uniformly drawn wrong class); three spammers answer from a distribution of their own,
whatever the truth (MACE's notion of spamming). Each item gets five distinct workers.
M-MSR is left out: its skills come from pair agreements, and it ranked a spammer above a worker in 2 of 60 seeds;
so are Wawa and ZeroBasedSkill, agreement with a vote that a spammer can match by chance (Wawa did in 1 of 40).
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation.corpus import Corpus

N_GOOD, N_SPAM = 10, 3


def planted_crowd(seed: int, *, n_items: int = 300, n_classes: int = 3, per_item: int = 5) -> Corpus:
    rng = np.random.default_rng(seed)
    n_workers = N_GOOD + N_SPAM
    truth = rng.integers(0, n_classes, size=n_items)
    accuracy = rng.uniform(0.6, 0.9, size=N_GOOD)
    strategy = rng.dirichlet(np.ones(n_classes), size=N_SPAM)
    workers = np.argsort(rng.random((n_items, n_workers)), axis=1)[:, :per_item]
    token, worker = np.repeat(np.arange(n_items), per_item), workers.ravel()
    wrong = (truth[token] + rng.integers(1, n_classes, size=token.size)) % n_classes
    good = np.where(rng.random(token.size) < accuracy[np.minimum(worker, N_GOOD - 1)], truth[token], wrong)
    spam_u = rng.random(token.size)
    spam = (spam_u[:, None] > np.cumsum(strategy, axis=1)[np.maximum(worker - N_GOOD, 0)]).sum(axis=1)
    label = np.where(worker < N_GOOD, good, np.minimum(spam, n_classes - 1))
    return Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=np.ones(n_items), token_start=np.zeros(n_items),
        token_end=np.ones(n_items), doc_ids=[f"i{i}" for i in range(n_items)], texts=["x"] * n_items,
        worker_ids=[f"w{w}" for w in range(n_workers)], worker_roles=["crowd"] * n_workers,
        class_names=[f"c{k}" for k in range(n_classes)])


@pytest.mark.parametrize("method", ["mace", "glad", "ibcc"])
def test_spammers_rank_last(method, seed):
    corpus = planted_crowd(seed)
    skills = make_aggregator(method).fit(corpus).skills_
    assert skills.shape == (N_GOOD + N_SPAM,) and np.all(np.isfinite(skills))
    assert set(np.argsort(skills)[:N_SPAM].tolist()) == set(range(N_GOOD, N_GOOD + N_SPAM)), skills
