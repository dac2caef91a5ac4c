"""Scaling of crowdqa's aggregators: fit time and peak memory from 10^4 to 10^7 labels.

Run ``python -m benchmarks.scaling [--quick] [--out DIR]``; results go to
``benchmarks/results/scaling[_quick].json`` and a log-log plot to ``scaling[_quick].png``.
``--quick`` stops at 10^5 labels (seconds); the full run goes to 10^7 (a few minutes on
2 cores). crowdqa only: ``benchmarks.ds_speed`` compares Dawid-Skene with crowd-kit.

Data (:func:`make_span_data`, seeded): span-like BIO sequences (classes ``O, B-P, I-P``),
documents of 15-35 tokens (25 on average), 4 of 200 annotators per document, each
labelling every token of it. The true labels hold about two spans of 1-8 tokens per
document; an annotator with accuracy ``a`` (uniform in [0.6, 0.95]) gives the true label
with probability ``a`` and a uniformly random class otherwise. Words are drawn from a
2,000-word vocabulary; 30% of the words inside spans come from their own 500 instead, so
HMM-Crowd's word features carry some information. Accuracy against the true labels is
recorded as a sanity check.

Each (method, size) point runs in its own subprocess, which builds the corpus, resets the
kernel's peak-RSS counter (``/proc/self/clear_refs``, as in ``benchmarks.ds_speed``), fits the
aggregator with its defaults (``MajorityVote()``, ``DawidSkene()`` -- EM to ``tol=1e-6`` or
100 iterations -- and ``HMMCrowd()`` -- Dawid-Skene initialisation plus the authors' single
EM step), best of 3 fits below 10^6 labels and one fit above, and reports the fit's wall
time, the iterations it ran, the resident memory before the fit (the corpus and the
interpreter, after ``malloc_trim``), the peak during it (``VmHWM``) and the difference (what
the fit itself added at its peak).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation.corpus import Corpus

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
METHODS = ("mv", "ds", "hmm-crowd")
FULL_SIZES = (10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6, 3 * 10**6, 10**7)
QUICK_SIZES = (10**4, 3 * 10**4, 10**5)
CLASSES = ("O", "B-P", "I-P")
PER_DOC = 4
N_WORKERS = 200
MEAN_LEN = 25
WORD = 5  # every word is 5 characters ("w0042"), so token offsets follow from positions


def make_span_data(n_labels: int, *, seed: int = 0) -> tuple[Corpus, np.ndarray]:
    """A synthetic crowd-labelled BIO corpus with about ``n_labels`` annotations.

    Parameters
    ----------
    n_labels : int
        Target number of annotations (``PER_DOC`` per token). Documents have random
        lengths, so the result is near the target, not on it (within 2% from 10^5 on).
    seed : int, default=0

    Returns
    -------
    corpus : Corpus
    truth : ndarray of shape (n_tokens,)
        The true class of every token.
    """
    rng = np.random.default_rng(seed)
    n_docs = max(1, round(n_labels / (MEAN_LEN * PER_DOC)))
    lengths = rng.integers(15, 36, size=n_docs)
    n_tokens = int(lengths.sum())
    doc_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    doc_of = np.repeat(np.arange(n_docs), lengths)
    pos = np.arange(n_tokens) - doc_start[doc_of]
    # Two candidate spans per document; overlapping or touching ones merge into one.
    s = rng.integers(0, lengths[:, None], size=(n_docs, 2))
    length = rng.integers(1, 9, size=(n_docs, 2))
    inside = ((pos[:, None] >= s[doc_of]) & (pos[:, None] < s[doc_of] + length[doc_of])).any(axis=1)
    prev_inside = np.concatenate([[False], inside[:-1]]) & (pos > 0)
    truth = np.where(inside, np.where(prev_inside, 2, 1), 0).astype(np.int64)
    # PER_DOC distinct annotators per document: one in each band of N_WORKERS // PER_DOC ids.
    band = N_WORKERS // PER_DOC
    assigned = np.sort((rng.integers(0, N_WORKERS, size=(n_docs, 1))
                        + band * np.arange(PER_DOC) + rng.integers(0, band, size=(n_docs, PER_DOC))) % N_WORKERS,
                       axis=1)
    acc = rng.uniform(0.6, 0.95, size=N_WORKERS)
    token = np.repeat(np.arange(n_tokens), PER_DOC)
    worker = assigned[doc_of].ravel()
    right = rng.random(token.size) < acc[worker]
    label = np.where(right, truth[token], rng.integers(0, len(CLASSES), size=token.size))
    span_word = inside & (rng.random(n_tokens) < 0.3)
    word = np.where(span_word, 2000 + rng.integers(0, 500, n_tokens), rng.integers(0, 2000, n_tokens))
    vocab = np.char.add("w", np.char.zfill(np.arange(2500).astype(str), WORD - 1))
    words = vocab[word].tolist()
    bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    texts = [" ".join(words[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    corpus = Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=lengths, token_start=pos * (WORD + 1),
        token_end=pos * (WORD + 1) + WORD, doc_ids=[f"d{i}" for i in range(n_docs)], texts=texts,
        worker_ids=[f"sim:{w}" for w in range(N_WORKERS)], worker_roles=["crowd"] * N_WORKERS,
        class_names=CLASSES,
    )
    return corpus, truth


# ------------------------------------------------------------------ subprocess side
def _trim_heap() -> None:
    """Return freed heap memory to the kernel (glibc ``malloc_trim``), where available.

    Without it, temporaries freed while building the corpus stay in the process and the
    fit reuses them unseen, so "memory the fit added" would read near 0 at some sizes.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _child(method: str, n_labels: int, seed: int) -> dict:
    from benchmarks.ds_speed import _reset_peak, _rss_kb
    from crowdqa.aggregation import ConvergenceWarning, make_aggregator

    t0 = time.perf_counter()
    corpus, truth = make_span_data(n_labels, seed=seed)
    build = time.perf_counter() - t0
    # Best of 3 below 10^6 labels, where a fit takes milliseconds and the shared machine's noise dominates.
    times = []
    for _ in range(3 if corpus.n_obs < 10**6 else 1):
        model = make_aggregator(method)
        _trim_heap()
        rss_before = _rss_kb("VmRSS")
        _reset_peak()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # HMMCrowd's default is one EM step by design
            model.fit(corpus)
        times.append(time.perf_counter() - t0)
        peak = _rss_kb("VmHWM")
    fit = min(times)
    n_iter = int(getattr(model, "n_iter_", 0))
    return {
        "method": method, "n_labels": corpus.n_obs, "n_tokens": corpus.n_tokens, "n_docs": corpus.n_docs,
        "build_seconds": round(build, 3), "fit_seconds": round(fit, 4), "fit_seconds_all": [round(t, 4) for t in times],
        "n_iter": n_iter,
        "seconds_per_iteration": round(fit / n_iter, 5) if n_iter else None,
        "rss_before_fit_mb": round(rss_before / 1024, 1), "peak_rss_during_fit_mb": round(peak / 1024, 1),
        "fit_extra_mb": round((peak - rss_before) / 1024, 1),
        "token_accuracy_vs_truth": round(float(np.mean(model.labels_ == truth)), 4),
    }


# ------------------------------------------------------------------ parent side
def run_point(method: str, n_labels: int, *, seed: int = 0) -> dict:
    """Fit one method at one size in a fresh interpreter; returns the child's measurements."""
    cmd = [sys.executable, "-m", "benchmarks.scaling", "--child", method, str(n_labels), str(seed)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO)
    return json.loads(out.stdout.strip().splitlines()[-1])


def loglog_slope(x: list[float], y: list[float]) -> float | None:
    """Least-squares slope of log y on log x (1.0 = linear scaling); None with fewer than 2 points."""
    if len(x) < 2:
        return None
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def run(sizes: tuple[int, ...], *, seed: int = 0) -> dict:
    points = []
    for n in sizes:
        for method in METHODS:
            res = run_point(method, n, seed=seed)
            points.append(res)
            print(f"{method:9} {res['n_labels']:>9} labels: {res['fit_seconds']:8.3f} s "
                  f"({res['n_iter']} iterations), peak RSS {res['peak_rss_during_fit_mb']:7.1f} MB "
                  f"(+{res['fit_extra_mb']:.1f}), accuracy {res['token_accuracy_vs_truth']:.3f}", flush=True)
    summary = {}
    for method in METHODS:
        mine = [p for p in points if p["method"] == method]
        big = [p for p in mine if p["n_labels"] >= 10**5]  # small sizes mostly measure fixed costs
        big = big if len(big) >= 2 else mine
        summary[method] = {
            "time_loglog_slope_from_1e5": loglog_slope([p["n_labels"] for p in big], [p["fit_seconds"] for p in big]),
            "largest": mine[-1],
        }
        if all(p["n_iter"] for p in big):  # EM methods: DS runs fewer iterations on more data
            summary[method]["iteration_time_loglog_slope_from_1e5"] = loglog_slope(
                [p["n_labels"] for p in big], [p["seconds_per_iteration"] for p in big])
    return {
        "setup": {"classes": list(CLASSES), "annotators_per_doc": PER_DOC, "annotators": N_WORKERS,
                  "mean_doc_tokens": MEAN_LEN, "seed": seed, "sizes": list(sizes),
                  "methods": {"mv": "MajorityVote()", "ds": "DawidSkene()", "hmm-crowd": "HMMCrowd()"}},
        "points": points,
        "summary": summary,
    }


def plot(result: dict, path: Path) -> bool:
    """Log-log fit time and peak memory against labels; False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4.2))
    names = {"mv": "MajorityVote", "ds": "DawidSkene", "hmm-crowd": "HMMCrowd"}
    for k, method in enumerate(METHODS):
        pts = [p for p in result["points"] if p["method"] == method]
        n = [p["n_labels"] for p in pts]
        ax_t.loglog(n, [p["fit_seconds"] for p in pts], "o-", color=f"C{k}", label=names[method])
        ax_m.loglog(n, [p["peak_rss_during_fit_mb"] for p in pts], "o-", color=f"C{k}", label=names[method])
    if result["points"]:
        n = np.array(sorted({p["n_labels"] for p in result["points"]}), dtype=float)
        t_ref = max(p["fit_seconds"] for p in result["points"] if p["n_labels"] == n[-1])
        ax_t.loglog(n, t_ref * n / n[-1], ":", color="grey", label="linear")
    ax_t.set(xlabel="labels (annotations)", ylabel="fit wall time (s)", title="fit time")
    ax_m.set(xlabel="labels (annotations)", ylabel="peak RSS during fit (MB)", title="peak memory (process)")
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"crowdqa scaling: BIO spans, {PER_DOC} annotators per {MEAN_LEN}-token document", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^4 to 10^5 labels only")
    ap.add_argument("--sizes", type=lambda s: tuple(int(float(v)) for v in s.split(",")),
                    help="comma-separated label counts (overrides the defaults)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    ap.add_argument("--child", nargs=3, metavar=("METHOD", "N_LABELS", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        method, n, seed = args.child
        print(json.dumps(_child(method, int(n), int(seed))))
        return 0
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    t0 = time.perf_counter()
    result = run(sizes)
    suffix = "_quick" if args.quick else ""
    result["meta"] = make_meta("python -m benchmarks.scaling" + (" --quick" if args.quick else ""),
                               seconds=time.perf_counter() - t0)
    args.out.mkdir(parents=True, exist_ok=True)
    png = args.out / f"scaling{suffix}.png"
    if plot(result, png):
        result["plot"] = png.name
    path = write_results(args.out / f"scaling{suffix}.json", result)
    for method, s in result["summary"].items():
        slope = s["time_loglog_slope_from_1e5"]
        print(f"{method}: time ~ labels^{slope:.2f}" if slope is not None else f"{method}: one size only")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
