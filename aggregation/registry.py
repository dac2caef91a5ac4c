"""The aggregation methods by id, and an aggregator built from an id and a parameter dict.

:data:`METHODS` is the one list of method ids: the job model's ``Method`` enum, the CLI's
``--method`` choices, the dashboard and the package's exports are made from it. It is the
CLI's and the API's entry point to the estimators, and each entry declares the kinds of data
its method is defined for (:class:`MethodEntry`: classes, token sequences, experts), checked
by :func:`check_data_kind` when a job or command is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crowdqa.aggregation.limits import describe_bounds

if TYPE_CHECKING:  # the method table imports without numpy (crowdqa aggregate --help)
    from crowdqa.aggregation._base import BaseAggregator

__all__ = ["METHODS", "MethodEntry", "aggregator_class", "check_data_kind", "check_memory", "describe_bounds",
           "make_aggregator", "validate_params"]


@dataclass(frozen=True)
class MethodEntry:
    """Where a method's estimator lives, and the kinds of data it is defined for.

    The data-kind rules are checked when a job or command is asked for (:func:`check_data_kind`), before anything
    is queued or fitted, so a method the data does not suit is refused with its reason instead of failing in the
    worker.

    Attributes
    ----------
    module, name : str
        The estimator class (imported when the method is first asked for).
    classes : tuple of (int, int or None)
        The fewest and the most classes the model is defined for (None: no upper bound); the estimator's
        ``_n_classes_range`` says the same (a test checks they agree).
    sequences : bool
        True for a model of token sequences (an HMM over each document's labels): refused on categorical
        answers, whose items are one token each with nothing to chain.
    experts : bool
        True for a model that learns from true labels only (GoldMajorityVote's skills are each worker's accuracy
        on them): refused unless ``use_experts`` clamps the experts' labels into the fit.
    """

    module: str
    name: str
    classes: tuple[int, int | None] = (1, None)
    sequences: bool = False
    experts: bool = False

    def __iter__(self) -> Iterator[str]:
        """Unpack as ``module, name`` (what the table's entries were before they carried the rules)."""
        return iter((self.module, self.name))


#: method id -> its entry. A module is imported when its method is first asked for:
#: the estimators bring scipy's optimisers, sparse and special functions, which a
#: command that fits one method (or none, like ``--help``) should not pay for.
METHODS: dict[str, MethodEntry] = {
    "mv": MethodEntry("crowdqa.aggregation.majority_vote", "MajorityVote"),
    "ds": MethodEntry("crowdqa.aggregation.dawid_skene", "DawidSkene"),
    "hmm-crowd": MethodEntry("crowdqa.aggregation.hmm_crowd", "HMMCrowd", sequences=True),
    "bsc-seq": MethodEntry("crowdqa.aggregation.bsc_seq", "BayesianSequenceCombination", sequences=True),
    "hmm-crowd-tagger": MethodEntry("crowdqa.aggregation.hmm_crowd_tagger", "HMMCrowdTagger", sequences=True),
    "wawa": MethodEntry("crowdqa.aggregation.wawa", "Wawa"),
    "zbs": MethodEntry("crowdqa.aggregation.zero_based_skill", "ZeroBasedSkill"),
    "gold-mv": MethodEntry("crowdqa.aggregation.gold_majority_vote", "GoldMajorityVote", experts=True),
    "glad": MethodEntry("crowdqa.aggregation.glad", "GLAD", classes=(2, None)),
    "mace": MethodEntry("crowdqa.aggregation.mace", "MACE"),
    "kos": MethodEntry("crowdqa.aggregation.kos", "KOS", classes=(2, 2)),
    "mmsr": MethodEntry("crowdqa.aggregation.mmsr", "MMSR", classes=(2, None)),
    "ibcc": MethodEntry("crowdqa.aggregation.ibcc", "IBCC"),
}


def check_data_kind(method: str, *, n_classes: int | None = None, categorical: bool | None = None,
                    use_experts: bool | None = None) -> None:
    """Refuse data ``method``'s model is not defined for, by the rules of its :class:`MethodEntry`.

    Each argument left None is not known yet and not checked: a command checks what its options say before it
    reads a file (a categorical format, ``--use-experts``) and the rest right after.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    n_classes : int, optional
        The data's number of classes (with ``O`` for span labels).
    categorical : bool, optional
        True for categorical answers (one-token items, no outside class), False for token sequences.
    use_experts : bool, optional
        Whether the experts' labels are clamped into the fit.

    Raises
    ------
    ValueError
        Naming the method, the rule and what the data has.

    Examples
    --------
    >>> check_data_kind("kos", n_classes=2)
    >>> check_data_kind("kos", n_classes=4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: kos is defined for binary labels (2 classes), and the data has 4 classes: use one of mv, ds, ...
    """
    entry = METHODS[method]
    low, high = entry.classes
    if n_classes is not None and not low <= n_classes <= (n_classes if high is None else high):
        allowed = f"{low}" if low == high else f"at least {low}" if high is None else f"{low} to {high}"
        kind = "binary labels (2 classes)" if (low, high) == (2, 2) else f"{allowed} classes"
        others = ", ".join(m for m, e in METHODS.items()
                           if e.classes[1] is None and n_classes >= e.classes[0] and not (e.sequences or e.experts))
        raise ValueError(f"{method} is defined for {kind}, and the data has {n_classes} classes: use one of {others}")
    if categorical and entry.sequences:
        others = ", ".join(m for m, e in METHODS.items() if not e.sequences)
        raise ValueError(f"{method} models token sequences (spans in documents), and these are categorical answers "
                         f"(one label per item): use one of {others}")
    if entry.experts and use_experts is False:
        raise ValueError(f"{method} learns each worker's skill from the experts' labels, and without use_experts "
                         f"the fit sees the crowd alone: run it with use_experts (a job: \"use_experts\": true; the "
                         f"command line: --use-experts)")


def check_memory(method: str | None, shape, *, report: bool = True) -> int:
    """Refuse, before anything is allocated, a fit of ``method`` (and its report) whose estimated memory on a
    corpus of ``shape`` exceeds ``CROWDQA_MAX_MEMORY``: the hook both doors call; each method's estimate is
    in :mod:`crowdqa.aggregation.memory` (``FIT_ARRAYS``). Returns the estimate in bytes."""
    from crowdqa.aggregation.memory import check_memory as check

    return check(method, shape, report=report)


def aggregator_class(method: str) -> type[BaseAggregator]:
    """The estimator class of ``method`` (a key of :data:`METHODS`); ValueError for an unknown id."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, found {method!r}")
    entry = METHODS[method]
    return getattr(importlib.import_module(entry.module), entry.name)


def validate_params(method: str, params: dict | None = None) -> None:
    """Check a method name and its parameters without building or fitting anything.

    The same check ``fit`` runs (the aggregator's ``_parameter_constraints``), for use at
    request time: a job or command with a bad parameter is refused before data is read.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    params : dict, optional
        Keyword arguments of the aggregator's ``__init__`` (as decoded from JSON).

    Raises
    ------
    ValueError
        Naming the unknown method, the unknown parameter, or the parameter whose value
        is not allowed and what it may be.

    Examples
    --------
    >>> validate_params("ds", {"max_iter": 50})
    >>> validate_params("ds", {"max_iter": 0})
    Traceback (most recent call last):
    ...
    ValueError: max_iter must be an integer in [1, 10000], found 0
    """
    make_aggregator(method, params)._validate_params()


def make_aggregator(method: str, params: dict | None = None) -> BaseAggregator:
    """Return an unfitted aggregator for ``method`` built with keyword ``params``.

    Parameter values are stored as given and checked when ``fit`` starts (scikit-learn's
    convention); :func:`validate_params` checks them now.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    params : dict, optional
        Keyword arguments of the aggregator's ``__init__``.

    Returns
    -------
    BaseAggregator

    Raises
    ------
    ValueError
        If the method is unknown or a parameter is not one the aggregator takes.

    Examples
    --------
    >>> make_aggregator("ds", {"max_iter": 50})
    DawidSkene(max_iter=50, tol=1e-06, alpha=0.01, model='full', init='vote', random_state=None, warm_start=False)
    """
    cls = aggregator_class(method)
    params = dict(params or {})
    accepted = cls._get_param_names()
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"method {method!r} takes parameters {accepted}, found unknown parameter {unknown[0]!r}")
    return cls(**params)
