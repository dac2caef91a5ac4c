"""The SVG charts put every value where its axis says (the browser test reads them back the same way)."""

from __future__ import annotations

import pytest

from crowdqa.api.dashboard.charts import Axis, line_curve, precision_recall_scatter, shade_class


def _report():
    block = lambda p, r: {"precision": p, "recall": r, "precision_ci": [p - 0.1, p], "recall_ci": [r - 0.1, r]}  # noqa: E731
    return {"method": "ds", "aggregate_vs_expert": {"token": {**block(0.9, 0.8), "tokens": 40}},
            "workers": [{"annotator": "a", "role": "crowd", "tokens": 100, "vs_expert": block(0.5, 0.25),
                         "vs_aggregate": block(0.6, 0.7)},
                        {"annotator": "b<", "role": "expert", "tokens": 25, "vs_expert": None,
                         "vs_aggregate": block(1.0, 0.0)}]}


def test_scatter_points_sit_at_their_precision_and_recall():
    s = precision_recall_scatter(_report(), worker_href=lambda a: f"/w?id={a}")
    workers = [p for p in s.points if p.kind != "aggregate"]
    assert [p.label for p in workers] == ["a"] and s.missing == 1
    (a,) = workers
    assert (a.x - s.x.px0) / (s.x.px1 - s.x.px0) == pytest.approx(0.25, abs=1e-3)
    assert (a.y - s.y.px0) / (s.y.px1 - s.y.px0) == pytest.approx(0.5, abs=1e-3)
    assert a.r == pytest.approx(12.0) and "0.400-0.500" in a.title and a.href == "/w?id=a"
    agg = [p for p in s.points if p.kind == "aggregate"]
    assert len(agg) == 1 and agg[0].precision == 0.9
    against_agg = precision_recall_scatter(_report(), against="aggregate")
    assert [p.label for p in against_agg.points] == ["a", "b<"] and against_agg.missing == 0
    assert against_agg.points[1].r == pytest.approx(3 + 9 * 0.5)  # area follows tokens (sqrt(25/100))
    with pytest.raises(ValueError):
        precision_recall_scatter(_report(), against="nobody")


def test_axis_curve_and_shades():
    ax = Axis(0.0, 1.0, 10.0, 110.0)
    assert ax(0.5) == 60.0 and [t[0] for t in ax.ticks(2)] == [10.0, 60.0, 110.0]
    c = line_curve([-10.0, -5.0, None, -4.0])
    assert c.n == 3 and len(c.points.split()) == 3
    assert c.coords[0][1] == c.y.px0 and c.coords[-1][1] == c.y.px1  # lowest value at the bottom
    assert line_curve([]).n == 0 and line_curve([3.0]).n == 1
    # Found walking the README: 10 EM iterations were labelled 1, 3.25, 5.5, 7.75, 10; ticks are whole iterations.
    labels = {n: [t[1] for t in line_curve([-float(i) for i in range(n, 0, -1)]).x_ticks]
              for n in (1, 2, 5, 10, 11, 96)}
    assert labels == {1: ["1"], 2: ["1", "2"], 5: ["1", "2", "3", "4", "5"], 10: ["1", "4", "7", "10"],
                      11: ["1", "4", "7", "11"], 96: ["1", "25", "49", "73", "96"]}
    assert [shade_class(p) for p in (0.0, 0.04, 0.5, 1.0, float("nan"))] == ["s0", "s0", "s5", "s10", "s0"]
