"""crowd-kit 1.4.2 as a reference: the shared categorical sets as corpora, and corpora as crowd-kit's DataFrames.

Tests skip (with the reason) where ../shared/data or crowd-kit is absent.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from tests.conftest import shared_path

SETS = ("snow2008_rte", "snow2008_temp", "bluebirds")


def load_set(name: str, tmp_path: Path) -> tuple[Corpus, np.ndarray]:
    """The crowd part of a shared categorical set and the gold class of every item (-1: none)."""
    shared_path("categorical", "welinder2010_bluebirds" if name == "bluebirds" else f"{name}.tsv")
    if name == "bluebirds":
        pytest.importorskip("yaml")
    from benchmarks.categorical import load

    corpus = load(name, tmp_path)
    gold = corpus.labels_of(corpus.worker_ids.index("gold"))
    return corpus.select_role("crowd"), gold


def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    has = gold >= 0
    return float(np.mean(pred[has] == gold[has]))


def crowdkit():
    """The ``crowdkit.aggregation`` module (skips without crowd-kit)."""
    pytest.importorskip("pandas")
    return pytest.importorskip("crowdkit.aggregation")


def frame(corpus: Corpus):
    """(task, worker, label) as crowd-kit takes them; workers and labels coded in order of first appearance.

    With these codes the order of first appearance is the sorted order, which crowd-kit's
    MACE assumes (it indexes its strategy counts by sorted values and its parameters by
    order of appearance). Returns the DataFrame and the class index of each label code.
    """
    import pandas as pd

    workers, _ = pd.factorize(corpus.worker)
    codes, classes = pd.factorize(corpus.label)
    df = pd.DataFrame({"task": corpus.token.astype(np.int64), "worker": workers, "label": codes})
    return df, np.asarray(classes, dtype=np.int64), np.asarray(pd.unique(corpus.worker), dtype=np.int64)


def to_labels(series, n_items: int, classes: np.ndarray) -> np.ndarray:
    """crowd-kit's label Series (by task, label codes) as class indices per item (-1: none)."""
    out = np.full(n_items, -1, dtype=np.int64)
    out[series.index.to_numpy(dtype=np.int64)] = classes[series.to_numpy(dtype=np.int64)]
    return out


@contextmanager
def quiet():
    """crowd-kit raises pandas deprecation warnings internally."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
