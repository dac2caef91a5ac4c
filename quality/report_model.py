"""The quality report as typed models: what :func:`crowdqa.quality.report.build_report` returns, the store
keeps, ``GET /jobs/{id}/report`` serves and the OpenAPI document describes.

A report has one of three kinds. ``"spans"``: token labels with an outside class ``O``, scored by precision,
recall and F1 of the positive (non-``O``) tokens and of the decoded spans. ``"categorical"``: one answer per
item and no outside class, so no label is "positive": every block is an accuracy (the aggregate also gets
per-class precision, recall and F1, named as such). ``"tags"``: one tag of a tag set per token (the ``tags``
scheme), scored per token as categorical answers are (each token an item: accuracy, the confusion matrix,
agreement over tokens), and the aggregate also per tag and by micro and macro averages with intervals that
resample sentences (:mod:`crowdqa.quality.tag_scores`).

Intervals are ``[low, high]`` pairs at ``bootstrap.level`` (Clopper-Pearson for proportions, a document
bootstrap for F1); ``null`` where they say nothing (no count, or too few documents to resample). Every
score that cannot be computed (a ratio with a zero denominator) is ``null``, never NaN.

The models are built with ``model_construct`` from values the report has already checked (validating
thousands of worker rows again would only cost time); they serialise with ``model_dump(mode="json")``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from crowdqa.quality.report_schema import ACCURACY_KINDS
from crowdqa.quality.span_metrics import LEGACY_SPAN_KEYS

__all__ = ["ACCURACY_KINDS", "Interval", "Accuracy", "Score", "LabelScore", "Confusion", "AggregateScores",
           "CategoricalScore", "CategoricalAggregateScores", "MacroScore", "TagAggregateScores", "WorkerConfusion",
           "WorkerQuality", "WorkerReport",
           "ExpertPair", "CrowdPair",
           "KappaSummary", "Agreement", "Counts", "CrossFit", "FitRecord", "Bootstrap", "MethodComparison",
           "MethodsComparison", "VerdictRulesRecord", "QualityReport", "ReliabilityBins", "CalibrationScores",
           "Calibration"]

#: A confidence interval, ``[low, high]``.
Interval = tuple[float, float]


class Accuracy(BaseModel):
    """Share of compared tokens (categorical: items) labelled as the reference, with its Clopper-Pearson interval."""

    value: float | None = Field(description="correct / compared; null when nothing was compared.")
    correct: int
    compared: int
    ci: Interval | None


class LabelScore(BaseModel):
    """Token precision, recall and F1 of one label (class) against the reference, with the counts."""

    precision: float | None
    recall: float | None
    f1: float | None
    tp: int
    fp: int
    fn: int


class Score(LabelScore):
    """Precision, recall and F1 of the positive (non-O) tokens or of the spans, with their counts and intervals."""

    precision_ci: Interval | None = Field(description="Clopper-Pearson interval of precision.")
    recall_ci: Interval | None = Field(description="Clopper-Pearson interval of recall.")
    f1_ci: Interval | None = Field(description="Document bootstrap interval of F1; null under the minimum of "
                                               "documents (bootstrap.min_documents).")
    documents: int = Field(description="Documents compared.")
    tokens: int | None = Field(default=None, description="Tokens compared (null for span scores).")
    accuracy: Accuracy | None = Field(default=None, description="A worker's token accuracy on the same tokens.")


class Confusion(BaseModel):
    """Token confusion matrix of the aggregate against the expert reference."""

    labels: list[str]
    rows: Literal["predicted"] = "predicted"
    columns: Literal["actual"] = "actual"
    matrix: list[list[int]] = Field(description="matrix[i][j]: tokens the aggregate labels i and the experts j.")


class AggregateScores(BaseModel):
    """The aggregate against the experts, for span labels."""

    token: Score = Field(description="Positive (non-O) tokens, any type.")
    token_confusion: Confusion
    accuracy: Accuracy
    span_location: Score | None = Field(
        description="Spans with the same start and length, of any type (the NLP Sandbox's 'strict'; was "
                    "span_strict).")
    span_location_relaxed: Score | None = Field(
        description="Spans with the same start and a length within 2 characters, of any type (was span_relaxed).")
    span_location_and_type: Score | None = Field(
        description="Spans with the same start, length and type: conlleval's exact chunk match on BIO labels "
                    "(was span_type).")
    span_overlap: Score | None = Field(
        default=None, description="Spans sharing a character with a span of the other side, of any type; each "
                                  "span counts once (tp = the fewer of predictions and references found).")
    span_per_type: dict[str, LabelScore] = Field(
        default_factory=dict, description="Per entity type, spans with the same start, length and type "
                                          "(conlleval's per-type lines).")
    headline: Literal["token", "span_location_and_type"] = Field(
        default="token", description="The score to lead with: conlleval's (span_location_and_type) on BIO "
                                     "labels, token on inside/outside labels.")
    token_per_label: dict[str, LabelScore]
    token_macro_f1: float | None

    @model_validator(mode="before")
    @classmethod
    def _seed_names(cls, data: Any) -> Any:
        """Read a report stored with the seed's names (span_strict, span_relaxed, span_type)."""
        if isinstance(data, dict) and any(k in data for k in LEGACY_SPAN_KEYS):
            data = {LEGACY_SPAN_KEYS.get(k, k): v for k, v in data.items()}
        return data


class CategoricalScore(BaseModel):
    """A worker's accuracy on categorical answers (there is no positive label for precision and recall)."""

    accuracy: Accuracy | None = None
    documents: int
    tokens: int | None = Field(default=None, description="Items compared.")


class CategoricalAggregateScores(BaseModel):
    """The aggregate against the experts, for categorical answers."""

    accuracy: Accuracy
    token_confusion: Confusion
    per_class: dict[str, LabelScore]
    macro_f1: float | None
    items: int | None = Field(description="Items compared.")


class WorkerConfusion(BaseModel):
    """A worker's confusion counts: rows the reference's label, columns the worker's answer."""

    labels: list[str]
    rows: Literal["experts", "aggregate"] = Field(description="What the rows are: the expert reference or the "
                                                              "aggregate.")
    columns: Literal["worker"] = "worker"
    matrix: list[list[int]] = Field(description="matrix[i][j]: items (tokens) the reference labels i and the "
                                                "worker j.")


class WorkerQuality(BaseModel):
    """Whether a worker's answers depend on the truth (:mod:`crowdqa.quality.worker_quality`): its confusion,
    Raykar and Yu's spammer score with a bootstrap interval, its label bias and the verdict."""

    against: Literal["experts", "aggregate"] = Field(
        description="The reference of confusion and the spammer score, the evidence the verdict rests on: the "
                    "experts when the worker has at least min_items expert items (unless the aggregate's evidence "
                    "blocked or watched it), else the aggregate on all its items.")
    items: int = Field(description="Items (tokens) the confusion counts.")
    confusion: WorkerConfusion
    confusion_vs_expert: WorkerConfusion | None = Field(description="Against the experts; null without any.")
    model_confusion: list[list[float]] | None = Field(
        description="The method's estimate (worker_confusion_): row = true class, column = answer, rows sum to 1; "
                    "null when the method has none for this worker.")
    spammer_score: float | None = Field(
        description="Raykar & Yu (JMLR 2012): 0 when the confusion rows are identical (answers independent of the "
                    "truth), 1 for a perfect worker; null with fewer than two true classes seen.")
    spammer_score_ci: Interval | None = Field(
        description="Equal-tailed posterior interval at bootstrap.level (each confusion row Dirichlet(counts + 1/2)).")
    spammer_score_vs_aggregate: float | None = Field(description="The spammer score against the aggregate, on "
                                                                 "all of the worker's items.")
    spammer_score_vs_aggregate_ci: Interval | None = Field(description="Its posterior interval.")
    model_spammer_score: float | None = Field(description="The score of model_confusion.")
    label_share: dict[str, float | None] = Field(description="Each label's share of the worker's answers.")
    crowd_label_share: dict[str, float | None] = Field(
        description="Each label's share of the other annotators' answers on the worker's items.")
    bias: float | None = Field(description="The largest label_share minus crowd_label_share.")
    bias_label: str | None = Field(description="The label of bias.")
    verdict: Literal["block", "watch", "keep"] | None = Field(
        description="block: the spammer score's whole interval (against the experts, or against the aggregate when "
                    "the experts do not show the worker informative) is below verdict_rules.block_below; watch: the "
                    "score is low without that evidence, or a label is overused; keep: otherwise, or too few items "
                    "to judge (the reason says which). null for experts.")
    reason: str


class MacroScore(BaseModel):
    """The mean over tags of the per-tag scores (the tags that occur on either side of the compared tokens)."""

    precision: float | None
    recall: float | None
    f1: float | None
    f1_ci: Interval | None = Field(description="Percentile interval of a document (sentence) bootstrap; null for "
                                               "fewer than bootstrap.min_documents documents.")
    tags: int = Field(description="Tags averaged over.")
    documents: int = Field(description="Documents compared.")


class TagAggregateScores(CategoricalAggregateScores):
    """The aggregate against the experts, for tag labels: the categorical scores over tokens, then every tag's
    precision, recall and F1 with intervals, and their micro and macro averages."""

    per_tag: dict[str, Score | None] = Field(description="Each tag against the rest: tp, fp, fn over tokens.")
    micro: Score = Field(description="Counts of every tag pooled; precision = recall = F1 = token accuracy.")
    macro: MacroScore


class WorkerReport(BaseModel):
    """One annotator: against the experts (an expert: against the other experts) and against the aggregate."""

    annotator: str
    role: str
    documents: int
    tokens: int
    vs_expert: Score | CategoricalScore | None = Field(description="On the documents both the annotator and the "
                                                                   "experts labelled; null without any.")
    span_vs_expert: Score | None = Field(
        default=None, description="A crowd worker's spans by location (same start and length, any type, as the "
                                  "aggregate's span_location) against the expert reference, on the documents of "
                                  "vs_expert; null without any, for experts and for categorical answers.")
    vs_aggregate: Score | CategoricalScore | None = Field(description="On all of the annotator's documents.")
    skill: float | None = Field(description="The aggregator's own score of the annotator (fit.skill says what it "
                                            "measures); null when the method has none.")
    blocked: bool = Field(default=False, description="On the project's block list: left out of the fit, scored "
                                                     "like the others.")
    quality: WorkerQuality | None = Field(default=None, description="Confusion, spammer score, label bias and "
                                                                    "verdict; null for an annotator without answers.")


class ExpertPair(BaseModel):
    """Agreement of two experts on the tokens both labelled."""

    a: str
    b: str
    tokens: int
    kappa: float | None
    f1: float | None


class CrowdPair(BaseModel):
    """Cohen's kappa of two crowd workers on the documents both labelled."""

    a: str
    b: str
    documents: int
    tokens: int
    kappa: float | None


class KappaSummary(BaseModel):
    """The crowd pairs' kappas in two numbers."""

    min_documents: int = Field(description="Pairs share at least this many documents.")
    pairs: int
    median: float | None
    mean: float | None


class Agreement(BaseModel):
    """Agreement between annotators, whatever the aggregate."""

    expert_kappa: list[ExpertPair]
    krippendorff_alpha: float | None = Field(description="Nominal alpha over all annotators.")
    crowd_kappa: list[CrowdPair]
    crowd_kappa_summary: KappaSummary


class Counts(BaseModel):
    """What the report is about."""

    documents: int
    tokens: int
    annotations: int
    crowd_workers: int
    experts: int
    expert_documents: int
    expert_documents_without_crowd: int = Field(
        default=0, description="Expert-labelled documents (items) that matched no crowd document by id: left out "
                               "of the aggregate and of every score.")
    clamped_tokens: int = Field(description="Tokens whose expert label was given to the fit.")


class CrossFit(BaseModel):
    """How the aggregate was scored when the experts were used in the fit."""

    folds: int
    expert_documents: int
    seconds: float
    seed: int


class FitRecord(BaseModel):
    """How the aggregator's fit went."""

    model_config = ConfigDict(extra="allow")

    iterations: int
    converged: bool | None = Field(description="null: a fixed number of EM iterations was asked for.")
    seconds: float
    log_likelihood: list[float] = Field(description="The EM objective after each iteration.")
    params: dict[str, Any] = Field(default_factory=dict, description="The method's parameters as given.")
    skill: str | None = Field(default=None,
                              description="What each worker's skill measures; null when the method has none.")
    warnings: list[str] = Field(default_factory=list)
    stages: dict[str, float] = Field(default_factory=dict, description="Seconds of each stage (reading, fitting, "
                                                                       "cross_fitting, scoring, writing).")
    cross_fit: CrossFit | None = None
    uncovered_tokens: int | None = Field(default=None, description="Tokens no crowd worker labelled (not scored).")
    convergence_note: str | None = Field(default=None, description="Why the fit stopped before converging (it "
                                                                    "reached max_iter); null when it converged.")


class Bootstrap(BaseModel):
    """The settings of every bootstrap interval in the report."""

    n_boot: int
    seed: int
    level: float
    min_documents: int


class MethodComparison(BaseModel):
    """One method in a comparison (:mod:`crowdqa.quality.compare`): its score against the experts with a bootstrap
    interval, the paired interval of its difference to the best, and its fit."""

    method: str
    value: float | None = Field(description="The comparison's metric (span_f1, token_f1 or accuracy).")
    low: float | None
    high: float | None
    diff: float | None = Field(description="value minus the best method's value.")
    diff_low: float | None = Field(description="Paired bootstrap interval of diff (same resamples for all methods).")
    diff_high: float | None
    vs_mv_low: float | None = Field(default=None, description="Paired interval of value minus majority vote's.")
    vs_mv_high: float | None = None
    extra: dict[str, float | None] = Field(default_factory=dict,
                                           description="Secondary metrics: token_f1 (typed BIO) or macro_f1.")
    use_experts: bool = Field(default=False, description=(
        "The fit clamped the expert labels (the candidate method+experts); value is then measured by cross-fitting."))
    expected: float | None = Field(default=None, description=(
        "Expected score on the items the experts did not label: the measured difference to the prior's anchor "
        "shrunk toward the prior (crowdqa.quality.method_choice)."))
    weight: float | None = Field(default=None, description="Weight of the measurement against the prior in expected.")
    behind: float | None = Field(default=None, description=(
        "Points (hundredths of the metric) expected below the recommended candidate."))
    f1: float | None = Field(default=None, description="value, for span labels.")
    f1_low: float | None = None
    f1_high: float | None = None
    accuracy: float | None = Field(default=None, description="value, for categorical answers.")
    accuracy_low: float | None = None
    accuracy_high: float | None = None
    seconds: float | None = Field(default=None, description=(
        "Seconds of the fit; with use_experts, of the fit on every expert label (the one aggregate --use-experts "
        "makes and auto reuses), as iterations, converged and warnings are; the scores come from the folds."))
    iterations: int | None = None
    converged: bool | None = None
    warnings: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    cross_fit_seconds: float | None = Field(default=None, description=(
        "With use_experts: seconds of the cross-fitting folds, whose held-out predictions are scored."))


class MethodsComparison(BaseModel):
    """Methods compared on the expert documents, best first, and the recommended one with its reason."""

    kind: Literal["typed-bio", "spans", "categorical", "tags"]
    metric: Literal["span_f1", "token_f1", "accuracy"]
    documents: int = Field(description="Expert documents scored.")
    methods: list[MethodComparison]
    best: str
    recommended: str
    reason: str
    best_use_experts: bool = Field(default=False, description="The best measured candidate clamps the experts.")
    recommended_use_experts: bool = Field(default=False, description=(
        "The recommended candidate clamps the experts (auto then fits it with use_experts)."))
    prior: dict[str, Any] = Field(default_factory=dict, description=(
        "The rule's prior: anchor (the candidate it favours), shortfall and spread (gamma, tau), their source."))
    converged_legend: str | None = Field(default=None, description="What converged yes, NO and - mean.")
    expert_variants: bool = Field(default=False, description=(
        "Every method was compared on the crowd alone and with the experts clamped (auto)."))
    too_small: bool = Field(description="No method is significantly worse than the best.")
    more_documents: int | None = Field(description="Expert documents to add to separate the methods (SLiCE).")
    warnings: list[str]
    n_boot: int
    seed: int
    level: float
    rule: str
    use_experts: bool = False
    reference: str = "union"
    score: Literal["f1", "accuracy"] = "f1"
    seconds: float | None = None
    fit_seconds: float | None = None


class VerdictRulesRecord(BaseModel):
    """The rules the workers' verdicts were decided by (:class:`crowdqa.quality.worker_quality.VerdictRules`)."""

    min_items: int
    block_below: float
    watch_below: float
    bias_above: float
    posterior_draws: int | None = Field(default=None, description="Posterior draws of each spammer score interval "
                                                                  "(400, fewer for many workers x classes^2).")


class ReliabilityBins(BaseModel):
    """The reliability diagram's points: equal-width score bins, each with its items, mean score and share right."""

    count: list[int]
    mean_score: list[float | None]
    accuracy: list[float | None]


class CalibrationScores(BaseModel):
    """How calibrated a set of scores is against the experts (:mod:`crowdqa.quality.calibration`)."""

    n_items: int
    accuracy: float | None = Field(description="Share of the items that are right.")
    mean_score: float | None
    ece: float | None = Field(description="Expected calibration error over 10 equal-width bins.")
    ece_interval: Interval | tuple[None, None]
    brier: float | None = Field(description="Mean squared difference between score and rightness.")
    brier_interval: Interval | tuple[None, None]
    low_score_error_ratio: float | None = Field(description=(
        "Share of wrong items among the lowest-scored tenth over the share wrong overall (2: twice as many)."))
    bins: ReliabilityBins


class Calibration(BaseModel):
    """Which temperature calibrates the scores, and how calibrated they are against the experts."""

    temperature: float = Field(description="The temperature the stored scores are at.")
    default_temperature: float = Field(description="The method's label-free default (chosen on conll_val and "
                                                   "PICO dev, benchmarks/calibration.py).")
    scope: Literal["chain", "crowd"] = Field(description="What the temperature divides: every factor of the "
                                                         "posterior chain, or the annotators' alone.")
    source: Literal["default", "experts"] = Field(description="default: no expert labels to fit one (or too few); "
                                                              "experts: fitted on the expert documents.")
    items: Literal["spans", "items"] = Field(description="What is graded: exact spans, or categorical items.")
    expert_documents: int
    without_experts: CalibrationScores | None = Field(description="The default temperature's scores against the "
                                                                   "experts.")
    with_experts: CalibrationScores | None = Field(description=(
        "The expert-fitted temperature's scores, cross-fitted: each fold of the expert documents scored at the "
        "temperature fitted on the others."))
    fold_temperatures: list[float] = Field(default_factory=list)


class QualityReport(BaseModel):
    """Every worker and the aggregate against the experts, with intervals (see :mod:`crowdqa.quality.report`)."""

    method: str
    kind: Literal["spans", "categorical", "tags"]
    labels: list[str]
    experts_used_in_fit: bool = Field(description=(
        "The fit clamped the experts' labels (use_experts, or method auto's choice): the aggregate then holds the "
        "experts' labels on the items they labelled, so its scores here come from cross-fitting "
        "(aggregate_scored_on), and a score of the downloaded aggregate against those experts is not held out."))
    aggregate_scored_on: str
    reference: str = Field(description="union, majority, or the id of the expert used as the reference.")
    counts: Counts
    aggregate_vs_expert: AggregateScores | TagAggregateScores | CategoricalAggregateScores | None
    workers: list[WorkerReport]
    blocked_workers: list[str] = Field(default_factory=list, description="Annotators left out of the fit.")
    agreement: Agreement
    fit: FitRecord | None
    bootstrap: Bootstrap
    report_seconds: float | None = Field(default=None, description="Seconds the report took (crowdqa report).")
    method_choice: str | None = Field(default=None, description="method auto: why this method was chosen.")
    verdict_rules: VerdictRulesRecord | None = Field(default=None, description="The rules of the workers' "
                                                                               "verdicts.")
    comparison: MethodsComparison | None = Field(default=None, description="method auto: the comparison it ran.")
    calibration: Calibration | None = Field(default=None, description=(
        "The calibration of the scores (each span's, token's and item's probability of being exactly right)."))
