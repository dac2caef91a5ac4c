"""A comparison of methods (``crowdqa compare``'s JSON) as a terminal table with its recommendation."""

from __future__ import annotations

from crowdqa.quality.method_choice import candidate_name

__all__ = ["CONVERGED_LEGEND", "format_comparison"]

#: What the table's and the JSON's ``converged`` says.
CONVERGED_LEGEND = ("converged: yes = the fit's convergence test passed; NO = it stopped at max_iter before the test "
                    "passed (raise max_iter or tol); - = the fit has no convergence test: it runs a fixed schedule "
                    "(MACE and ZBS run max_iter iterations by default, tol None) or is one pass (a vote)")


def format_comparison(data: dict) -> str:
    """A comparison (:meth:`Comparison.as_dict`, with each method's ``seconds``) as a terminal table, best measured
    first, then the recommendation with its reason, any warnings and what the columns mean."""
    label = data["metric"].replace("_", " ")
    extra = sorted({k for m in data["methods"] for k in m.get("extra", {})})
    head = ["method", label, "95% interval", "diff to best", "diff interval", "expected", "points behind",
            *[k.replace("_", " ") for k in extra], "seconds", "converged"]

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    rows = [[candidate_name(m["method"], m.get("use_experts", False)), num(m["value"]),
             f"[{num(m['low'])}, {num(m['high'])}]", num(m["diff"]), f"[{num(m['diff_low'])}, {num(m['diff_high'])}]",
             num(m.get("expected")), "-" if m.get("behind") is None else f"{m['behind']:.1f}",
             *[num(m["extra"].get(k)) for k in extra],
             "-" if m.get("seconds") is None else f"{m['seconds']:.2f}",
             {True: "yes", False: "NO", None: "-"}[m.get("converged")]]
            for m in data["methods"]]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                      strict=True)))
             for r in [head, *rows]]
    lines.insert(1, "-" * len(lines[0]))
    lines.append("")
    chosen = candidate_name(data["recommended"], data.get("recommended_use_experts", False))
    lines.append(f"{data['documents']} expert documents; recommended: {chosen} ({data['reason']})")
    lines += [f"warning: {w}" for w in data["warnings"]]
    lines.append("")
    lines.append(f"{label}: measured on the expert documents the fit did not see (a name+experts fit: by "
                 "cross-fitting); expected: on the items the experts did not label (the measurement shrunk toward "
                 "the prior); points behind: hundredths of the metric below the recommended one's expected score")
    lines.append(data.get("converged_legend", CONVERGED_LEGEND))
    return "\n".join(lines)
