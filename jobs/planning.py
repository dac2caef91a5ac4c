"""Planning a gold standard: the use case behind ``crowdqa sample-size``."""

from __future__ import annotations

from crowdqa.quality.sample_size import SampleSize, slice_sample_size

__all__ = ["plan_gold_standard", "SampleSize"]


def plan_gold_standard(*, precision: float, recall: float, frequency: float, half_width: float,
                       confidence: float = 0.95, external: bool = False, sites: int | None = None) -> SampleSize:
    """Documents, positives and negatives to annotate so that the precision and recall intervals have the given
    half-width (SLiCE, Canales et al., JMIR Med Inform 2021); ValueError for a value out of range."""
    return slice_sample_size(precision=precision, recall=recall, frequency=frequency, half_width=half_width,
                             confidence=confidence, external=external, sites=sites)
