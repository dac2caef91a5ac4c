"""Write pico-mini/: the bundled sample (api/sample/) in the PICO-data layout, for the PICO study tutorial.

Run ``python docs/tutorials/data/make_pico_mini.py`` from the repository to regenerate it (deterministic: it only
regroups ``api/sample/crowd.jsonl`` and ``expert.jsonl``). The layout is github.com/yinfeiy/PICO-data's
(Nguyen et al., ACL 2017): ``docs/<docid>.txt`` holds each abstract's text, and each file of
``annotations/<split>/`` is JSON Lines, one document per line,
``{"docid": ..., "Participants": {"<worker>": [[start, end], ...]}}`` (character offsets, end exclusive; a worker
who labelled a document and found nothing has an empty list). ``PICO-annos-crowdsourcing.json`` holds the ten
simulated Mechanical Turk workers, ``PICO-annos-professional.json`` the simulated expert, as in the real
``expert-dev`` split.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "api" / "sample"
OUT = Path(__file__).resolve().parent / "pico-mini"


def regroup(path: Path) -> tuple[dict[str, dict[str, list[list[int]]]], dict[str, str]]:
    """docid -> worker -> spans, and docid -> text, from a spans-jsonl file."""
    spans: dict[str, dict[str, list[list[int]]]] = defaultdict(dict)
    texts = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        worker = row["annotator"].split(":", 1)[1]  # mturk:A1CAREFUL -> A1CAREFUL; pico-jsonl names it pico:<id>
        found = spans[row["doc_id"]].setdefault(worker, [])
        if row["start"] is not None:
            found.append([row["start"], row["end"]])
        texts[row["doc_id"]] = row["text"]
    return spans, texts


def write(name: str, spans: dict[str, dict[str, list[list[int]]]]) -> None:
    path = OUT / "annotations" / "expert-dev" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"Participants": dict(sorted(workers.items())), "docid": doc})
             for doc, workers in sorted(spans.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    crowd, texts = regroup(SAMPLE / "crowd.jsonl")
    expert, _ = regroup(SAMPLE / "expert.jsonl")
    (OUT / "docs").mkdir(parents=True, exist_ok=True)
    for doc, text in sorted(texts.items()):
        (OUT / "docs" / f"{doc}.txt").write_text(text, encoding="utf-8")
    write("PICO-annos-crowdsourcing.json", crowd)
    write("PICO-annos-professional.json", expert)


if __name__ == "__main__":
    main()
