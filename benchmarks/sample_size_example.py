"""A worked SLiCE sample-size example: plan an expert subset for PICO, then compare with the 64 expert documents.

Run ``python -m benchmarks.sample_size_example [--quick] [--out DIR]``; results go to
``benchmarks/results/sample_size_example[_quick].json``.

The question a project asks before hiring experts: how many documents must they label so
that the aggregate's token precision and recall are known to +-0.05 at 95% confidence?
:func:`crowdqa.quality.sample_size.slice_sample_size` (SLiCE, Canales et al. 2021) answers in
instances -- here tokens -- from an expected precision, recall and the frequency of the
positive class. Three plans are made, for HMM-Crowd on PICO Participants:

1. **from the crowd alone** (what is known before any expert labels): expected precision
   and recall from the aggregate's own posteriors on every document
   (``P = mean q(positive)`` over the tokens it labels positive, ``R = sum of q(positive)`` on
   those tokens over the sum on all tokens) and the frequency of positive tokens in its
   output (SLiCE's "internal" frequency);
2. **from the paper's figures** (Nye et al. 2018, Table 3, HMM-Crowd Participants: P 0.719,
   R 0.761) with the same internal frequency;
3. **in hindsight**: the precision, recall and reference frequency measured on the expert
   documents (``external=True``: the frequency is the experts').

Tokens become documents at the corpus's mean tokens per document. Next to the plans: the
intervals actually obtained on the 64 expert documents, exact Clopper-Pearson (which, like
SLiCE, treats tokens as independent draws) and a document-level percentile bootstrap
(which does not: tokens of one abstract are correlated). The ratio of squared half-widths
is the design effect; multiplying a plan by it is a rough correction for the clustering.
The texts are the abstracts of ``pico/docs`` (``benchmarks/_pico.py``). The PICO study's own
intervals are in its table (``benchmarks.pico_study``), not copied here: a copy would show
another run's numbers, from another commit, beside this one's.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._pico import PICO, load_pico
from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.quality.metrics import grouped_counts, prf_from_counts
from crowdqa.quality.references import reference_labels
from crowdqa.quality.report import score_block
from crowdqa.quality.sample_size import slice_sample_size

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
HALF_WIDTH = 0.05
CONFIDENCE = 0.95
#: Nye et al. 2018 (EBM-NLP), Table 3, HMM-Crowd, Participants: precision, recall.
PAPER_HMM = (0.719, 0.761)


def bootstrap_pr(doc_counts: np.ndarray, *, n_boot: int, seed: int) -> dict:
    """Document-level percentile bootstrap intervals of micro precision and recall.

    Parameters
    ----------
    doc_counts : ndarray of shape (n_docs, 3)
        ``tp, fp, fn`` of each document.
    n_boot : int
    seed : int

    Returns
    -------
    dict
        ``precision_ci`` and ``recall_ci`` as ``[low, high]`` at :data:`CONFIDENCE`.
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, doc_counts.shape[0], size=(n_boot, doc_counts.shape[0]))
    tp, fp, fn = doc_counts[idx].sum(axis=1).T.astype(np.float64)  # each (n_boot,)
    a = 100 * (1 - CONFIDENCE) / 2
    out = {}
    for name, den in (("precision", tp + fp), ("recall", tp + fn)):
        ok = den > 0
        out[f"{name}_ci"] = np.percentile(tp[ok] / den[ok], [a, 100 - a]).tolist()
    return out


def _half(ci: list[float] | None) -> float | None:
    return None if ci is None else (ci[1] - ci[0]) / 2


def plan(precision: float, recall: float, frequency: float, *, external: bool, tokens_per_doc: float) -> dict:
    """SLiCE plan for +-HALF_WIDTH at CONFIDENCE, with tokens converted to documents."""
    s = slice_sample_size(precision=precision, recall=recall, frequency=frequency, half_width=HALF_WIDTH,
                          confidence=CONFIDENCE, external=external)
    return {"inputs": {"precision": precision, "recall": recall, "frequency": frequency, "external": external},
            "slice": s.as_dict(), "tokens": s.documents, "documents": math.ceil(s.documents / tokens_per_doc)}


def run(*, quick: bool, seed: int = 0) -> dict:
    n_boot = 200 if quick else 2000
    corpus, _, _ = load_pico(limit=400 if quick else None)
    crowd = corpus.select_role("crowd")
    model = make_aggregator("hmm-crowd")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the authors' single EM step is the default
        model.fit(crowd)
    q_pos = 1.0 - model.proba_[:, 0]
    pred = model.labels_ > 0
    tokens_per_doc = corpus.n_tokens / corpus.n_docs
    internal_f = float(pred.mean())
    crowd_p = float(q_pos[pred].mean())
    crowd_r = float(q_pos[pred].sum() / q_pos.sum())

    ref = reference_labels(corpus, rule="union")
    seen = ref >= 0
    counts = grouped_counts(pred[seen], ref[seen] > 0, corpus.token_doc[seen], n_groups=corpus.n_docs)
    counts = counts[np.bincount(corpus.token_doc[seen], minlength=corpus.n_docs) > 0]
    tp, fp, fn = (int(v) for v in counts.sum(axis=0))
    meas_p, meas_r, _ = (float(v) for v in prf_from_counts(tp, fp, fn))
    expert_f = float((ref[seen] > 0).mean())
    cp = score_block(counts, n_boot=n_boot, rng=seed, tokens=int(seen.sum()))
    boot = bootstrap_pr(counts, n_boot=n_boot, seed=seed)
    measured = {
        "documents": int(counts.shape[0]), "tokens": int(seen.sum()), "tp": tp, "fp": fp, "fn": fn,
        "precision": meas_p, "recall": meas_r, "reference_frequency": expert_f,
        "clopper_pearson": {"precision_ci": cp["precision_ci"], "recall_ci": cp["recall_ci"],
                            "precision_half_width": _half(cp["precision_ci"]),
                            "recall_half_width": _half(cp["recall_ci"])},
        "document_bootstrap": {**boot, "precision_half_width": _half(boot["precision_ci"]),
                               "recall_half_width": _half(boot["recall_ci"]), "n_boot": n_boot},
    }
    # Direct scaling: a bootstrap half-width shrinks as 1/sqrt(documents).
    boot_halves = measured["document_bootstrap"]
    worst = max(boot_halves["precision_half_width"], boot_halves["recall_half_width"])
    measured["documents_for_half_width_by_bootstrap"] = math.ceil(counts.shape[0] * (worst / HALF_WIDTH) ** 2)
    deff = {k: (measured["document_bootstrap"][f"{k}_half_width"] / measured["clopper_pearson"][f"{k}_half_width"]) ** 2
            for k in ("precision", "recall")}
    plans = {
        "crowd_posteriors": plan(crowd_p, crowd_r, internal_f, external=False, tokens_per_doc=tokens_per_doc),
        "paper_figures": plan(*PAPER_HMM, internal_f, external=False, tokens_per_doc=tokens_per_doc),
        "hindsight": plan(meas_p, meas_r, expert_f, external=True, tokens_per_doc=tokens_per_doc),
    }
    for p in plans.values():
        p["documents_with_design_effect"] = math.ceil(p["documents"] * max(deff.values()))
    out = {
        "setup": {"method": "hmm-crowd (defaults, crowd only)", "category": "Participants", "reference": "union",
                  "half_width": HALF_WIDTH, "confidence": CONFIDENCE, "seed": seed,
                  "documents": corpus.n_docs, "tokens": corpus.n_tokens, "tokens_per_document": tokens_per_doc,
                  "texts": "abstracts of pico/docs"},
        "plans": plans,
        "measured_on_expert_documents": measured,
        "design_effect": deff,
    }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="400 crowd documents (plus the expert ones), 200 resamples")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    args = ap.parse_args(argv)
    if not (PICO / "annotations").is_dir():
        print(f"skipped: PICO data not found at {PICO} (see ../shared/data/README.md for the public source)")
        return 0
    t0 = time.perf_counter()
    result = run(quick=args.quick)
    result["meta"] = make_meta("python -m benchmarks.sample_size_example" + (" --quick" if args.quick else ""),
                               seconds=time.perf_counter() - t0)
    for name, p in result["plans"].items():
        i = p["inputs"]
        print(f"{name:17} P {i['precision']:.3f} R {i['recall']:.3f} f {i['frequency']:.3f}: "
              f"{p['tokens']} tokens = {p['documents']} documents ({p['documents_with_design_effect']} with the "
              f"design effect)")
    m = result["measured_on_expert_documents"]
    cp, bs = m["clopper_pearson"], m["document_bootstrap"]
    print(f"measured on {m['documents']} expert documents ({m['tokens']} tokens): P {m['precision']:.3f} "
          f"+-{cp['precision_half_width']:.3f} (CP) +-{bs['precision_half_width']:.3f} (bootstrap), "
          f"R {m['recall']:.3f} +-{cp['recall_half_width']:.3f} (CP) +-{bs['recall_half_width']:.3f} (bootstrap); "
          f"+-{HALF_WIDTH} by bootstrap needs about {m['documents_for_half_width_by_bootstrap']} documents")
    path = write_results(args.out / f"sample_size_example{'_quick' if args.quick else ''}.json", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
