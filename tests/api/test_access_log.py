"""Issue 47 item 5: a key sent in the query string is refused and not written to uvicorn's access log
(crowdqa.api.access_log)."""

from __future__ import annotations

import logging

from crowdqa.api.access_log import CredentialFilter, redact


def test_keys_and_credential_parameters_are_redacted_and_the_rest_kept():
    assert redact("/api/v1/datasets?api_key=cqa_ab12_secret&limit=5") == "/api/v1/datasets?api_key=***&limit=5"
    assert redact("/api/v1/jobs?offset=10&access_token=zz") == "/api/v1/jobs?offset=10&access_token=***"
    assert redact("/api/v1/cqa_ab12_secret/x") == "/api/v1/***/x"
    assert redact("/api/v1/jobs?offset=10&limit=5") == "/api/v1/jobs?offset=10&limit=5"


def test_the_filter_rewrites_uvicorns_access_record():
    """The record as uvicorn's httptools and h11 protocols log it: (client, method, path with query, version,
    status)."""
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", "/api/v1/datasets?key=cqa_a_b", "1.1", 401), None)
    assert CredentialFilter().filter(record)
    assert record.getMessage() == '127.0.0.1:5 - "GET /api/v1/datasets?key=*** HTTP/1.1" 401'
