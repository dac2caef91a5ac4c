"""The expert and crowd label vocabularies (crowdqa.ingest.vocabulary): what is refused, what is a warning, what
stays quiet; the upload indexes' count of expert labels gives the corpus's answer."""

from __future__ import annotations

import pytest

from crowdqa.ingest.build import Span, corpus_from_spans
from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.index import check_index_vocabularies, index_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.ingest.vocabulary import check_corpus_vocabularies, check_vocabularies, role_labels

TEXT = "Ann met Bob in Rome"


def _spans(annotator: str, role: str, types: list[str]):
    """One upload of documents d0.., each with one span of the next type in ``types`` (None: no span)."""
    docs = {f"d{k}": TEXT for k in range(len(types))}
    spans = [Span(f"d{k}", annotator, 0, 3, t) for k, t in enumerate(types) if t]
    return corpus_from_spans(documents=docs, assignments=[(d, annotator) for d in docs], spans=spans,
                             roles={annotator: role})


def test_quiet_when_equal_or_one_side_is_empty():
    assert check_vocabularies(["a", "b"], ["b", "a"], spans=False) == []
    assert check_vocabularies(["a", "b"], [], spans=False) == []
    assert check_vocabularies([], ["a"], spans=False) == []
    # Experts who marked no span at all are an answer (no entity), not another vocabulary.
    corpus = merge_corpora([_spans("c1", "crowd", ["PER", "LOC"]), _spans("e1", "expert", [None, None])])
    assert role_labels(corpus) == (["LOC", "PER"], []) and check_corpus_vocabularies(corpus) == []


def test_refused_when_disjoint_and_warned_when_partly():
    with pytest.raises(IngestError, match=r"^gold.csv: the experts' labels \('Yes'\) share none with the crowd's "
                                          r"\('no', 'yes'\).*expert 'Yes' and crowd 'yes': only case"):
        check_vocabularies(["no", "yes"], ["Yes"], spans=False, source="gold.csv")
    (warning,) = check_vocabularies(["0", "1", "2"], ["1", " 2 ", "3"], spans=False)
    assert "the experts use labels no crowd annotator chose (' 2 ', '3')" in warning
    assert "the crowd uses labels the experts never use ('0', '2')" in warning
    assert "expert ' 2 ' and crowd '2': only case or surrounding spaces differ" in warning
    (warning,) = check_vocabularies(["1", "2"], ["1", "2.0"], spans=False)
    assert "expert '2.0' and crowd '2': the same number written otherwise" in warning


def test_the_index_counts_expert_labels_as_the_corpus_does():
    """The API checks a dataset by its uploads' indexes, the CLI and the job by the merged corpus: same answer."""
    crowd, expert = _spans("c1", "crowd", ["PER", "LOC", None]), _spans("e1", "expert", ["PER", "per", "ORG"])
    corpus = merge_corpora([crowd, expert])
    parts = [index_corpus(crowd), index_corpus(expert)]
    assert check_index_vocabularies(parts) == check_corpus_vocabularies(corpus) != []
    assert index_corpus(corpus).expert_label_counts.sum() == parts[1].expert_label_counts.sum() > 0
    assert parts[0].expert_label_counts.sum() == 0
    disjoint = [index_corpus(crowd), index_corpus(_spans("e1", "expert", ["ORG", "MISC"]))]
    with pytest.raises(IngestError, match=r"span types \('MISC', 'ORG'\) share none with the crowd's \('LOC', 'PER'\)"):
        check_index_vocabularies(disjoint)
