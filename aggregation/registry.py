"""The aggregation methods by id, and an aggregator built from an id and a parameter dict.

A method is one estimator module and one :class:`MethodEntry` in :data:`METHODS`. Everything that lists,
orders, sizes, stores or documents methods reads the entry: the CLI's ``--method`` choices, the API's schema and
the job table's validation (:mod:`crowdqa.store.models`), compare's cost order (:func:`methods_by_cost`), the
method ``auto`` runs without experts (:func:`default_method`), the memory estimate
(:mod:`crowdqa.aggregation.memory`), the package's exports and the dashboard. Each entry also declares the kinds
of data its method is defined for (classes, token sequences, experts), checked by :func:`check_data_kind` when a
job or command is asked for.

A method of this package is added to the table below; a method of another package is declared in its entry point
group :data:`ENTRY_POINT_GROUP` (registered by :func:`load_entry_points` when the CLI, the API or a worker starts) or
added with :func:`register_method`. docs/how-to/add-an-aggregator.md has the whole recipe.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING

from crowdqa.aggregation.limits import describe_bounds

if TYPE_CHECKING:  # the method table imports without numpy (crowdqa aggregate --help)
    from crowdqa.aggregation._base import BaseAggregator

__all__ = ["BASELINE", "DATA_KINDS", "ENTRY_POINT_GROUP", "EXAMPLE_METHOD", "METHODS", "MethodEntry", "RESERVED_IDS",
           "aggregator_class", "check_data_kind", "choice_anchor", "check_memory", "default_method", "describe_bounds",
           "load_entry_points", "make_aggregator", "methods_by_cost", "register_method", "validate_params"]

#: The kinds of data a comparison tells apart (:func:`crowdqa.quality.compare.metric_for`): BIO labels with several
#: entity types, span labels of one type, categorical answers, tag labels (the ``tags`` scheme: a tag per token).
DATA_KINDS: tuple[str, ...] = ("typed-bio", "spans", "categorical", "tags")

#: Names that choose among methods, so no method may take them: a job's ``auto`` and ``compare``, and ``all`` of
#: ``crowdqa compare --methods``.
RESERVED_IDS: frozenset[str] = frozenset({"auto", "compare", "all"})

#: What a method id looks like: lower-case words of letters and digits joined by hyphens, at most 32 characters
#: (the job table keeps it as text of up to 64).
_ID = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_ID_MAX = 32


@dataclass(frozen=True)
class MethodEntry:
    """Where a method's estimator lives, where it stands among the others, and the data it is defined for.

    The data-kind rules are checked when a job or command is asked for (:func:`check_data_kind`), before anything
    is queued or fitted, so a method the data does not suit is refused with its reason instead of failing in the
    worker. Every field after ``module`` and ``name`` is keyword-only.
    """

    module: str
    """The module that defines the estimator class, imported when the method is first asked for
    (``"crowdqa.aggregation.dawid_skene"``)."""
    name: str
    """The estimator class's name in ``module`` (``"DawidSkene"``); the package exports it under this name."""
    _: KW_ONLY
    cost: int
    """The method's place in the order of cost compare prefers simpler methods in (:func:`methods_by_cost`): lower
    is cheaper to fit and has fewer parameters. The methods of this package use multiples of 10, so a new one
    can go between two; no two methods share a cost."""
    memory: Mapping[str, float]
    """How many arrays of each part the fit holds at once, for the memory estimate
    (:data:`crowdqa.aggregation.memory.PARTS` names the parts: ``confusion``, ``tokens``, ``answers``, ...)."""
    classes: tuple[int, int | None] = (1, None)
    """The fewest and the most classes the model is defined for (None: no upper bound); the estimator's
    ``_n_classes_range`` says the same (a test checks they agree)."""
    sequences: bool = False
    """True for a model of token sequences (an HMM over each document's labels): refused on categorical answers,
    whose items are one token each with nothing to chain."""
    experts: bool = False
    """True for a model that learns from true labels only (GoldMajorityVote's skills are each worker's accuracy on
    them): refused unless ``use_experts`` clamps the experts' labels into the fit."""
    default_for: tuple[str, ...] = ()
    """The kinds of data (of :data:`DATA_KINDS`) this method is the one ``auto`` runs on when there are no experts
    to compare on (:func:`default_method`); at most one method per kind."""
    temperature: float = 1.0
    """The label-free calibration of the method's scores (:mod:`crowdqa.aggregation.confidence`): its posterior chain
    is tempered by ``temperature`` over ``temperature_scope``. Chosen on conll_val and PICO dev by
    ``benchmarks/calibration.py`` (a test checks they are that run's choice); a project with expert labels fits its
    own instead."""
    temperature_scope: str = "chain"
    """What the temperature divides: ``"chain"``, every factor of the posterior; ``"crowd"``, the annotators'
    alone."""
    clamped_candidate: bool = True
    """Whether compare (``--expert-variants``) and ``auto`` also fit it with the experts' labels clamped, as the
    candidate ``<id>+experts``: False for a method whose clamped fit predicts every item the experts did not
    label as its crowd-only fit does (a plain vote, where clamping only overwrites the clamped items)."""
    anchor_for: tuple[tuple[str, bool], ...] = ()
    """``(kind, clamped)`` pairs: on data of ``kind`` (of :data:`DATA_KINDS`) this method, clamped or on the crowd
    alone, is the anchor of ``auto``'s choice with experts (:func:`choice_anchor`,
    :mod:`crowdqa.quality.method_choice`): the candidate best across the training sets of
    ``benchmarks/method_choice.py`` (a kind without one there: its default). At most one method per kind."""

    def __post_init__(self) -> None:
        from crowdqa.aggregation.memory import PARTS

        unknown = sorted(set(self.memory) - set(PARTS))
        if unknown:
            raise ValueError(f"{self.name}: memory part {unknown[0]!r} is not one of {', '.join(PARTS)}")
        if not self.memory or any(not n >= 0 for n in self.memory.values()):
            raise ValueError(f"{self.name}: memory must count at least one part, each a number >= 0, "
                             f"found {dict(self.memory)}")
        if isinstance(self.cost, bool) or not isinstance(self.cost, int):
            raise ValueError(f"{self.name}: cost must be an integer, found {self.cost!r}")
        low, high = self.classes
        if low < 1 or (high is not None and high < low):
            raise ValueError(f"{self.name}: classes must be (low >= 1, high >= low or None), found {self.classes}")
        for name, kinds in (("default_for", self.default_for), ("anchor_for", [k for k, _ in self.anchor_for])):
            bad = [k for k in kinds if k not in DATA_KINDS]
            if bad:
                raise ValueError(f"{self.name}: {name} {bad[0]!r} is not one of {', '.join(DATA_KINDS)}")


#: method id -> its entry. A module is imported when its method is first asked for: the estimators bring
#: scipy's optimisers, sparse and special functions, which a command that fits one method (or none, like
#: ``--help``) should not pay for. ``memory`` counts what each fit keeps (see :mod:`crowdqa.aggregation.memory`):
#: the confusion tables are counted, copied to float and normalised (MajorityVote on 2 annotators and 5,993
#: classes, 1.1 GiB a table, peaked at 3.2 GiB).
METHODS: dict[str, MethodEntry] = {
    "mv": MethodEntry("crowdqa.aggregation.majority_vote", "MajorityVote", cost=10,
                      memory={"confusion": 3, "tokens": 2}, temperature=0.6484, clamped_candidate=False),
    "ds": MethodEntry("crowdqa.aggregation.dawid_skene", "DawidSkene", cost=20,
                      memory={"confusion": 4, "tokens": 3, "answers": 2}, default_for=("categorical",),
                      temperature=4.0),
    "hmm-crowd": MethodEntry("crowdqa.aggregation.hmm_crowd", "HMMCrowd", cost=110, sequences=True,
                             memory={"confusion": 4, "tokens": 8, "answers": 2, "words": 2},
                             anchor_for=(("typed-bio", True),), temperature=4.0),
    "bsc-seq": MethodEntry("crowdqa.aggregation.bsc_seq", "BayesianSequenceCombination", cost=120, sequences=True,
                           memory={"confusion": 4, "tokens": 8, "answers": 2, "words": 2, "sequential": 3},
                           default_for=("spans", "tags"), anchor_for=(("spans", False), ("tags", False)),
                           temperature=6.7272),
    # HMM-Crowd's arrays, the tagger's votes and training targets (tokens), its sparse features (about 20 a token,
    # value and index: counted as words) and the coefficients of one tagger per fold (words). The default for typed
    # BIO by the protocol (benchmarks/README.md, benchmarks/results/tagger.json): above HMM-Crowd, the default before.
    "hmm-crowd-tagger": MethodEntry("crowdqa.aggregation.hmm_crowd_tagger", "HMMCrowdTagger", cost=130,
                                    sequences=True, memory={"confusion": 4, "tokens": 14, "answers": 2, "words": 10},
                                    default_for=("typed-bio",), temperature=4.362),
    "wawa": MethodEntry("crowdqa.aggregation.wawa", "Wawa", cost=30, memory={"confusion": 3, "tokens": 3},
                        temperature=0.6484),
    "zbs": MethodEntry("crowdqa.aggregation.zero_based_skill", "ZeroBasedSkill", cost=40,
                       memory={"confusion": 3, "tokens": 3}, temperature=0.5453),
    "gold-mv": MethodEntry("crowdqa.aggregation.gold_majority_vote", "GoldMajorityVote", cost=50, experts=True,
                           memory={"confusion": 3, "tokens": 3}),
    "glad": MethodEntry("crowdqa.aggregation.glad", "GLAD", cost=80, classes=(2, None),
                        memory={"confusion": 3, "tokens": 3, "answers": 2}, temperature=2.8284),
    "mace": MethodEntry("crowdqa.aggregation.mace", "MACE", cost=90,
                        memory={"confusion": 3, "tokens": 3, "answers": 2}, temperature=2.181),
    "kos": MethodEntry("crowdqa.aggregation.kos", "KOS", cost=60, classes=(2, 2),
                       memory={"confusion": 3, "tokens": 2, "answers": 1}),
    "mmsr": MethodEntry("crowdqa.aggregation.mmsr", "MMSR", cost=70, classes=(2, None),
                        memory={"confusion": 3, "tokens": 2, "answers": 1}, temperature=3.0844),
    "ibcc": MethodEntry("crowdqa.aggregation.ibcc", "IBCC", cost=100,
                        memory={"confusion": 4, "tokens": 3, "answers": 2}, anchor_for=(("categorical", False),),
                        temperature=3.0844),
}

#: The method every other is compared with: compare warns when a method is significantly worse than it.
BASELINE = "mv"
#: The method examples in help texts and messages name (its ``max_iter``, ``tol`` and ``alpha`` are the
#: parameters most often set).
EXAMPLE_METHOD = "ds"


def register_method(method: str, entry: MethodEntry) -> None:
    """Add ``method`` to :data:`METHODS`, for a method whose estimator lives in another package.

    Call it when that package is imported, before the CLI, the API or a worker is asked for the method (every
    process that runs it needs it registered). The entry is checked as the table's entries are: a new id of at
    most 32 lower-case letters, digits and hyphens, a cost no other method has, and at most one default per kind
    of data. The estimator's module is imported (and the class looked up) here, so a misspelt one fails now.

    Parameters
    ----------
    method : str
        The new method id (``"smoothed-vote"``): what ``--method``, a job's ``method`` and the reports say.
    entry : MethodEntry
        Where its estimator lives and what it is defined for.

    Raises
    ------
    ValueError
        Naming what is wrong: the id's form, an id already taken (or reserved), a cost or a default already held,
        a module or class that cannot be found.
    """
    if not isinstance(entry, MethodEntry):
        raise ValueError(f"entry must be a MethodEntry, found {type(entry).__name__}")
    if not isinstance(method, str) or not _ID.fullmatch(method) or len(method) > _ID_MAX:
        raise ValueError(f"a method id is lower-case letters and digits joined by hyphens, at most {_ID_MAX} "
                         f"characters, found {method!r}")
    if method in METHODS or method in RESERVED_IDS:
        raise ValueError(f"method id {method!r} is already taken")
    for other, held in METHODS.items():
        if held.cost == entry.cost:
            raise ValueError(f"cost {entry.cost} is {other}'s: give {method} a cost no method has")
        shared = set(held.default_for) & set(entry.default_for)
        if shared:
            raise ValueError(f"{other} is already the default for {sorted(shared)[0]}")
        anchored = {k for k, _ in held.anchor_for} & {k for k, _ in entry.anchor_for}
        if anchored:
            raise ValueError(f"{other} is already the anchor for {sorted(anchored)[0]}")
    cls = getattr(importlib.import_module(entry.module), entry.name, None)
    if not isinstance(cls, type):
        raise ValueError(f"{entry.module} has no class {entry.name}")
    METHODS[method] = entry


#: The entry point group in which an installed package declares its methods, one per entry point: the name is the
#: method id, the object a :class:`MethodEntry` (pyproject.toml: ``[project.entry-points."crowdqa.methods"]``,
#: ``one-coin = "my_package.methods:ONE_COIN"``).
ENTRY_POINT_GROUP = "crowdqa.methods"


def load_entry_points() -> list[str]:
    """Register the methods installed packages declare in :data:`ENTRY_POINT_GROUP`; return the ids added now.

    The CLI, the API and ``crowdqa worker`` call it when they start (a work horse forked by the worker inherits what
    it registered). Calling it again adds nothing: an entry point whose id is registered with the same entry is
    skipped.

    Raises
    ------
    ValueError
        Naming the entry point and its package, and what is wrong with it (it cannot be imported, it is not a
        :class:`MethodEntry`, or :func:`register_method` refuses it).
    """
    from importlib.metadata import entry_points  # here: scanning the installed packages costs ~0.1 s

    added = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {point.name} = {point.value} ({ENTRY_POINT_GROUP}"
        where += f", package {point.dist.name})" if point.dist is not None else ")"
        try:
            entry = point.load()
            if METHODS.get(point.name) == entry:
                continue
            register_method(point.name, entry)
        except Exception as exc:  # an installed package's import may fail in any way: say which one it is
            raise ValueError(f"{where}: {str(exc) or type(exc).__name__}") from exc
        added.append(point.name)
    return added


def methods_by_cost() -> list[str]:
    """Every method id, cheapest first (:attr:`MethodEntry.cost`): the order compare prefers simpler methods in.

    Examples
    --------
    >>> methods_by_cost()[:2]
    ['mv', 'ds']
    """
    return sorted(METHODS, key=lambda m: METHODS[m].cost)


def default_method(kind: str) -> str:
    """The method ``auto`` runs on data of ``kind`` (one of :data:`DATA_KINDS`) when no experts can compare.

    Raises
    ------
    ValueError
        If ``kind`` is not a kind of data, or no method is its default.

    Examples
    --------
    >>> default_method("categorical")
    'ds'
    """
    if kind not in DATA_KINDS:
        raise ValueError(f"kind must be one of {', '.join(DATA_KINDS)}, found {kind!r}")
    for method, entry in METHODS.items():
        if kind in entry.default_for:
            return method
    raise ValueError(f"no method is the default for {kind}: give one entry default_for=({kind!r},)")


def choice_anchor(kind: str) -> tuple[str, bool] | None:
    """The anchor of ``auto``'s choice with experts on data of ``kind``: ``(method, clamped)``, or None when no
    entry is (:attr:`MethodEntry.anchor_for`).

    Examples
    --------
    >>> choice_anchor("spans")
    ('bsc-seq', False)
    """
    if kind not in DATA_KINDS:
        raise ValueError(f"kind must be one of {', '.join(DATA_KINDS)}, found {kind!r}")
    for method, entry in METHODS.items():
        for anchored, clamped in entry.anchor_for:
            if anchored == kind:
                return method, bool(clamped)
    return None


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
    corpus of ``shape`` exceeds ``CROWDQA_MAX_MEMORY``: the check the CLI and the API both call; each method's
    estimate counts the arrays of its entry's ``memory`` (:mod:`crowdqa.aggregation.memory`). Returns the estimate
    in bytes."""
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
