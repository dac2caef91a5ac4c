"""Do the experts and the crowd label with one vocabulary? Every score against the experts compares labels by
name: an expert file that answers ``yes/no`` where the crowd answered ``0/1``, or types spans ``PERSON`` where
the crowd typed ``PER``, scores every crowd answer and the aggregate 0 without a word.

:func:`role_labels` gives the labels each role used (categorical answers; span types, without the outside
label ``O`` and the ``B-``/``I-`` prefixes), from a corpus or from label counts (an upload index);
:func:`check_vocabularies` refuses two sets that share none (IngestError) and returns a warning naming the
labels only one side uses otherwise. A label only one side uses can be real (a rare class the crowd never
chose, a class absent from a small expert subset), so it is a warning, never a refusal; where such a label
differs from one of the other side's only by case or surrounding spaces (``Yes``/``yes``), or is the same
number written otherwise (``1``/``1.0``: the readers keep labels as written, so these are two classes), the
message says so. A side without labels (no expert labels; experts who marked no span at all) is not checked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest.errors import IngestError

__all__ = ["expert_label_counts", "role_labels", "role_labels_of_counts", "check_vocabularies",
           "check_corpus_vocabularies", "alike_labels", "written_otherwise", "spelling_key",
           "alike_across"]


def role_labels_of_counts(class_names: Sequence[str], counts: NDArray, *, spans: bool) -> list[str]:
    """The labels with a count above 0: class names for categorical answers, span types (class 0, ``O``, left
    out; ``B-PER`` and ``I-PER`` are ``PER``) for span labels, in class order.

    Parameters
    ----------
    class_names : sequence of str
    counts : ndarray of shape (n_classes,)
        Labels given per class.
    spans : bool
        True when class 0 is the outside label.
    """
    used = [str(n) for n, k in zip(class_names, np.asarray(counts).tolist(), strict=True) if k > 0]
    if not spans:
        return used
    types = [n[2:] if n[:2] in ("B-", "I-") else n for n in used if n != "O"]
    return list(dict.fromkeys(types))


def expert_label_counts(corpus: Corpus) -> NDArray[np.int64]:
    """ndarray of shape (n_classes,): the labels the expert annotators of ``corpus`` gave per class."""
    is_expert = np.asarray([r == "expert" for r in corpus.worker_roles], dtype=bool)
    if not corpus.n_obs or not is_expert.any():
        return np.zeros(corpus.n_classes, dtype=np.int64)
    return np.bincount(corpus.label[is_expert[corpus.worker]], minlength=corpus.n_classes).astype(np.int64)


def role_labels(corpus: Corpus) -> tuple[list[str], list[str]]:
    """The labels the crowd and the experts of ``corpus`` used (:func:`role_labels_of_counts`)."""
    expert = expert_label_counts(corpus)
    crowd = np.bincount(corpus.label, minlength=corpus.n_classes) - expert
    return (role_labels_of_counts(corpus.class_names, crowd, spans=corpus.has_outside),
            role_labels_of_counts(corpus.class_names, expert, spans=corpus.has_outside))


def _listed(labels: Sequence[str], n: int = 8) -> str:
    return ", ".join(repr(s) for s in labels[:n]) + (f" and {len(labels) - n} more" if len(labels) > n else "")


def _number(label: str) -> float | None:
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def spelling_key(label: str) -> tuple:
    """What is left of a label (or id) once case, surrounding spaces and a number's form are set aside: two labels
    with one key are one label written two ways."""
    number = _number(label)
    return ("n", number) if number is not None else ("s", label.strip().casefold())


def written_otherwise(first: Sequence[str], second: Sequence[str], *, names: tuple[str, str] = ("expert", "crowd"),
                      limit: int = 8, say_how: bool = True) -> list[str]:
    """One phrase for each label of ``first`` that is a different label of ``second`` written otherwise (one
    :func:`spelling_key`): ``"expert 'Yes' and crowd 'yes': only case or surrounding spaces differ"`` (without
    what differs when not ``say_how``), the sides called by ``names``; at most ``limit``. One dictionary of
    ``second``, not a comparison per pair (ids are many)."""
    keyed: dict[tuple, list[str]] = {}
    for b in dict.fromkeys(second):
        keyed.setdefault(spelling_key(b), []).append(b)
    out = []
    for a in dict.fromkeys(first):
        for b in keyed.get(spelling_key(a), ()):
            if b != a:
                same_text = a.strip().casefold() == b.strip().casefold()
                how = "only case or surrounding spaces differ" if same_text else "the same number written otherwise"
                out.append(f"{names[0]} {a!r} and {names[1]} {b!r}" + (f": {how}" if say_how else ""))
                if len(out) == limit:
                    return out
    return out


def check_vocabularies(crowd: Sequence[str], expert: Sequence[str], *, spans: bool, source: str = "") -> list[str]:
    """Refuse expert and crowd labels that share none; warn about labels only one side uses.

    Parameters
    ----------
    crowd, expert : sequence of str
        The labels each role used (:func:`role_labels`).
    spans : bool
        Span types (True) or categorical answers (False): how the messages name them.
    source : str, default=""
        The file(s) named in the error.

    Returns
    -------
    list of str
        Nothing when the two sets are equal or one is empty; else one warning (a parse summary note, a
        report warning) naming the labels only one side uses, and those written otherwise by the other side.

    Raises
    ------
    IngestError
        When both sides have labels and none is shared: every score against the experts would be 0.
    """
    if not crowd or not expert:
        return []
    what = "span types" if spans else "labels"
    crowd_set, expert_set = set(crowd), set(expert)
    expert_only = [s for s in expert if s not in crowd_set]
    crowd_only = [s for s in crowd if s not in expert_set]
    near = list(dict.fromkeys(written_otherwise(expert_only, crowd) + written_otherwise(expert, crowd_only)))[:8]
    hint = f" ({'; '.join(near)})" if near else ""
    if len(expert_only) == len(expert):
        raise IngestError(f"the experts' {what} ({_listed(expert)}) share none with the crowd's ({_listed(crowd)}): "
                          f"every score against the experts would be 0{hint}; write both with one set of {what}",
                          source=source)
    parts = []
    if expert_only:
        parts.append(f"the experts use {what} no crowd annotator chose ({_listed(expert_only)}): the crowd and the "
                     "aggregate cannot match the experts there")
    if crowd_only:
        parts.append(f"the crowd uses {what} the experts never use ({_listed(crowd_only)}): such answers count as "
                     "wrong against the experts")
    if not parts:
        return []
    why = f"{'; '.join(near)}" if near else "a rare class, or one written differently on one side?"
    return [f"{'; '.join(parts)} ({why})"]


def alike_across(labels: Sequence[str], parts: Sequence[Sequence[str]], *, whose: str, spans: bool) -> list[str]:
    """A note naming the labels one role used (``labels``) that are one label written two ways in two uploads
    (``parts``: each upload's labels), like :func:`alike_labels` within one upload (which says those already).

    Parameters
    ----------
    labels : sequence of str
        The labels the role used across the uploads (:func:`role_labels_of_counts`).
    parts : sequence of sequence of str
        Each upload's labels (class names, or span types).
    whose : str
        Who used them, as the note names them ("the crowd's", "the experts'").
    spans : bool
    """
    groups: dict[tuple, list[str]] = {}
    for name in labels:
        groups.setdefault(spelling_key(name), []).append(name)
    within = [set(p) for p in parts]
    alike = [g for g in groups.values() if len(g) > 1 and not any(set(g) <= w for w in within)]
    if not alike:
        return []
    what = "span types" if spans else "labels"
    listed = "; ".join(" and ".join(repr(n) for n in g) for g in alike[:8])
    return [f"{whose} {what} written two ways in two uploads are two classes: {listed} (only case, surrounding "
            "spaces or a number's form differ): write each one way if they mean one label"]


def alike_labels(corpus: Corpus) -> list[str]:
    """A note naming the labels of ``corpus`` that are one label written otherwise (``Yes`` and ``yes``, ``PER``
    and ``per``, ``1`` and ``1.0``): the readers keep labels as written, so each is a class of its own and
    annotators choosing them disagree. Empty when there are none.

    Parameters
    ----------
    corpus : Corpus

    Returns
    -------
    list of str
    """
    names = list(corpus.entity_types) if corpus.has_outside else list(corpus.class_names)
    groups: dict[object, list[str]] = {}
    for name in names:
        groups.setdefault(spelling_key(name), []).append(name)
    alike = [g for g in groups.values() if len(g) > 1]
    if not alike:
        return []
    what = "span types" if corpus.has_outside else "labels"
    listed = "; ".join(" and ".join(repr(n) for n in g) for g in alike[:8])
    return [f"{what} written two ways are two classes here: {listed} (only case, surrounding spaces or a "
            "number's form differ): write each one way if they mean one label"]


def check_corpus_vocabularies(corpus: Corpus, *, source: str = "") -> list[str]:
    """:func:`check_vocabularies` of a corpus's crowd and expert labels (:func:`role_labels`)."""
    crowd, expert = role_labels(corpus)
    return check_vocabularies(crowd, expert, spans=corpus.has_outside, source=source)
