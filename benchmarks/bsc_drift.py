"""Why BSC-seq's F1 on conll_val falls as VB converges: ablations of the VB loop and the errors that grow.

Run ``python -m benchmarks.bsc_drift [--set conll_val|pico] [--errors]`` (``../shared/data``; nothing is
written, the numbers are printed; ``benchmarks/README.md``, "Why BSC-seq's F1 falls on conll_val as VB
converges", quotes them). Not a README table and not a protocol step: a diagnosis, never used to choose.

:func:`vb_curve` runs :class:`~crowdqa.aggregation.bsc_seq.BayesianSequenceCombination`'s own VB steps and
decodes after every iteration, as a fit with ``max_iter=n, tol=None`` would, optionally *freezing* a part of
the model after iteration ``k`` (its posterior kept as it was, while the others go on updating): the
annotator models (``worker``), the text model (``text``: word and shape emissions) or the chain
(``trans``: start and transitions). With nothing frozen it gives the estimator's labels exactly
(``tests/benchmarks/test_bsc_drift.py``). :func:`span_errors` sorts the predicted spans as conlleval's
strict matches, type errors, boundary errors, both, or spurious (no gold token under them), and counts gold
spans with no predicted token (missed).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np
from numpy.typing import NDArray

from benchmarks import seq_protocol
from crowdqa.aggregation import bsc_seq as bsc
from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans

#: The posterior blocks each frozen part names.
PARTS = {"worker": ("worker",), "text": ("word", "shape"), "trans": ("start", "trans")}
#: Ablations reported: (name, estimator parameters, parts frozen, after iteration).
ABLATIONS = (
    ("defaults", {}, (), 0),
    ("text model off (features=())", {"features": ()}, (), 0),
    ("annotator models frozen after 1", {}, ("worker",), 1),
    ("annotator models frozen after 3", {}, ("worker",), 3),
    ("text model frozen after 1", {}, ("text",), 1),
    ("transitions frozen after 1", {}, ("trans",), 1),
    ("annotator_model='cm'", {"annotator_model": "cm"}, (), 0),
    ("annotator_model='acc'", {"annotator_model": "acc"}, (), 0),
    ("words alone, lower-cased", {"features": ("word",)}, (), 0),
    ("capitalised shape alone", {"features": ("capitalised",)}, (), 0),
    ("cased words and capitalised", {"lowercase": False}, (), 0),
)
SHOWN = (1, 2, 3, 5, 10, 15, 20)


def vb_curve(corpus: Corpus, *, n_iter: int, freeze: tuple[str, ...] = (), freeze_after: int = 0,
             **params) -> list[tuple[NDArray[np.int64], dict[str, NDArray[np.float64]]]]:
    """Labels and parameter posteriors after each of ``n_iter`` VB iterations of BSC-seq.

    Parameters
    ----------
    corpus : Corpus
    n_iter : int
    freeze : tuple of str
        Keys of :data:`PARTS` whose posteriors stop updating after iteration ``freeze_after``.
    freeze_after : int
    **params
        Estimator parameters (its defaults otherwise).

    Returns
    -------
    list of (labels, posteriors)
        One per iteration; ``labels`` of shape (n_tokens,) are Viterbi-decoded as ``fit`` decodes them.
    """
    model = bsc.BayesianSequenceCombination(**params)
    known = model._start_fit(corpus, None)
    design = bsc._build_design(corpus, known=known, annotator_model=model.annotator_model,
                               features=tuple(model.features), lowercase=model.lowercase, sequences=model.sequences)
    priors = bsc._priors(design, annotator_model=model.annotator_model, alpha0=model.alpha0,
                         epsilon0=model.epsilon0, gamma0=model.gamma0, nu0=model.nu0)
    acc = model.annotator_model == "acc"
    post_params = bsc._m_step(bsc._initial_counts(corpus, design, acc=acc, init=model.init), priors)
    frozen = [key for part in freeze for key in PARTS[part] if key in priors]
    out = []
    for it in range(1, n_iter + 1):
        stats, _, _ = bsc._e_step(post_params, design)
        new = bsc._m_step(stats, priors)
        if it > freeze_after:
            new.update({key: post_params[key] for key in frozen})
        post_params = new
        _, post, _ = bsc._e_step(post_params, design)
        out.append((model._decode(design, post_params, post, fill=0), post_params))
    return out


def _spans(labels: NDArray, corpus: Corpus) -> list[tuple[int, int, int]]:
    s = decode_spans(labels, corpus)
    return list(zip(s.first.tolist(), s.last.tolist(), s.type.tolist(), strict=True))


def span_errors(labels: NDArray, gold: NDArray, corpus: Corpus) -> dict[str, int]:
    """Predicted spans by kind (``tp``, ``type``, ``boundary``, ``both``, ``spurious``) and gold spans ``missed``."""
    pred, ref = _spans(labels, corpus), _spans(gold, corpus)
    ref_set = set(ref)
    under = np.full(corpus.n_tokens, -1)
    for i, (a, b, _) in enumerate(ref):
        under[a:b] = i
    out = dict.fromkeys(("tp", "type", "boundary", "both", "spurious", "missed"), 0)
    covered = np.zeros(corpus.n_tokens, dtype=bool)
    for a, b, t in pred:
        covered[a:b] = True
        hits = [ref[i] for i in np.unique(under[a:b][under[a:b] >= 0])]
        if (a, b, t) in ref_set:
            kind = "tp"
        elif not hits:
            kind = "spurious"
        elif any(h[:2] == (a, b) for h in hits):
            kind = "type"
        elif any(h[2] == t for h in hits):
            kind = "boundary"
        else:
            kind = "both"
        out[kind] += 1
    out["missed"] = sum(not covered[a:b].any() for a, b, _ in ref)
    return out


def _print_errors(corpus: Corpus, gold: NDArray, curve: list) -> None:
    """What changes between iteration 3 and 20 on conll_val: error kinds, types, new spans, the crowd's miss rates."""
    names = corpus.class_names
    types = ["O"] + [n[2:] for n in names if n.startswith("B-")]  # SpanArray.type is the entity index + 1
    for it in (1, 3, 20):
        labels = curve[it - 1][0]
        per_type = Counter(t for *_, t in _spans(labels, corpus))
        print(f"iteration {it}: {span_errors(labels, gold, corpus)}; predicted spans by type "
              f"{ {types[t]: n for t, n in sorted(per_type.items())} }")
    print("gold spans by type", {types[t]: n for t, n in sorted(Counter(t for *_, t in _spans(gold, corpus)).items())})
    ref = set(_spans(gold, corpus))
    at3, at20 = set(_spans(curve[2][0], corpus)), set(_spans(curve[19][0], corpus))
    new_wrong = [s for s in at20 - at3 if s not in ref]
    print(f"spans at 20 and not at 3: {len(new_wrong)} wrong, {len(at20 - at3) - len(new_wrong)} right; "
          f"at 3 and not at 20: {len(at3 - at20 - ref)} wrong, {len(at3 - at20) - len(at3 - at20 - ref)} right")
    votes = corpus.vote_counts()
    share = votes[:, 1:].sum(axis=1) / np.maximum(votes.sum(axis=1), 1)
    support = np.array([share[a:b].mean() for a, b, _ in new_wrong])
    words = np.array([corpus.texts[d][s:e] for d, s, e in zip(corpus.token_doc, corpus.token_start,
                                                                corpus.token_end, strict=True)])
    print(f"  the new wrong spans: by type {Counter(types[t] for *_, t in new_wrong)}, one token long "
          f"{np.mean([b - a == 1 for a, b, _ in new_wrong]):.3f}, capitalised "
          f"{np.mean([words[a][:1].isupper() for a, _, _ in new_wrong]):.3f}, no crowd entity vote on any token "
          f"{np.mean(support == 0):.3f}, mean crowd entity-vote share {support.mean():.3f}")
    lower = np.char.lower(words)
    bm = names.index("B-MISC") if "B-MISC" in names else None
    for w, k in Counter(lower[a] for a, _, _ in new_wrong).most_common(5):
        idx = np.flatnonzero(lower == w)
        print(f"  {str(w)!r}: {k} new wrong spans; {idx.size} occurrences, gold entity {int((gold[idx] > 0).sum())}, "
              f"any crowd MISC vote {int((votes[idx, bm:bm + 2].sum(axis=1) > 0).sum()) if bm else '-'}, "
              f"MISC at 3 {int(np.isin(curve[2][0][idx], [bm, bm + 1]).sum()) if bm else '-'}, "
              f"at 20 {int(np.isin(curve[19][0][idx], [bm, bm + 1]).sum()) if bm else '-'}")
    # P(crowd label O | true class): the gold's, and the model's expected one (posterior counts minus prior).
    truth = gold[corpus.token]
    print("P(crowd says O | true class), from the gold:",
          {n: round(float((corpus.label[truth == j] == 0).mean()), 3) for j, n in enumerate(names) if j})
    design, prior_params = _default_design(corpus)
    prior = bsc._priors(design, **prior_params)["worker"]
    for it in (1, 3, 20):
        counts = (curve[it - 1][1]["worker"] - prior).sum(axis=(0, 1))  # [t, o] over workers and previous labels
        print(f"  the model's after {it}:", {n: round(float(counts[j, 0] / counts[j].sum()), 3)
                                             for j, n in enumerate(names) if j})
    for it in (1, 3, 20):
        post = curve[it - 1][1]
        shape = bsc._posterior_mean(post["shape"])[0, :, 1] if "shape" in post else None
        trans = bsc._posterior_mean(post["trans"])[0]
        print(f"iteration {it}: P(next | O) {dict(zip(names, trans.round(4).tolist(), strict=True))}"
              + (f"; P(capitalised | state) {dict(zip(names, shape.round(3).tolist(), strict=True))}"
                 if shape is not None else ""))
    _print_workers(corpus, gold, curve, prior)
    for n in (1, 20):  # HMM-Crowd's fall (its one EM step, then 20): the same growth of MISC?
        labels = make_aggregator("hmm-crowd", {"max_iter": n, "tol": None}).fit(corpus).labels_
        misc = [s for s in _spans(labels, corpus) if types[s[2]] == "MISC"]
        print(f"HMM-Crowd after {n} EM steps: {len(misc)} MISC spans, {len(set(misc) & ref)} right; "
              f"{span_errors(labels, gold, corpus)}")


def _default_design(corpus: Corpus) -> tuple[bsc._Design, dict]:
    """The defaults' design and prior parameters (to take the prior off a fitted posterior)."""
    model = bsc.BayesianSequenceCombination()
    design = bsc._build_design(corpus, known=None, annotator_model=model.annotator_model,
                               features=tuple(model.features), lowercase=model.lowercase, sequences=model.sequences)
    return design, {"annotator_model": model.annotator_model, "alpha0": model.alpha0, "epsilon0": model.epsilon0,
                    "gamma0": model.gamma0, "nu0": model.nu0}


def _print_workers(corpus: Corpus, gold: NDArray, curve: list, prior: NDArray) -> None:
    """Do the annotators with fewer labels sharpen more? Expected token accuracy at 3 and 20 against the gold's."""
    n_labels = np.bincount(corpus.worker, minlength=corpus.n_workers)
    right = corpus.label == gold[corpus.token]
    gold_acc = np.bincount(corpus.worker, weights=right, minlength=corpus.n_workers) / np.maximum(n_labels, 1)

    def expected_acc(it: int) -> NDArray:
        counts = (curve[it - 1][1]["worker"] - prior).sum(axis=1)
        return np.trace(counts, axis1=1, axis2=2) / np.maximum(counts.sum(axis=(1, 2)), 1e-12)

    a3, a20 = expected_acc(3), expected_acc(20)
    seen = n_labels > 0
    few = seen & (n_labels < np.median(n_labels[seen]))
    many = seen & ~few
    print(f"annotators {int(seen.sum())}, labels each: min {n_labels[seen].min()}, median "
          f"{int(np.median(n_labels[seen]))}, max {n_labels.max()}")
    for name, m in (("fewer-label half", few), ("more-label half", many)):
        print(f"  {name}: mean change of expected accuracy 3 -> 20 {np.mean(a20[m] - a3[m]):+.4f}; "
              f"mean |expected - gold accuracy| at 3 {np.mean(abs(a3[m] - gold_acc[m])):.4f}, "
              f"at 20 {np.mean(abs(a20[m] - gold_acc[m])):.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("conll_val", "pico"), default="conll_val")
    parser.add_argument("--errors", action="store_true", help="conll_val: what changes between iteration 3 and 20")
    args = parser.parse_args(argv)
    sets = {s.name: s for s in seq_protocol.build_sets(quick=False)}
    if args.set not in sets:
        print(f"{args.set} not found under {seq_protocol.SHARED}: nothing to do")
        return 0
    s = sets[args.set]
    if args.errors:
        _, gold = seq_protocol.load_conll_val()
        _print_errors(s.whole, gold, vb_curve(s.whole, n_iter=20))
        return 0
    print(f"{args.set}, whole corpus: F1 after " + ", ".join(map(str, SHOWN)) + " iterations")
    for name, params, freeze, after in ABLATIONS:
        t0 = time.perf_counter()
        curve = vb_curve(s.whole, n_iter=max(SHOWN), freeze=freeze, freeze_after=after, **params)
        f1 = [seq_protocol.f1_of(s.doc_counts(curve[n - 1][0], small=False)[s.scored]) for n in SHOWN]
        print(f"{name:34s} " + " ".join(f"{x:.3f}" for x in f1) + f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
