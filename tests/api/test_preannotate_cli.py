"""Pre-annotation on the command line: ``crowdqa aggregate --predict DOCS --predictions OUT`` (jobs/preannotate.py)."""

from __future__ import annotations

import numpy as np

from crowdqa.api.cli import main
from crowdqa.ingest.conll import read_conll
from tests.aggregation.test_hmm_crowd_tagger import ner_corpus

TAGS = ("O", "B-X", "I-X")


def _files(tmp_path, seed: int):
    """A crowd CoNLL file of 60 sentences (3 annotators) and a tokens-only file of 20 more, with the truth of those."""
    corpus, truth = ner_corpus(np.random.default_rng(seed), n_docs=80, n_workers=3, unlabelled=20)
    labels = np.full((corpus.n_tokens, corpus.n_workers), -1)
    labels[corpus.token, corpus.worker] = corpus.label
    crowd, docs = ["# annotators: a b c"], []
    for d in range(corpus.n_docs):
        rows = range(corpus.doc_start[d], corpus.doc_start[d + 1])
        if d < 60:
            crowd += [" ".join([corpus.token_text(t), *(TAGS[v] for v in labels[t])]) for t in rows] + [""]
        else:
            docs += [corpus.token_text(t) for t in rows] + [""]
    (tmp_path / "crowd.conll").write_text("\n".join(crowd))
    (tmp_path / "docs.conll").write_text("\n".join(docs))
    return truth[corpus.token_doc >= 60]


def _run(tmp_path, *extra: str) -> int:
    return main(["aggregate", str(tmp_path / "crowd.conll"), "--format", "conll", "--method", "hmm-crowd-tagger",
                 "--output", str(tmp_path / "agg.conll"), "--quiet", *extra])


def test_predict_labels_unseen_documents_and_a_saved_model_labels_them_alike(tmp_path, capsys, seed):
    """Round trip (oracle: the generator's truth, where every capitalised word is a name): the fitted model labels
    the unannotated sentences, and the saved model, frozen, writes the same file."""
    truth = _files(tmp_path, seed)
    first, again = tmp_path / "pre.conll", tmp_path / "pre2.conll"
    assert _run(tmp_path, "--predict", str(tmp_path / "docs.conll"), "--predictions", str(first),
                "--save-model", str(tmp_path / "m.npz")) == 0
    assert _run(tmp_path, "--from-model", str(tmp_path / "m.npz"), "--frozen",
                "--predict", str(tmp_path / "docs.conll"), "--predictions", str(again)) == 0
    assert first.read_text() == again.read_text()
    predicted = read_conll(first, role="expert")
    tags = np.array([TAGS.index(predicted.class_names[v]) for v in predicted.labels_of(0)])
    assert tags.shape == truth.shape and (tags == truth).mean() > 0.9
    capsys.readouterr()


def test_predict_is_refused_in_one_line_where_it_cannot_work(tmp_path, capsys, seed):
    _files(tmp_path, seed)
    docs = str(tmp_path / "docs.conll")
    for args, message in (
            (["--predict", docs], "--predict DOCS and --predictions OUT go together"),
            (["--predictions", str(tmp_path / "p.conll")], "--predict DOCS and --predictions OUT go together"),
            (["--method", "hmm-crowd", "--predict", docs, "--predictions", str(tmp_path / "p.conll")],
             "--predict needs a method whose model reads the text: hmm-crowd"),
    ):
        assert _run(tmp_path, *args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "p.conll").exists() and not (tmp_path / "agg.conll").exists()
