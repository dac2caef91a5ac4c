"""A synthetic CoNLL-like NER crowd with planted sequential annotator habits.

:func:`ner_crowd` builds sentences (one document each, as in the CoNLL-2003 crowd data of
Rodrigues et al. 2014) with 4 entity types in BIO and a pool of annotators, each of one
*kind*, that label a heavy-tailed number of sentences:

* ``good``: each true span is missed, mistyped or has one boundary moved with total
  probability ``1 - accuracy``; a few false one-token spans;
* ``late``: starts multi-token spans one token late (a one-token span is missed) with
  probability ``habit``, otherwise like ``good``;
* ``early``: stops multi-token spans one token early (a one-token span is missed) with
  probability ``habit``, otherwise like ``good``;
* ``long``: runs spans one token past their end with probability ``habit``;
* ``spammer``: a random valid BIO labelling.

The late starters and early stoppers are what the sequential annotator model of
BSC-seq (Simpson & Gurevych 2019) is meant to learn: their errors depend on their own
previous label. Used by ``tests/aggregation/test_bsc_seq.py`` and ``benchmarks.bsc_seq``.
"""

from __future__ import annotations

import numpy as np

from crowdqa.aggregation.corpus import Corpus

__all__ = ["KINDS", "NER_TYPES", "ner_crowd"]

NER_TYPES = ("PER", "LOC", "ORG", "MISC")
CLASS_NAMES = ("O", *[f"{p}-{t}" for t in NER_TYPES for p in ("B", "I")])
KINDS = ("good", "late", "early", "long", "spammer")


def _true_labels(n: int, rng: np.random.Generator) -> np.ndarray:
    """A BIO sentence: an entity (uniform type) starts w.p. 0.15 after ``O``, continues w.p. 0.45."""
    out = np.zeros(n, dtype=np.int64)
    prev = 0
    for t in range(n):
        if prev and rng.random() < 0.45:
            lab = prev + (prev % 2)  # B-X (odd) -> I-X, I-X stays I-X
        elif rng.random() < (0.15 if t < n - 1 else 0.05):
            lab = 1 + 2 * int(rng.integers(len(NER_TYPES)))
        else:
            lab = 0
        out[t] = prev = lab
    return out


def _spans(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """(first, last + 1, type) of each span of one BIO sentence (conlleval rule)."""
    out: list[list[int]] = []
    for i, lab in enumerate(labels.tolist()):
        typ = (lab - 1) // 2
        if lab and (lab % 2 == 1 or not out or out[-1][1] != i or out[-1][2] != typ):
            out.append([i, i + 1, typ])
        elif lab:
            out[-1][1] = i + 1
    return [tuple(s) for s in out]


def _label(gold: np.ndarray, *, kind: str, acc: float, habit: float, rng: np.random.Generator) -> np.ndarray:
    """One annotator's BIO labels of one sentence."""
    n = gold.size
    n_types = len(NER_TYPES)
    if kind == "spammer":
        return _render(n, [(int(f), int(f) + int(rng.integers(1, 3)), int(rng.integers(n_types)))
                           for f in np.flatnonzero(rng.random(n) < 0.15)])
    spans = []
    for first, last, typ in _spans(gold):
        if kind in ("late", "early") and rng.random() < habit:
            if last - first == 1:
                continue  # nothing left to mark
            spans.append((first + 1, last, typ) if kind == "late" else (first, last - 1, typ))
            continue
        if kind == "long" and rng.random() < habit:
            last = min(last + 1, n)
        u = rng.random()
        err = 1.0 - acc
        if u < 0.5 * err:
            continue  # missed
        if u < 0.75 * err:
            typ = (typ + 1 + int(rng.integers(n_types - 1))) % n_types  # mistyped
        elif u < err:
            last = min(max(first + 1, last + int(rng.choice([-1, 1]))), n)  # end moved by one
        spans.append((first, last, typ))
    for f in np.flatnonzero(rng.random(n) < (1.0 - acc) / 10):
        spans.append((int(f), int(f) + 1, int(rng.integers(n_types))))
    return _render(n, spans)


def _render(n: int, spans: list[tuple[int, int, int]]) -> np.ndarray:
    """BIO labels of spans in order (a later span overwrites an earlier one), made BIO-valid."""
    out = np.zeros(n, dtype=np.int64)
    for first, last, typ in spans:
        last = min(last, n)
        if first < last:
            out[first:last] = 2 * typ + 2
            out[first] = 2 * typ + 1
    # An overwrite can leave I-X after O or after another type: start a span there.
    prev = np.concatenate([[0], out[:-1]])
    inside = (out > 0) & (out % 2 == 0)
    bad = inside & ((prev == 0) | ((prev - 1) // 2 != (out - 1) // 2))
    out[bad] -= 1
    return out


def ner_crowd(*, n_sentences: int = 1000, n_workers: int = 40, per_sentence: int = 5, habit: float = 0.8,
              kinds: dict[str, int] | None = None, accuracy: tuple[float, float] = (0.55, 0.95), seed: int = 0
              ) -> tuple[Corpus, np.ndarray, tuple[str, ...]]:
    """Sentences labelled by a synthetic crowd with planted habits, and their true labels.

    Parameters
    ----------
    n_sentences : int, default=1000
        Sentences of 6-25 tokens; each one is a document.
    n_workers : int, default=40
        Pool size; each sentence is labelled by ``per_sentence`` annotators drawn with
        probability proportional to a heavy-tailed activity (a few annotators label many
        sentences, many label a few).
    per_sentence : int, default=5
    habit : float, default=0.8
        Probability that a ``late``/``early``/``long`` annotator applies its habit to a span.
    kinds : dict of str to int, optional
        How many annotators of each kind; the rest are ``good``. Default: 6 late, 6 early,
        3 long, 2 spammers.
    accuracy : (float, float), default=(0.55, 0.95)
        Range of the annotators' accuracies (uniform): the chance that a span they do not
        apply a habit to is marked right.
    seed : int, default=0

    Returns
    -------
    corpus : Corpus
        Annotators ``<kind>:<index>`` with role ``crowd``; words carry signal (entity
        tokens are capitalised words of their type's vocabulary 3 times in 4).
    truth : ndarray of shape (n_tokens,)
    worker_kinds : tuple of str, length n_workers
    """
    rng = np.random.default_rng(seed)
    counts = {"late": 6, "early": 6, "long": 3, "spammer": 2} if kinds is None else dict(kinds)
    kind_of = [k for k, c in counts.items() for _ in range(c)]
    if len(kind_of) > n_workers:
        raise ValueError(f"kinds name {len(kind_of)} annotators, more than n_workers={n_workers}")
    kind_of += ["good"] * (n_workers - len(kind_of))
    kind_of = list(rng.permutation(kind_of))
    acc = rng.uniform(*accuracy, n_workers)
    activity = rng.pareto(1.2, n_workers) + 0.05
    activity /= activity.sum()
    o_vocab = np.array([f"w{i}" for i in range(3000)])
    o_p = 1.0 / np.arange(1, 3001) ** 1.1
    o_p /= o_p.sum()
    ent_vocab = [np.array([f"{t.capitalize()}{i}" for i in range(300)]) for t in NER_TYPES]
    lengths = rng.integers(6, 26, n_sentences)
    truth = np.concatenate([_true_labels(int(n), rng) for n in lengths])
    n_tokens = truth.size
    words = o_vocab[rng.choice(3000, n_tokens, p=o_p)]
    typed = (truth > 0) & (rng.random(n_tokens) < 0.75)
    ent_index = np.minimum(rng.zipf(1.4, n_tokens) - 1, 299)
    for t in range(len(NER_TYPES)):
        here = typed & ((truth - 1) // 2 == t)
        words[here] = ent_vocab[t][ent_index[here]]
    doc_start = np.concatenate([[0], np.cumsum(lengths)])
    tok, wrk, lab = [], [], []
    for d in range(n_sentences):
        gold = truth[doc_start[d]:doc_start[d + 1]]
        for w in rng.choice(n_workers, per_sentence, replace=False, p=activity):
            tok.append(np.arange(doc_start[d], doc_start[d + 1]))
            wrk.append(np.full(gold.size, w))
            lab.append(_label(gold, kind=kind_of[w], acc=float(acc[w]), habit=habit, rng=rng))
    texts, t_start, t_end = [], [], []
    for d in range(n_sentences):
        ws = words[doc_start[d]:doc_start[d + 1]].tolist()
        pos = np.concatenate([[0], np.cumsum([len(x) + 1 for x in ws[:-1]])])
        texts.append(" ".join(ws))
        t_start.append(pos)
        t_end.append(pos + np.array([len(x) for x in ws]))
    corpus = Corpus.from_arrays(
        token=np.concatenate(tok), worker=np.concatenate(wrk), label=np.concatenate(lab), doc_lengths=lengths,
        token_start=np.concatenate(t_start), token_end=np.concatenate(t_end),
        doc_ids=[f"s{d}" for d in range(n_sentences)], texts=texts,
        worker_ids=[f"{k}:{i}" for i, k in enumerate(kind_of)], worker_roles=["crowd"] * n_workers,
        class_names=CLASS_NAMES,
    )
    return corpus, truth, tuple(kind_of)
