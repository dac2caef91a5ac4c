"""Write the bundled sample: a small synthetic crowd + expert span task (spans-jsonl).

Run ``python api/sample/make_sample.py`` to regenerate ``crowd.jsonl`` and ``expert.jsonl``
(deterministic: seed 20170730). Forty trial abstracts-like sentences mention the
*Participants* of a trial; ten simulated Mechanical Turk workers label five sentences each,
with realistic noise: careful workers, workers who miss spans, workers who cut or stretch
span boundaries, and one spammer who marks random words. One simulated expert
(``upwork:md1``) labels the truth on half of the documents, so reports show meaningful
per-worker precision and recall. Each JSON line is a span: ``doc_id, annotator, start, end,
label, text``; a line with null start/end/label says the annotator labelled the sentence
and found nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SEED = 20170730
LABEL = "Participants"
N_DOCS = 40
WORKERS_PER_DOC = 5
EXPERT_DOCS = 20

_POPULATIONS = [
    "120 adults with type 2 diabetes", "patients with chronic heart failure", "48 children aged 6 to 12 years",
    "older women with osteoporosis", "smokers attending primary care clinics", "adults with major depression",
    "pregnant women at risk of preterm birth", "362 patients undergoing knee replacement",
    "healthy volunteers", "men with localized prostate cancer", "nursing home residents with dementia",
    "adolescents with asthma", "patients admitted with community acquired pneumonia",
    "obese adults with hypertension", "infants born before 32 weeks",
]
_INTERVENTIONS = ["metformin", "a structured exercise program", "vitamin D supplements", "cognitive therapy",
                  "early mobilisation", "inhaled budesonide", "a nurse-led telephone follow-up", "low dose aspirin"]
_TEMPLATES = [
    "We randomized {p} to {i} or placebo for twelve weeks .",
    "This trial enrolled {p} who received {i} daily .",
    "In {p} , {i} reduced the primary outcome compared with usual care .",
    "A total of {p} were assigned to {i} or control .",
    "We studied whether {i} improves quality of life in {p} .",
    "Eligible participants were {p} recruited from three hospitals and given {i} .",
]

# (name, P(marks a true span), boundary noise in tokens, false spans per sentence)
_WORKERS = [
    ("mturk:A1CAREFUL", 0.97, 0.0, 0.00), ("mturk:A2CAREFUL", 0.95, 0.2, 0.05),
    ("mturk:A3GOOD", 0.90, 0.4, 0.10), ("mturk:A4GOOD", 0.88, 0.5, 0.10),
    ("mturk:A5SHORT", 0.85, 1.5, 0.05), ("mturk:A6LONG", 0.85, 1.5, 0.15),
    ("mturk:A7MISSES", 0.45, 0.3, 0.05), ("mturk:A8MISSES", 0.55, 0.5, 0.10),
    ("mturk:A9NOISY", 0.70, 1.0, 0.50), ("mturk:A10SPAM", 0.15, 2.0, 1.20),
]


def _tokens(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for word in text.split(" "):
        out.append((pos, pos + len(word)))
        pos += len(word) + 1
    return out


def make_documents(rng: np.random.Generator) -> list[tuple[str, str, tuple[int, int]]]:
    """(doc_id, text, true character span of the participants) for each sentence."""
    docs = []
    for d in range(N_DOCS):
        template = _TEMPLATES[rng.integers(len(_TEMPLATES))]
        p = _POPULATIONS[rng.integers(len(_POPULATIONS))]
        i = _INTERVENTIONS[rng.integers(len(_INTERVENTIONS))]
        text = template.format(p=p, i=i)
        start = text.index(p)
        docs.append((f"trial-{d:03d}", text, (start, start + len(p))))
    return docs


def _noisy_span(rng, text: str, span: tuple[int, int], shift: float) -> tuple[int, int]:
    toks = _tokens(text)
    first = next(k for k, (a, b) in enumerate(toks) if a == span[0])
    last = next(k for k, (a, b) in enumerate(toks) if b == span[1])
    first = int(np.clip(first + np.round(rng.normal(0, shift)), 0, len(toks) - 1))
    last = int(np.clip(last + np.round(rng.normal(0, shift)), first, len(toks) - 1))
    return toks[first][0], toks[last][1]


def make_rows(seed: int = SEED) -> tuple[list[dict], list[dict]]:
    """The crowd rows and the expert rows."""
    rng = np.random.default_rng(seed)
    docs = make_documents(rng)
    crowd, expert = [], []
    for d, (doc_id, text, span) in enumerate(docs):
        toks = _tokens(text)
        chosen = rng.choice(len(_WORKERS), size=WORKERS_PER_DOC, replace=False)
        for w in sorted(chosen.tolist()):
            name, sensitivity, shift, false_rate = _WORKERS[w]
            spans = []
            if rng.random() < sensitivity:
                spans.append(_noisy_span(rng, text, span, shift))
            for _ in range(rng.poisson(false_rate)):
                k = int(rng.integers(len(toks)))
                length = int(rng.integers(1, 3))
                spans.append((toks[k][0], toks[min(k + length - 1, len(toks) - 1)][1]))
            rows = [{"doc_id": doc_id, "annotator": name, "start": a, "end": b, "label": LABEL, "text": text}
                    for a, b in sorted(set(spans))]
            crowd.extend(rows or [{"doc_id": doc_id, "annotator": name, "start": None, "end": None,
                                   "label": None, "text": text}])
        if d % 2 == 0 and len(expert) < EXPERT_DOCS:
            expert.append({"doc_id": doc_id, "annotator": "upwork:md1", "start": span[0], "end": span[1],
                           "label": LABEL, "text": text})
    return crowd, expert


def write_sample(folder: Path, seed: int = SEED) -> None:
    """Write ``crowd.jsonl`` and ``expert.jsonl`` into ``folder``."""
    crowd, expert = make_rows(seed)
    for name, rows in (("crowd.jsonl", crowd), ("expert.jsonl", expert)):
        with open(folder / name, "w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write_sample(Path(__file__).resolve().parent)
