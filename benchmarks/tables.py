"""Turn benchmarks/results/*.json into the README's benchmark tables (filled in below)."""

from __future__ import annotations

import os
import platform
import time


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def make_meta(command: str, *, seconds: float | None = None) -> dict:
    """The ``meta`` block every results file carries: command, machine, date (UTC), wall seconds."""
    import numpy as np

    meta = {
        "command": command,
        "machine": f"{_cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if seconds is not None:
        meta["seconds"] = round(seconds, 1)
    return meta
