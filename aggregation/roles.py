"""The roles an annotator of a corpus can have, named once for every package.

``crowd`` labels are what the aggregators combine; ``expert`` labels are the reference the workers and the
aggregate are scored against (and, with ``use_experts``, what a fit may clamp). The name lives in a module of
its own, importing nothing, so the command line's ``--help`` (through :mod:`crowdqa.ingest.formats`) can list
the roles without importing numpy, which :mod:`crowdqa.aggregation.corpus` needs.
"""

from __future__ import annotations

__all__ = ["ROLES"]

#: The annotator roles; the first is the default of an upload.
ROLES: tuple[str, ...] = ("crowd", "expert")
