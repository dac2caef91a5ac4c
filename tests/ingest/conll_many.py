"""A generated multi-annotator CoNLL file: many annotator columns, a few of them labelling each sentence
(the shape of Rodrigues et al.'s 47-annotator release), for measuring how the reader's memory grows."""

from __future__ import annotations

from pathlib import Path

import numpy as np

TAGS = np.array(["O", "O", "O", "O", "B-PER", "I-PER", "B-LOC", "B-ORG", "I-ORG", "B-MISC"])


def write_conll(path: Path, *, target_bytes: int, n_annotators: int = 47, per_sentence: int = 4,
                seed: int = 0) -> int:
    """Write sentences of 5-25 tokens until the file holds ``target_bytes``; return its size."""
    rng = np.random.default_rng(seed)
    written = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# annotators: " + " ".join(f"A{k:02d}" for k in range(n_annotators)) + "\n")
        while written < target_bytes:
            chunk = []
            for _ in range(200):
                n = int(rng.integers(5, 26))
                who = rng.choice(n_annotators, per_sentence, replace=False)
                cols = np.full((n, n_annotators), "?", dtype=object)
                cols[:, who] = TAGS[rng.integers(0, TAGS.size, size=(n, per_sentence))]
                words = [f"w{int(x)}" for x in rng.integers(0, 50_000, size=n)]
                chunk.append("\n".join(w + "\t" + "\t".join(row) for w, row in zip(words, cols.tolist(), strict=True)))
            text = "\n\n".join(chunk) + "\n\n"
            fh.write(text)
            written += len(text.encode())
    return path.stat().st_size
