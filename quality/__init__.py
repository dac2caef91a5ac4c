"""Quality measurements: pure functions over label arrays on the canonical corpus.

Modules
-------
metrics
    Token-wise precision, recall, F1 (binary span detection, per label, micro, macro).
span_metrics
    NLP Sandbox instance scores (strict, relaxed, type), nervaluate schemes, seqeval,
    entity- and model-level scores with the span confusion matrix.
intervals
    Clopper-Pearson intervals and the document-level bootstrap for F1.
agreement, pair_agreement
    Cohen's and Fleiss' kappa, Krippendorff's alpha, pairwise F1; kappa for every
    pair of annotators sharing documents.
references
    The expert reference (union, majority, one expert).
sample_size
    SLiCE gold-standard sample sizes.
segmentation
    segeval's boundary similarity B and the ClinAIS B2.
report
    The quality report, built in named steps (an aggregate file is read back onto a corpus by
    :mod:`crowdqa.ingest.aggregate_input`); its modules: score_blocks (a score block, accuracy, span
    levels), worker_counts (every worker's counts at once), report_agreement, report_model (the typed
    models: the report's one schema), report_schema (their fields, read without pydantic), report_json
    (the JSON writer), report_table (the terminal table).
json_data
    ``plain_json``: numpy values, tuples and non-finite floats as plain JSON data.
"""
