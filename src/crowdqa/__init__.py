"""crowdqa: aggregate crowd annotations and measure every worker and aggregate against the experts.

The subpackages are the design card's top-level folders (``aggregation/``, ``ingest/``, ``quality/``,
``store/``, ``jobs/``, ``api/``); ``src/crowdqa/`` holds only symbolic links to them, so that an editable
install is one plain path on ``sys.path`` that editors and jedi can follow (README, Layout).
"""
