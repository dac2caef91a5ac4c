"""Accuracy against the gold on the classic categorical data sets in ../shared/data/categorical.

Oracles: published figures (Snow et al. 2008 RTE majority vote about 0.92, Dawid-Skene about
0.93 in later surveys; Welinder et al. 2010 Bluebirds majority vote 0.7593) and crowd-kit
1.4.2's ``DawidSkene`` run on the same data in the same test. The files are read with
``read_categorical`` from a reordered temporary copy (item, annotator, label, gold).
"""

from __future__ import annotations

import csv
import warnings

import numpy as np
import pytest

from crowdqa.aggregation import ConvergenceWarning, DawidSkene, MajorityVote
from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest.categorical import read_categorical
from tests.conftest import shared_path

pytestmark = pytest.mark.shared_data


def _snow(name: str, tmp_path) -> Corpus:
    """Snow 2008 TSV as distributed (annotation id, worker id, item id, response, gold), read as a user would."""
    return read_categorical(shared_path("categorical", f"{name}.tsv"))


@pytest.mark.parametrize("name", ["snow2008_rte", "snow2008_temp"])
def test_snow_layout_is_read_by_its_header_names(name, tmp_path):
    """Oracle: the same rows rewritten by hand to the positional item, annotator, label, gold layout."""
    a, b = _snow(name, tmp_path), _snow_positional(name, tmp_path)
    assert (a.doc_ids, a.worker_ids, a.worker_roles, a.class_names) == (
        b.doc_ids, b.worker_ids, b.worker_roles, b.class_names)
    for field in ("token", "worker", "label"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def _snow_positional(name: str, tmp_path) -> Corpus:
    """Snow 2008 TSV rewritten to the positional layout ``item, annotator, label, gold``."""
    src = shared_path("categorical", f"{name}.tsv")
    out = tmp_path / f"{name}.csv"
    with open(src, encoding="utf-8", newline="") as f, open(out, "w", encoding="utf-8", newline="") as g:
        rows = csv.reader(f, delimiter="\t")
        next(rows)
        w = csv.writer(g)
        w.writerow(["item", "annotator", "label", "gold"])
        for r in rows:
            w.writerow([r[2], r[1], r[3], r[4]])
    return read_categorical(out)


def _bluebirds(tmp_path) -> Corpus:
    yaml = pytest.importorskip("yaml")
    folder = shared_path("categorical", "welinder2010_bluebirds")
    labels = yaml.safe_load(open(folder / "labels.yaml", encoding="utf-8"))
    gold = yaml.safe_load(open(folder / "gt.yaml", encoding="utf-8"))
    out = tmp_path / "bluebirds.csv"
    with open(out, "w", encoding="utf-8", newline="") as g:
        w = csv.writer(g)
        w.writerow(["image", "worker", "label", "gold"])
        for worker, answers in labels.items():
            for image, value in answers.items():
                w.writerow([image, worker, str(value), str(gold[image])])
    return read_categorical(out)


def _crowdkit_accuracy(crowd: Corpus, gold: np.ndarray, model: str = "DawidSkene") -> float:
    pd = pytest.importorskip("pandas")
    ck = pytest.importorskip("crowdkit.aggregation")
    df = pd.DataFrame({"task": crowd.token, "worker": [crowd.worker_ids[w] for w in crowd.worker],
                       "label": crowd.label.astype(int)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas deprecations inside crowd-kit
        s = getattr(ck, model)(n_iter=100).fit_predict(df)
    pred = np.full(crowd.n_tokens, -1)
    pred[s.index.to_numpy()] = s.to_numpy()
    return _accuracy(pred, gold)


def _accuracy(labels: np.ndarray, gold: np.ndarray) -> float:
    has = gold >= 0
    return float(np.mean(labels[has] == gold[has]))


def _scores(corpus: Corpus) -> dict[str, float]:
    gold = corpus.labels_of(corpus.worker_ids.index("gold"))
    crowd = corpus.select_role("crowd")  # the gold annotator is an expert: never used in the fit
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        out["mv"] = _accuracy(MajorityVote().fit(crowd).labels_, gold)
        out["ds"] = _accuracy(DawidSkene().fit(crowd).labels_, gold)
        out["one-coin"] = _accuracy(DawidSkene(model="one-coin").fit(crowd).labels_, gold)
    out["crowdkit-ds"] = _crowdkit_accuracy(crowd, gold)
    out["crowdkit-one-coin"] = _crowdkit_accuracy(crowd, gold, "OneCoinDawidSkene")
    return out


def test_rte(tmp_path):
    """Snow 2008 RTE (800 items, 164 workers, 8,000 labels). Oracles: the published MV accuracy (about 0.92)
    and crowd-kit's DS and one-coin DS on the same labels. Regression figures (our own measurement, not
    oracles): DS 0.9275, one-coin 0.9237."""
    c = _snow("snow2008_rte", tmp_path)
    assert (c.n_tokens, c.select_role("crowd").n_obs, len(c.workers_with_role("crowd"))) == (800, 8000, 164)
    s = _scores(c)
    print("RTE", s)
    assert s["mv"] == pytest.approx(0.92, abs=0.01)
    assert s["one-coin"] == pytest.approx(s["crowdkit-one-coin"], abs=0.01)
    assert s["ds"] == pytest.approx(s["crowdkit-ds"], abs=0.01)
    regression = {"ds": 0.9275, "one-coin": 0.9237}  # our own measurement: a change shows, it proves nothing
    assert {k: round(s[k], 4) for k in regression} == pytest.approx(regression, abs=0.01)


def test_temp(tmp_path):
    """Snow 2008 TEMP (462 items, 76 workers, 4,620 labels). Oracle: crowd-kit's DS (tolerance 0.01).
    Regression figures (our own measurement, not oracles): MV 0.9394, one-coin 0.9437."""
    c = _snow("snow2008_temp", tmp_path)
    assert (c.n_tokens, c.select_role("crowd").n_obs) == (462, 4620)
    s = _scores(c)
    print("TEMP", s)
    assert s["ds"] == pytest.approx(s["crowdkit-ds"], abs=0.01)
    regression = {"mv": 0.9394, "one-coin": 0.9437}  # our own measurement: a change shows, it proves nothing
    assert {k: round(s[k], 4) for k in regression} == pytest.approx(regression, abs=0.01)


def test_bluebirds(tmp_path):
    """Welinder 2010 Bluebirds (108 items, 39 workers, 4,212 labels). Oracles: MV 0.7593 (published) and
    crowd-kit. Regression figure (our own measurement, not an oracle): DS 0.8981; crowd-kit DS 0.8889
    (it stops at its own tol 1e-5), one-coin 0.5833, equal to
    crowd-kit's OneCoinDawidSkene (one-coin spreads a wrong answer over the K-1 other answers, so
    a phantom class would change it: categorical corpora have none)."""
    c = _bluebirds(tmp_path)
    assert (c.n_tokens, c.select_role("crowd").n_obs, len(c.workers_with_role("crowd"))) == (108, 4212, 39)
    s = _scores(c)
    print("Bluebirds", s)
    assert s["mv"] == pytest.approx(0.7593, abs=5e-5)
    assert s["ds"] == pytest.approx(s["crowdkit-ds"], abs=0.015)
    regression = {"ds": 0.8981}  # our own measurement: a change shows, it proves nothing
    assert {k: round(s[k], 4) for k in regression} == pytest.approx(regression, abs=0.01)
    assert s["one-coin"] == pytest.approx(s["crowdkit-one-coin"], abs=0.01)
