"""A Label Studio pull meets the label-vocabulary guard of any upload (crowdqa.jobs.uploads.merge_uploads): experts
typing spans with labels the crowd never uses (PERSON where the crowd says PER) are refused, not scored 0."""

from __future__ import annotations

from tests.label_studio.conftest import NER_TASKS, _span_result, annotation, crowd_spans
from tests.label_studio.test_pull_guards import (  # noqa: F401 - the fake server's fixtures
    EMAILS,
    PROBLEM,
    PROJECT,
    _datasets,
    _kept_files,
    _pull,
    fake,
    key,
)

LONG = {"PER": "PERSON", "LOC": "LOCATION"}
CONFIG = """<View>
  <Labels name="label" toName="text">
    <Label value="PER"/><Label value="LOC"/><Label value="PERSON"/><Label value="LOCATION"/>
  </Labels>
  <Text name="text" value="$text"/>
</View>"""


def _tasks(expert_types: dict[str, str]) -> list[dict]:
    """The span tasks: three crowd workers (PER/LOC) and the expert, whose types are renamed by ``expert_types``."""
    tasks = []
    for k, (text, truth) in enumerate(NER_TASKS, start=1):
        notes = [annotation(EMAILS[w], _span_result(crowd_spans(k, w - 1, truth), text)) for w in (1, 2, 3)]
        expert = [(s, e, expert_types.get(t, t)) for s, e, t in truth]
        notes.append(annotation(EMAILS[4], _span_result(expert, text)))
        for n in notes:
            n["completed_by"] = next(u for u, e in EMAILS.items() if e == n["completed_by"]["email"])
        tasks.append({"id": k, "updated_at": f"2026-01-01T00:00:{k:02d}Z", "data": {"text": text},
                      "annotations": notes})
    return tasks


def test_a_pull_whose_experts_share_no_span_type_with_the_crowd_is_422(settings, fake, client, key):  # noqa: F811
    """422 problem+json naming both sets, and neither a dataset nor a file left; with one vocabulary, 200."""
    fake.config, fake.tasks = CONFIG, _tasks(LONG)
    r = _pull(client, key, experts=[EMAILS[4]])
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == PROBLEM
    detail = r.json()["detail"]
    assert "the experts' span types ('LOCATION', 'PERSON') share none with the crowd's ('LOC', 'PER')" in detail
    assert detail.startswith(f"label-studio-{PROJECT}-crowd.json, label-studio-{PROJECT}-expert.json: "), detail
    assert _datasets(client, key) == [] and _kept_files(settings) == []
    fake.tasks = _tasks({})
    assert _pull(client, key, experts=[EMAILS[4]]).status_code == 200
