"""Pre-annotation against a real redis-server, labelled by a separate ``crowdqa worker`` process (rq's forking
worker): the same queue, task and polling as the embedded service (tests/api/test_predictions.py)."""

from __future__ import annotations

import pytest

from tests.api.test_predictions import check_predictions_equal_the_command_line
from tests.api.test_redis_flow import redis_client, redis_settings, start_worker  # noqa: F401  (fixtures)

pytestmark = pytest.mark.redis


def test_a_worker_process_labels_the_documents(redis_client, keys, start_worker, tmp_path):  # noqa: F811
    """Oracle: the command line's ``--from-model --frozen --predict`` on the job's model, byte for byte."""
    start_worker()
    check_predictions_equal_the_command_line(redis_client, keys["a"], tmp_path)
