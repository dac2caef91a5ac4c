"""Plain JSON data: the values a report, an upload's summary or a job's timings hold, as ``json`` writes them.

:func:`plain_json` is the one conversion of numpy scalars and arrays, tuples, sets and non-finite floats
(not valid JSON) to what the ``json`` module and the store's JSON columns take; the report's writer
(:mod:`crowdqa.quality.report_json`), the fit record and jobs/ use it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["plain_json"]


def plain_json(value: Any) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays become Python numbers and lists, tuples and
    sets become lists, and non-finite floats (NaN, inf; not valid JSON) become None."""
    if isinstance(value, dict):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")

