"""Load the PICO Participants study data from ../shared/data/pico for the benchmarks.

The texts are the abstracts of ``docs/<docid>.txt`` (github.com/yinfeiy/PICO-data, ``docs/``);
every crowd and expert span, and every span of the authors' published aggregates, is
aligned to crowdqa's tokens (``\\w+|[^\\w\\s]``) with the project's overlap rule
(``ingest/build.py``), so that every method is scored on the same tokens.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest.build import Span, corpus_from_spans
from crowdqa.ingest.errors import ProblemLog

REPO = Path(__file__).resolve().parents[1]
PICO = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data")) / "pico"
#: Keys of the authors' aggregates in ``published/PICO-annos-crowdsourcing-agg.all4740.json``.
PUBLISHED = {"HMMCrowd": "published:HMMCrowd", "dw": "published:DS", "mv": "published:MV"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _texts(doc_ids: list[str]) -> dict[str, str]:
    """The abstract of each document, from ``docs/<docid>.txt``."""
    return {d: (PICO / "docs" / f"{d}.txt").read_text(encoding="utf-8") for d in doc_ids}


def load_pico(*, limit: int | None = None, category: str = "Participants",
              splits: tuple[str, ...] = ("train", "dev", "test", "expert-dev")) -> tuple[Corpus, dict, int]:
    """Crowd and expert spans of one PICO element, plus the authors' published aggregates.

    Parameters
    ----------
    limit : int, optional
        Keep only the first ``limit`` crowd documents (the expert documents are always kept).
    category : str, default="Participants"
    splits : tuple of str
        The crowd files read (``annotations/<split>/``); the expert documents are always kept.

    Returns
    -------
    corpus : Corpus
        Crowd annotators ``mturk:<id>`` and expert annotators ``expert:<id>``.
    published : dict of str to ndarray of shape (n_tokens,)
        The authors' ``HMMCrowd``, ``dw`` and ``mv`` labels (``MISSING`` where absent).
    dropped : int
        Spans that cover no token.
    """
    spans: list[Span] = []
    assignments: list[tuple[str, str]] = []
    roles: dict[str, str] = {}

    def add(doc: str, who: str, role: str, pairs: list) -> None:
        roles[who] = role
        assignments.append((doc, who))
        for s, e in pairs:
            if e > s:
                spans.append(Span(doc, who, int(s), int(e), category))

    crowd_docs: list[str] = []
    for split in splits:
        for row in _jsonl(PICO / "annotations" / split / "PICO-annos-crowdsourcing.json"):
            if category in row:
                crowd_docs.append(row["docid"])
                for w, pairs in row[category].items():
                    add(row["docid"], f"mturk:{w}", "crowd", pairs)
    for row in _jsonl(PICO / "annotations" / "expert-dev" / "PICO-annos-allprof.json"):
        for w, pairs in row.get(category, {}).items():
            add(row["docid"], f"expert:{w}", "expert", pairs)
    for row in _jsonl(PICO / "published" / "PICO-annos-crowdsourcing-agg.all4740.json"):
        for key, who in PUBLISHED.items():
            add(row["docid"], who, "crowd", row.get(category, {}).get(key, []))
    keep = set(crowd_docs[:limit] if limit else crowd_docs)
    keep |= {d for d, w in assignments if w.startswith("expert:")}
    order = [d for d in dict.fromkeys(crowd_docs) if d in keep]
    docs = _texts(order)
    problems = ProblemLog("skip")
    full = corpus_from_spans(
        documents=docs,
        assignments=[a for a in assignments if a[0] in docs],
        spans=[s for s in spans if s.doc_id in docs],
        roles=roles,
        scheme="io",
        problems=problems,
    )
    published = {key: full.labels_of(full.worker_ids.index(who)) for key, who in PUBLISHED.items()}
    return drop_workers(full, set(PUBLISHED.values())), published, len(problems.problems)


def drop_workers(corpus: Corpus, names: set[str]) -> Corpus:
    """The corpus without these annotators (their rows and their vocabulary entries)."""
    keep_w = np.array([w not in names for w in corpus.worker_ids])
    new_index = np.cumsum(keep_w) - 1
    rows = keep_w[corpus.worker]
    return Corpus.from_arrays(
        token=corpus.token[rows],
        worker=new_index[corpus.worker[rows]],
        label=corpus.label[rows],
        doc_lengths=corpus.doc_lengths,
        token_start=corpus.token_start,
        token_end=corpus.token_end,
        doc_ids=corpus.doc_ids,
        texts=corpus.texts,
        worker_ids=[w for w, k in zip(corpus.worker_ids, keep_w, strict=True) if k],
        worker_roles=[r for r, k in zip(corpus.worker_roles, keep_w, strict=True) if k],
        class_names=corpus.class_names,
    )
