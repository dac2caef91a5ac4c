"""Write sentiment-mini/: a small synthetic categorical crowd with expert answers, for the categorical tutorial.

Run ``python docs/tutorials/data/make_sentiment_mini.py`` from the repository to regenerate it (deterministic:
seed 20261207). 300 short product reviews (items ``r000`` ... ``r299``) each get a true sentiment, ``positive``,
``neutral`` or ``negative`` (half positive, a fifth neutral, the rest negative); twelve simulated workers answer
each item with probability 1/4: eight reliable ones (accuracy 0.80 to 0.95, errors spread over the other
classes), two who answer ``positive`` whenever unsure (accuracy 0.65), one spammer who answers at random and one
who confuses ``neutral`` with ``negative`` both ways. Every item has at least two answers.

* ``answers.csv``: crowd-kit's layout, ``task,worker,label``, one answer per row.
* ``truth.csv``: ``task,true_label`` for the first 90 items, as an expert labelled them (the true class).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

SEED = 20261207
CLASSES = ("positive", "neutral", "negative")
N_ITEMS, N_TRUTH = 300, 90
OUT = Path(__file__).resolve().parent / "sentiment-mini"


def _answer(rng: np.random.Generator, kind: str, accuracy: float, truth: int) -> int:
    if kind == "spammer":
        return int(rng.integers(3))
    if kind == "confuser" and truth in (1, 2):
        return 3 - truth if rng.random() < 0.6 else truth
    if rng.random() < accuracy:
        return truth
    if kind == "optimist":
        return 0
    return int(rng.choice([c for c in range(3) if c != truth]))


def main() -> None:
    rng = np.random.default_rng(SEED)
    truth = rng.choice(3, size=N_ITEMS, p=[0.5, 0.2, 0.3])
    workers = [(f"w{i:02d}", "reliable", acc) for i, acc in enumerate((0.95, 0.93, 0.9, 0.9, 0.88, 0.85, 0.82, 0.8))]
    workers += [("w08", "optimist", 0.65), ("w09", "optimist", 0.65), ("w10", "spammer", 0.0),
                ("w11", "confuser", 0.9)]
    rows = []
    for item in range(N_ITEMS):
        chosen = [w for w in workers if rng.random() < 0.25]
        while len(chosen) < 2:
            chosen.append(workers[int(rng.integers(len(workers)))])
            chosen = list(dict.fromkeys(chosen))
        for name, kind, accuracy in chosen:
            rows.append((f"r{item:03d}", name, CLASSES[_answer(rng, kind, accuracy, int(truth[item]))]))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "answers.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(("task", "worker", "label"))
        writer.writerows(rows)
    with open(OUT / "truth.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(("task", "true_label"))
        writer.writerows((f"r{item:03d}", CLASSES[int(truth[item])]) for item in range(N_TRUTH))


if __name__ == "__main__":
    main()
