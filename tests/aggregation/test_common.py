"""Contract tests run over every aggregator of the registry (scikit-learn's estimator checks).

Oracle: the estimator contract of DESIGN.md (Aggregators) and STYLE.md (aggregation/) -- fit returns self, fitted
attributes exist only after fit and have the documented shapes, EM estimators warn ``ConvergenceWarning`` at
``max_iter=1``, rows of ``proba_`` sum to 1, clamped tokens keep their class, inputs are not changed.

Every method of :data:`crowdqa.aggregation.registry.METHODS` is covered without being named here (a method added
to the table is tested by its entry); :data:`CONTRACT` lists the tests, which a method registered at run time
(tests/test_add_an_aggregator.py) runs by calling them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.registry import METHODS, aggregator_class

FITTED = ("labels_", "proba_", "worker_confusion_", "class_prior_", "n_iter_", "log_likelihood_", "converged_")

#: Iterative estimators whose history records the size of each iteration's move, not an objective (they have no
#: likelihood); their ``max_iter`` warning gives the last move against ``tol``.
HISTORY_OF_MOVES = {"MMSR", "ZeroBasedSkill"}
#: Parameters under which two iterations cannot land exactly on the fixed point (a move of 0, which is below any
#: ``tol`` and so convergence, no warning): ZeroBasedSkill's default full step often does, where the skill-weighted
#: vote equals the majority vote (11 of 200 contract corpora); half steps approach it geometrically (0 of 1,000).
STILL_MOVING = {"ZeroBasedSkill": {"lr_init": 0.5}}
#: Parameters that keep a method's contract run short, and the variants tested beside each method's defaults.
FAST = {"MACE": {"n_restarts": 2}}
VARIANTS = [("DawidSkene", {"model": "one-coin"}, "DawidSkene-one-coin"),
            ("MACE", {"n_restarts": 2, "method": "em"}, "MACE-em")]


def is_em(method: str) -> bool:
    """Whether ``method``'s estimator iterates to a tolerance (it has ``max_iter`` and ``tol``), so that stopping
    at ``max_iter`` with a ``tol`` given warns, EM or not (STYLE.md's convention: only ``tol=None``, a fixed
    schedule, runs ``max_iter`` iterations without a warning).

    The others fit in one pass (majority vote, Wawa, gold majority vote) or, like KOS, run a fixed number of
    rounds with no ``tol`` to test against (crowd-kit's ``n_iter``; its ``converged_`` says whether the last
    round changed a decision).
    """
    return {"max_iter", "tol"} <= set(aggregator_class(method)._get_param_names())


def estimator_cases(methods=None) -> list:
    """``(method, params, is_em)`` for every method (by default the registry's) and the variants of its class."""
    cases = []
    for method in METHODS if methods is None else methods:
        name = aggregator_class(method).__name__
        cases.append(pytest.param(method, FAST.get(name, {}), is_em(method), id=name))
        cases += [pytest.param(method, params, is_em(method), id=label)
                  for cls_name, params, label in VARIANTS if cls_name == name]
    return cases


ESTIMATORS = estimator_cases()


def corpus_for(method: str, seed: int) -> Corpus:
    """The contract corpus a method takes, by its entry: two classes (O/P) for a binary model (KOS), and an expert
    annotator for a model that learns from the experts (GoldMajorityVote)."""
    entry = METHODS[method]
    corpus = sequence_corpus(seed, binary=entry.classes[1] == 2)
    if not entry.experts:
        return corpus
    return Corpus.from_arrays(**{**{f: getattr(corpus, f) for f in CORPUS_FIELDS},
                                 "worker_roles": ["crowd"] * (corpus.n_workers - 1) + ["expert"]})


CORPUS_FIELDS = ("token", "worker", "label", "doc_lengths", "token_start", "token_end", "doc_ids", "texts",
                 "worker_ids", "worker_roles", "class_names")


def sequence_corpus(seed: int, *, n_docs: int = 6, n_workers: int = 4, binary: bool = False) -> Corpus:
    """BIO-labelled documents of 4-9 tokens; every annotator labels every document (noisy copies of a truth).

    ``binary`` merges B and I into one class (inside/outside).
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 10, size=n_docs)
    n_tokens = int(lengths.sum())
    truth = np.zeros(n_tokens, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(lengths)])
    for d in range(n_docs):
        b = int(start[d]) + 1
        truth[b], truth[b + 1] = 1, 2  # one two-token entity per document
    words = rng.choice(["the", "Patients", "with", "7", "adults", "were"], size=n_tokens)
    texts, t_start, t_end = [], [], []
    for d in range(n_docs):
        pos = 0
        parts = []
        for w in words[start[d]:start[d + 1]]:
            t_start.append(pos)
            t_end.append(pos + len(w))
            parts.append(w)
            pos += len(w) + 1
        texts.append(" ".join(parts))
    token = np.tile(np.arange(n_tokens), n_workers)
    worker = np.repeat(np.arange(n_workers), n_tokens)
    flip = rng.random(token.size) < 0.15
    label = np.where(flip, rng.integers(0, 3, size=token.size), truth[token])
    if binary:
        label = np.minimum(label, 1)
    return Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=lengths, token_start=t_start, token_end=t_end,
        doc_ids=[f"d{d}" for d in range(n_docs)], texts=texts, worker_ids=[f"w{w}" for w in range(n_workers)],
        worker_roles=["crowd"] * n_workers, class_names=["O", "P"] if binary else ["O", "B-P", "I-P"],
    )


def _fit(est, corpus, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(corpus, **kw)


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_fit_returns_self_and_sets_fitted_attributes(method, params, is_em, seed):
    corpus = corpus_for(method, seed)
    est = make_aggregator(method, params)
    for name in FITTED:
        assert not hasattr(est, name), name
    with pytest.raises(ValueError, match="not fitted"):
        est.predict()
    assert _fit(est, corpus) is est
    n, k, w = corpus.n_tokens, corpus.n_classes, corpus.n_workers
    assert est.labels_.shape == (n,) and est.labels_.dtype == np.int64
    assert est.proba_.shape == (n, k)
    assert est.worker_confusion_.shape == (w, k, k)
    assert est.class_prior_.shape == (k,)
    assert isinstance(est.n_iter_, int) and isinstance(est.log_likelihood_, list)
    assert isinstance(est.converged_, bool | np.bool_)
    np.testing.assert_allclose(est.proba_.sum(axis=1), 1.0, rtol=1e-9)
    np.testing.assert_allclose(est.worker_confusion_.sum(axis=2), 1.0, rtol=1e-9)
    np.testing.assert_allclose(est.class_prior_.sum(), 1.0, rtol=1e-9)
    assert np.all((est.labels_ >= 0) & (est.labels_ < k))
    np.testing.assert_array_equal(est.predict(), est.labels_)
    np.testing.assert_array_equal(est.predict_proba(), est.proba_)


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_max_iter_one_warns_for_em(method, params, is_em, seed):
    corpus = corpus_for(method, seed)
    if not is_em:
        pytest.skip("not an EM estimator")
    est = make_aggregator(method, {**params, "max_iter": 1, "tol": 0.0})
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est.fit(corpus)
    assert est.n_iter_ == 1 and not est.converged_ and len(est.log_likelihood_) == 1


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_tol_none_runs_every_iteration(method, params, is_em, seed):
    """The README (Aggregators): "`tol` null (or 0) runs every one of the `max_iter` iterations", for every method
    that has a `tol` (MMSR refused null: "tol must be >= 0, found None")."""
    est = make_aggregator(method, params)
    if "tol" not in est.get_params():
        pytest.skip("no tol")
    est = make_aggregator(method, {**params, "max_iter": 3, "tol": None})
    _fit(est, corpus_for(method, seed))
    assert est.n_iter_ == 3


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_the_max_iter_warning_says_what_stopping_there_means(method, params, is_em, seed):
    """Issue 28: the warning (the job's progress and the report quote it) gives the last change against tol
    and what stopping there means, not only that the fit stopped."""
    corpus = corpus_for(method, seed)
    if not is_em:
        pytest.skip("not an EM estimator")
    moving = STILL_MOVING.get(aggregator_class(method).__name__, {})
    est = make_aggregator(method, {**params, **moving, "max_iter": 2, "tol": 1e-300})
    with pytest.warns(ConvergenceWarning) as caught:
        est.fit(corpus)
    message = str(caught[-1].message)
    assert "may still change with more iterations" in message and "tol=1e-300" in message
    h = est.log_likelihood_
    if type(est).__name__ in HISTORY_OF_MOVES:  # the last move itself, not a change of an objective
        assert f"{-h[-1]:.1e}" in message
    else:
        change = abs(h[-1] - h[-2]) / max(abs(h[-1]), 1.0)
        assert f"changed the objective by {change:.1e} (relative; tol=1e-300)" in message


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_known_tokens_are_clamped(method, params, is_em, seed):
    corpus = corpus_for(method, seed)
    known = np.full(corpus.n_tokens, -1)
    # A valid BIO sequence (B I O B) on the first four tokens (all in document 0), which
    # disagrees with the planted truth (O B I O) on tokens 0, 1, 2 and 3.
    # (Binary corpora: inside, inside, outside, inside.)
    known[:4] = [1, 2, 0, 1] if corpus.n_classes == 3 else [1, 1, 0, 1]
    given = known.copy()
    # an int64 known reaches the fit as a read-only view of the caller's array: a fit that wrote into it raises
    est = _fit(make_aggregator(method, params), corpus, true_labels=known)
    np.testing.assert_array_equal(known, given)
    np.testing.assert_array_equal(est.labels_[:4], known[:4])
    np.testing.assert_allclose(est.proba_[:4], np.eye(corpus.n_classes)[known[:4]], atol=1e-12)


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_bad_known_raises(method, params, is_em, seed):
    corpus = corpus_for(method, seed)
    est = make_aggregator(method, params)
    with pytest.raises(ValueError, match="true_labels must have shape"):
        est.fit(corpus, true_labels=np.zeros(3, dtype=int))
    for bad in (-2, corpus.n_classes):
        known = np.full(corpus.n_tokens, -1)
        known[5] = bad
        message = rf"true_labels must be -1 or in \[0, {corpus.n_classes}\), found {bad} at token 5"
        with pytest.raises(ValueError, match=message):
            est.fit(corpus, true_labels=known)


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_input_corpus_and_params_unchanged(method, params, is_em, seed):
    corpus = corpus_for(method, seed)
    before = [a.copy() for a in (corpus.token, corpus.worker, corpus.label)]
    est = make_aggregator(method, params)
    got = est.get_params()
    _fit(est, corpus)
    assert est.get_params() == got
    for a, b in zip(before, (corpus.token, corpus.worker, corpus.label), strict=True):
        np.testing.assert_array_equal(a, b)


def test_registry_rejects_unknown_method_and_parameter():
    with pytest.raises(ValueError, match="method must be one of"):
        make_aggregator("no-such-method")  # (was "glad", which now exists)
    with pytest.raises(ValueError, match="found unknown parameter 'n_iter'"):
        make_aggregator("ds", {"n_iter": 3})


def test_registry_passes_parameters():
    est = make_aggregator("mv", {"tie_break": "lowest"})
    assert type(est).__name__ == "MajorityVote" and est.tie_break == "lowest"
    assert make_aggregator("ds", None).get_params()["max_iter"] == 100


def test_package_exports():
    """The package exports every registered estimator by its class name, and the shared names."""
    from crowdqa import aggregation
    from crowdqa.aggregation.registry import METHODS, aggregator_class

    for name in ("Corpus", "MISSING", "ConvergenceWarning", "make_aggregator", "METHODS"):
        assert hasattr(aggregation, name)
    for method in METHODS:
        cls = aggregator_class(method)
        assert getattr(aggregation, cls.__name__) is cls and cls.__name__ in aggregation.__all__
    with pytest.raises(AttributeError, match="no attribute 'NoSuchAggregator'"):
        aggregation.NoSuchAggregator  # noqa: B018


# ----------------------------------------------------------------------------- scikit-learn conventions
# Oracle: scikit-learn itself -- sklearn.base.clone, check_is_fitted and NotFittedError
# are run on our estimators as they are on its own.


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_sklearn_clone_get_params_set_params(method, params, is_em, seed):
    from sklearn.base import clone

    est = make_aggregator(method, params)
    fitted = _fit(clone(est), corpus_for(method, seed))
    twin = clone(fitted)
    assert type(twin) is type(est) and twin is not fitted
    assert twin.get_params() == est.get_params() == est.get_params(deep=False)
    assert not hasattr(twin, "labels_")
    name = next(iter(est.get_params()))
    value = est.get_params()[name]
    assert est.set_params(**{name: value}) is est and est.get_params()[name] is value
    with pytest.raises(ValueError, match="found unknown parameter 'no_such_parameter'"):
        est.set_params(no_such_parameter=1)


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_unfitted_access_raises_not_fitted_error(method, params, is_em, seed):
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    est = make_aggregator(method, params)
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict()
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict_proba()
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    check_is_fitted(_fit(est, corpus_for(method, seed)))


def test_every_parameter_has_one_constraint_and_the_defaults_pass():
    from crowdqa.aggregation.registry import METHODS, aggregator_class, validate_params

    for method in METHODS:
        cls = aggregator_class(method)
        assert set(cls._parameter_constraints) == set(cls._get_param_names()), method
        validate_params(method, {})


@pytest.mark.parametrize(("method", "params", "is_em"), ESTIMATORS)
def test_validate_params_names_the_parameter(method, params, is_em):
    """Request-time validation: a value no constraint accepts is refused, naming the parameter and the value."""
    from crowdqa.aggregation.registry import validate_params

    validate_params(method, params)
    for name in make_aggregator(method).get_params():
        with pytest.raises(ValueError, match=rf"^{name} must be .+, found 'no such value'$"):
            validate_params(method, {**params, name: "no such value"})
    with pytest.raises(ValueError, match="found unknown parameter 'n_iter'"):
        validate_params(method, {"n_iter": 3})


@pytest.mark.parametrize(("params", "message"), [
    ({"max_iter": 0}, "max_iter must be an integer in [1, 10000], found 0"),
    ({"max_iter": 2.0}, "max_iter must be an integer in [1, 10000], found 2.0"),
    ({"max_iter": True}, "max_iter must be an integer in [1, 10000], found True"),
    ({"tol": float("nan")}, "tol must be >= 0 or None, found nan"),
    ({"alpha": "0.1"}, "alpha must be >= 0, found '0.1'"),
    ({"model": "two-coin"}, "model must be one of ('full', 'one-coin'), found 'two-coin'"),
    ({"random_state": -1}, "random_state must be an integer >= 0 or a numpy.random.Generator or None, found -1"),
])
def test_validate_params_messages(params, message):
    """The message of every parameter check: '<name> must be <what it may be>, found <value>' (JSON types: no bool
    for a number)."""
    from crowdqa.aggregation.registry import validate_params

    with pytest.raises(ValueError) as info:
        validate_params("ds", params)
    assert str(info.value) == message


def test_jobs_offer_every_registered_method():
    """A job's methods (the API's ``Method`` schema) are the registry's, then the two that choose among them (auto,
    compare)."""
    from crowdqa.store.models import JobCreate, job_methods

    assert job_methods() == (*METHODS, "auto", "compare")
    schema = JobCreate.model_json_schema()
    assert schema["$defs"]["Method"]["enum"] == [*METHODS, "auto", "compare"]


#: The contract tests a method registered at run time calls, each with ``(method, params, is_em, seed)``.
CONTRACT = (test_fit_returns_self_and_sets_fitted_attributes, test_max_iter_one_warns_for_em,
            test_tol_none_runs_every_iteration, test_the_max_iter_warning_says_what_stopping_there_means,
            test_known_tokens_are_clamped, test_bad_known_raises, test_input_corpus_and_params_unchanged,
            test_sklearn_clone_get_params_set_params, test_unfitted_access_raises_not_fitted_error)
