"""Load the PICO Participants study data from ../shared/data/pico for the benchmarks.

**Data caveat.** The ``docs/<docid>.txt`` files in ../shared/data/pico hold MeSH term lists,
not the abstracts the character offsets point into (spans run past the end of 4,494 of the
4,613 annotated documents). The real abstracts are in the authors' release
(github.com/yinfeiy/PICO-data, ``docs/``). Until they are in ../shared, every document is laid
out as a placeholder text of 4-letter pseudo-words (``"abcd abcd ..."``, one token per 5
characters) long enough for every span, and all spans (crowd, experts, the authors'
published aggregates) are aligned to those tokens with the project's overlap rule
(``ingest/build.py``). Every method is scored on the same tokens, but HMM-Crowd's word
features carry no information here, which costs it the lift the paper reports from them.
Point ``CROWDQA_PICO_DOCS`` at a folder of the real abstracts to use them instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from aggregation.corpus import Corpus
from ingest.build import Span, corpus_from_spans
from ingest.errors import ProblemLog

REPO = Path(__file__).resolve().parents[1]
PICO = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data")) / "pico"
#: Keys of the authors' aggregates in ``published/PICO-annos-crowdsourcing-agg.all4740.json``.
PUBLISHED = {"HMMCrowd": "published:HMMCrowd", "dw": "published:DS", "mv": "published:MV"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _real_texts(doc_ids: list[str]) -> dict[str, str] | None:
    folder = os.environ.get("CROWDQA_PICO_DOCS")
    if not folder:
        return None
    return {d: (Path(folder) / f"{d}.txt").read_text(encoding="utf-8") for d in doc_ids}


def load_pico(*, limit: int | None = None, category: str = "Participants") -> tuple[Corpus, dict, int]:
    """Crowd and expert spans of one PICO element, plus the authors' published aggregates.

    Parameters
    ----------
    limit : int, optional
        Keep only the first ``limit`` crowd documents (the expert documents are always kept).
    category : str, default="Participants"

    Returns
    -------
    corpus : Corpus
        Crowd annotators ``mturk:<id>`` and expert annotators ``expert:<id>``.
    published : dict of str to ndarray of shape (n_tokens,)
        The authors' ``HMMCrowd``, ``dw`` and ``mv`` labels (``MISSING`` where absent).
    dropped : int
        Spans that cover no token (placeholder spaces only).
    """
    spans: list[Span] = []
    assignments: list[tuple[str, str]] = []
    roles: dict[str, str] = {}
    extent: dict[str, int] = {}

    def add(doc: str, who: str, role: str, pairs: list) -> None:
        roles[who] = role
        assignments.append((doc, who))
        for s, e in pairs:
            if e > s:
                spans.append(Span(doc, who, int(s), int(e), category))
                extent[doc] = max(extent.get(doc, 0), int(e))

    crowd_docs: list[str] = []
    for split in ("train", "dev", "test", "expert-dev"):
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
    docs = _real_texts(order) or {d: ("abcd " * (extent.get(d, 5) // 5 + 2))[: extent.get(d, 5) + 5] for d in order}
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
