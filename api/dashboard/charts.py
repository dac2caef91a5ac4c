"""Plain SVG charts, computed here and drawn by the templates (no chart library, no script).

Every chart is a small dataclass of pixel coordinates; the templates only place them, and
hover text is an SVG ``<title>`` (escaped like every other template value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Axis", "ScatterPoint", "Scatter", "precision_recall_scatter", "AccuracyPoint", "accuracy_scatter",
           "Curve", "line_curve", "shade_class", "Matrix", "confusion_matrix", "ForestRow", "Forest", "forest_plot",
           "ReliabilityBar", "Reliability", "reliability_diagram"]


@dataclass(frozen=True)
class Axis:
    """A linear map from data values ``[lo, hi]`` to pixels ``[px0, px1]``, with tick marks."""

    lo: float
    hi: float
    px0: float
    px1: float

    def __call__(self, value: float) -> float:
        span = self.hi - self.lo or 1.0
        return round(self.px0 + (value - self.lo) / span * (self.px1 - self.px0), 2)

    def ticks(self, n: int = 5) -> list[tuple[float, str]]:
        """``n + 1`` evenly spaced (pixel, label) pairs."""
        step = (self.hi - self.lo) / n
        return [(self(self.lo + i * step), _fmt(self.lo + i * step)) for i in range(n + 1)]


def _fmt(x: float) -> str:
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.6g}" if abs(x) >= 1 else f"{x:.2f}"
    return f"{x:.2e}"


@dataclass(frozen=True)
class ScatterPoint:
    """One annotator (or the aggregate) in the precision-recall plane."""

    label: str
    kind: str  # "crowd", "expert" or "aggregate"
    precision: float
    recall: float
    x: float
    y: float
    r: float
    tokens: int
    title: str
    href: str | None = None
    verdict: str = ""  # the report's verdict on the worker (block, watch, keep), "" without one


@dataclass(frozen=True)
class Scatter:
    width: int
    height: int
    x: Axis
    y: Axis
    points: list[ScatterPoint] | list[AccuracyPoint]
    against: str
    missing: int = 0  # workers with no score against this reference (not drawn)
    missing_experts: int = 0  # of those, experts (compared with the other experts only)
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)


def _interval(block: dict[str, Any], name: str) -> str:
    ci = block.get(f"{name}_ci" if name else "ci")
    return f" ({ci[0]:.3f}-{ci[1]:.3f})" if isinstance(ci, list | tuple) and len(ci) == 2 else ""


def _quality(worker: dict[str, Any]) -> tuple[str, str]:
    """A worker's verdict and the hover lines of its spammer score and verdict ("" without a quality block)."""
    q = worker.get("quality") if isinstance(worker.get("quality"), dict) else {}
    if not q or q.get("verdict") is None:
        return "", ""
    score = q.get("spammer_score")
    ci = q.get("spammer_score_ci")
    text = f"\nspammer score {'-' if score is None else f'{score:.3f}'}"
    text += f" ({ci[0]:.3f}-{ci[1]:.3f})" if isinstance(ci, list | tuple) and len(ci) == 2 else ""
    return str(q["verdict"]), text + f"\nverdict {q['verdict']}: {q.get('reason', '')}"


def _score(block: Any) -> dict[str, Any] | None:
    """The token score block of a report entry (``{token: {...}}`` or the fields themselves)."""
    if not isinstance(block, dict):
        return None
    inner = block.get("token") if isinstance(block.get("token"), dict) else block
    if inner.get("precision") is None or inner.get("recall") is None:
        return None
    return inner


def precision_recall_scatter(report: dict[str, Any], *, against: str = "expert", worker_href=None,
                             width: int = 560, height: int = 420) -> Scatter:
    """Every worker's token precision (y) against recall (x), versus the experts or the aggregate.

    Point area grows with the tokens the worker labelled (radius 3 to 12 px, square-root
    scale); the aggregate's own score against the experts is one more point, kind
    ``"aggregate"``. Workers without a score against the chosen reference are counted in
    ``missing`` and not drawn. ``worker_href(annotator_id)`` gives each point's link.
    """
    if against not in ("expert", "aggregate"):
        raise ValueError(f"against must be 'expert' or 'aggregate', found {against!r}")
    left, right, top, bottom = 52, 16, 14, 44
    x = Axis(0.0, 1.0, left, width - right)
    y = Axis(0.0, 1.0, height - bottom, top)
    workers = report.get("workers") or []
    most = max([int(w.get("tokens") or 0) for w in workers] + [1])
    points, missing = [], 0
    for w in workers:
        block = _score(w.get(f"vs_{against}"))
        if block is None:
            missing += 1
            continue
        tokens = int(w.get("tokens") or 0)
        p, r = float(block["precision"]), float(block["recall"])
        verdict, quality = _quality(w)
        title = (f"{w['annotator']} ({w.get('role', 'crowd')}), {tokens} tokens\n"
                 f"precision {p:.3f}{_interval(block, 'precision')}\nrecall {r:.3f}{_interval(block, 'recall')}"
                 + quality)
        points.append(ScatterPoint(
            label=str(w["annotator"]), kind=str(w.get("role", "crowd")), precision=p, recall=r, x=x(r), y=y(p),
            r=round(3 + 9 * math.sqrt(tokens / most), 2), tokens=tokens, title=title,
            href=worker_href(str(w["annotator"])) if worker_href else None, verdict=verdict))
    agg = _score((report.get("aggregate_vs_expert") or {}).get("token")) if against == "expert" else None
    if agg is not None:
        p, r = float(agg["precision"]), float(agg["recall"])
        title = (f"aggregate ({report.get('method')}) vs experts\n"
                 f"precision {p:.3f}{_interval(agg, 'precision')}\nrecall {r:.3f}{_interval(agg, 'recall')}")
        points.append(ScatterPoint(label="aggregate", kind="aggregate", precision=p, recall=r, x=x(r), y=y(p),
                                   r=7.0, tokens=int(agg.get("tokens") or 0), title=title))
    return Scatter(width=width, height=height, x=x, y=y, points=points, against=against, missing=missing,
                   x_ticks=x.ticks(), y_ticks=y.ticks())


@dataclass(frozen=True)
class AccuracyPoint:
    """One annotator (or the aggregate) of categorical answers: accuracy against the number of items."""

    label: str
    kind: str  # "crowd", "expert" or "aggregate"
    accuracy: float
    items: int
    x: float
    y: float
    title: str
    href: str | None = None
    verdict: str = ""  # the report's verdict on the worker (block, watch, keep), "" without one


def _accuracy(block: Any) -> dict[str, Any] | None:
    """The accuracy block (``value``, ``compared``, ``ci``) of a categorical report entry, or None."""
    acc = block.get("accuracy") if isinstance(block, dict) else None
    return acc if isinstance(acc, dict) and acc.get("value") is not None and acc.get("compared") else None


def _round_up(n: int) -> float:
    """The smallest round number of items at least ``n`` whose fifths are whole (the axis' ticks): 5, 10, 15, 20,
    25, 30, 40, 50, 60, 80, 100, 150, ..."""
    scale = 10.0 ** max(math.floor(math.log10(max(n, 1))) - 1, 0)
    return next(float(m * scale) for m in (5, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100) if m * scale >= n)


def accuracy_scatter(report: dict[str, Any], *, against: str = "expert", worker_href=None,
                     width: int = 560, height: int = 420) -> Scatter:
    """Every annotator's accuracy (y) against the items it was compared on (x), versus the experts or the
    aggregate, for categorical answers (which have no precision and recall).

    The hover text gives the Clopper-Pearson interval, so a worker with few items shows how little its
    accuracy says. The aggregate's accuracy against the experts is one more point, kind ``"aggregate"``.
    Annotators compared on no item (an expert against the experts when there is no other expert) are counted
    in ``missing``.
    """
    if against not in ("expert", "aggregate"):
        raise ValueError(f"against must be 'expert' or 'aggregate', found {against!r}")
    left, right, top, bottom = 52, 16, 14, 44
    workers = report.get("workers") or []
    blocks = [_accuracy(w.get(f"vs_{against}")) for w in workers]
    agg = _accuracy(report.get("aggregate_vs_expert")) if against == "expert" else None
    most = max([int(b["compared"]) for b in blocks if b] + ([int(agg["compared"])] if agg else []) + [1])
    x = Axis(0.0, _round_up(most), left, width - right)  # five ticks at round numbers of items
    y = Axis(0.0, 1.0, height - bottom, top)
    name = "the experts" if against == "expert" else "the aggregate"
    points = []
    for w, b in zip(workers, blocks, strict=True):
        if b is None:
            continue
        a, n = float(b["value"]), int(b["compared"])
        verdict, quality = _quality(w)
        title = (f"{w['annotator']} ({w.get('role', 'crowd')}): accuracy vs {name} {a:.3f}{_interval(b, '')} "
                 f"on {n} items" + quality)
        points.append(AccuracyPoint(label=str(w["annotator"]), kind=str(w.get("role", "crowd")), accuracy=a, items=n,
                                    x=x(n), y=y(a), title=title,
                                    href=worker_href(str(w["annotator"])) if worker_href else None,
                                    verdict=verdict))
    if agg is not None:
        a, n = float(agg["value"]), int(agg["compared"])
        points.append(AccuracyPoint(label="aggregate", kind="aggregate", accuracy=a, items=n, x=x(n), y=y(a),
                                    title=f"aggregate ({report.get('method')}) vs the experts: accuracy {a:.3f}"
                                          f"{_interval(agg, '')} on {n} items"))
    return Scatter(width=width, height=height, x=x, y=y, points=points, against=against,
                           missing=sum(b is None for b in blocks),
                           missing_experts=sum(b is None and w.get("role") == "expert"
                                               for w, b in zip(workers, blocks, strict=True)),
                           x_ticks=x.ticks(), y_ticks=y.ticks())


@dataclass(frozen=True)
class Curve:
    width: int
    height: int
    x: Axis
    y: Axis
    points: str  # an SVG polyline "x,y x,y ..."
    n: int
    coords: list[tuple[float, float, str]] = field(default_factory=list)  # (x, y, hover text) per value
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)


def line_curve(values: Sequence[float | None], *, width: int = 420, height: int = 200) -> Curve:
    """A polyline of ``values`` against their index 1..n (e.g. EM log-likelihood per iteration)."""
    ys = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - 1.0, hi + 1.0
    left, right, top, bottom = 72, 12, 10, 30
    x = Axis(1.0, float(max(len(ys), 2)), left, width - right)
    y = Axis(lo, hi, height - bottom, top)
    coords = [(x(i + 1), y(v), f"iteration {i + 1}: {v:.6g}") for i, v in enumerate(ys)]
    pts = " ".join(f"{a},{b}" for a, b, _ in coords)
    return Curve(width=width, height=height, x=x, y=y, points=pts, n=len(ys), coords=coords,
                 x_ticks=_whole_ticks(x, len(ys)), y_ticks=y.ticks(4))


def _whole_ticks(x: Axis, n: int) -> list[tuple[float, str]]:
    """Ticks at whole iterations 1..n (at most five, the last always n): an iteration has no fractions."""
    step = max(1, math.ceil((n - 1) / 4))
    at = list(range(1, n + 1, step))
    if at and at[-1] != n:
        if n - at[-1] < step / 2 and len(at) > 1:
            at[-1] = n  # too close to n to label both
        else:
            at.append(n)
    return [(x(float(i)), str(i)) for i in at]


def shade_class(p: float, *, levels: int = 10) -> str:
    """A CSS class ``s0`` .. ``s{levels}`` for a probability (a strict CSP allows no inline style)."""
    if not math.isfinite(p):
        return "s0"
    return f"s{min(levels, max(0, round(p * levels)))}"


@dataclass(frozen=True)
class Matrix:
    """A confusion matrix as rows of (value, shade class, text) cells; rows are true classes."""

    labels: list[str]
    rows: list[list[tuple[float | None, str, str]]]
    totals: list[int] | None = None


def confusion_matrix(values, labels: Sequence[str], *, counts=None) -> Matrix:
    """Cells of a row-stochastic matrix ``values`` (K x K); ``counts`` (K x K) adds the counts behind it."""
    rows = []
    for t, row in enumerate(values):
        cells = []
        for o, v in enumerate(row):
            if v is None or not math.isfinite(float(v)):
                cells.append((None, "s0", "-"))
                continue
            text = f"{float(v):.3f}" + (f" ({int(counts[t][o])})" if counts is not None else "")
            cells.append((float(v), shade_class(float(v)), text))
        rows.append(cells)
    totals = [int(sum(r)) for r in counts] if counts is not None else None
    return Matrix(labels=list(labels), rows=rows, totals=totals)


@dataclass(frozen=True)
class ForestRow:
    """One method of a comparison: its score (``x``) and interval (``x_low`` to ``x_high``) on row ``y``."""

    method: str
    y: float
    x: float | None
    x_low: float | None
    x_high: float | None
    recommended: bool
    best: bool
    title: str
    label: str = ""  # the candidate: the method id, with "+experts" for a fit with the experts clamped


@dataclass(frozen=True)
class Forest:
    width: int
    height: int
    x: Axis
    rows: list[ForestRow]
    metric: str
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    best_x: float | None = None


def forest_plot(comparison: dict[str, Any], *, width: int = 560, row_height: int = 28) -> Forest:
    """Each compared method's score with its 95% interval, one row per method, best first (a forest plot).

    The axis spans the intervals (padded by 0.02, clipped to [0, 1]); a vertical line marks the best score. A
    method without a score (undefined) gets a row and no mark.
    """
    methods = comparison.get("methods") or []
    left, right, top, bottom = 96, 16, 10, 40
    values = [v for m in methods for v in (m.get("low"), m.get("high"), m.get("value")) if v is not None]
    lo = max(0.0, math.floor((min(values, default=0.0) - 0.02) * 50) / 50)
    hi = min(1.0, math.ceil((max(values, default=1.0) + 0.02) * 50) / 50)
    if hi <= lo:
        lo, hi = 0.0, 1.0
    height = top + bottom + row_height * max(len(methods), 1)
    x = Axis(lo, hi, left, width - right)
    metric = str(comparison.get("metric", "")).replace("_", " ")
    rows = []
    for i, m in enumerate(methods):
        value, low, high = m.get("value"), m.get("low"), m.get("high")
        interval = f" (95% {low:.3f} to {high:.3f})" if low is not None and high is not None else ""
        diff = m.get("diff_low"), m.get("diff_high")
        name = str(m["method"]) + ("+experts" if m.get("use_experts") else "")
        title = (f"{name}: {metric} {'-' if value is None else f'{value:.3f}'}{interval}"
                 + (f"\ndifference to the best {m.get('diff', 0):.3f} (95% {diff[0]:.3f} to {diff[1]:.3f}, paired)"
                    if None not in diff and m.get("diff") is not None else ""))
        rows.append(ForestRow(method=str(m["method"]), y=top + row_height * (i + 0.5),
                              x=None if value is None else x(value), x_low=None if low is None else x(low),
                              x_high=None if high is None else x(high),
                              recommended=m["method"] == comparison.get("recommended")
                              and bool(m.get("use_experts")) == bool(comparison.get("recommended_use_experts")),
                              best=m["method"] == comparison.get("best"), title=title, label=name))
    best = next((m.get("value") for m in methods if m["method"] == comparison.get("best")), None)
    return Forest(width=width, height=height, x=x, rows=rows, metric=metric, x_ticks=x.ticks(),
                  best_x=None if best is None else x(best))


@dataclass(frozen=True)
class ReliabilityBar:
    """One score bin of a reliability diagram: its share right as a bar, its mean score as a tick."""

    x: float
    width: float
    y: float  # top of the bar (share right)
    tick_y: float  # the bin's mean score
    count: int
    title: str


@dataclass(frozen=True)
class Reliability:
    """A reliability diagram: per score bin, the share right against the mean score; the diagonal is calibrated."""

    width: int
    height: int
    x: Axis
    y: Axis
    bars: list[ReliabilityBar]
    label: str  # which scores: "without experts" / "with experts"
    ece: float | None
    ticks: list[tuple[float, str]] = field(default_factory=list)


def reliability_diagram(block: dict[str, Any] | None, *, label: str, width: int = 300, height: int = 260
                        ) -> Reliability | None:
    """The reliability diagram of one ``calibration`` summary of a report (None when it has no items)."""
    if not isinstance(block, dict) or not block.get("n_items"):
        return None
    x, y = Axis(0.0, 1.0, 44, width - 12), Axis(0.0, 1.0, height - 40, 12)
    bins = block.get("bins") or {}
    count, mean, acc = bins.get("count") or [], bins.get("mean_score") or [], bins.get("accuracy") or []
    n = len(count)
    bars = []
    for i, (c, m, a) in enumerate(zip(count, mean, acc, strict=True)):
        if not c or a is None or m is None:
            continue
        left, right = x(i / n), x((i + 1) / n)
        bars.append(ReliabilityBar(x=left + 1, width=round(right - left - 2, 2), y=y(a), tick_y=y(m), count=int(c),
                                   title=f"scores {i / n:.1f}-{(i + 1) / n:.1f}: {c} items, mean score {m:.3f}, "
                                         f"{a:.3f} right"))
    return Reliability(width=width, height=height, x=x, y=y, bars=bars, label=label, ece=block.get("ece"),
                       ticks=[(x(v / 5), f"{v / 5:.1f}") for v in range(6)])
