"""The per-project limit on Label Studio exchanges under way (crowdqa.jobs.outbound), on a real Redis shared by
processes (production) and on the embedded server's fakeredis.

Oracle: counting by hand. With a limit of 2, the third concurrent holder of one project is refused and a holder of
another project is not; a released or lapsed slot is free again.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from crowdqa.jobs.errors import QuotaExceededError
from crowdqa.jobs.outbound import exchange_slot
from crowdqa.store.settings import get_settings


def test_a_project_holds_at_most_its_limit_across_processes(settings, monkeypatch):
    """Two slots held by another process (a second API process: same Redis, own memory) leave none for this one;
    another project is not held back; they are free once that process lets go."""
    monkeypatch.setenv("CROWDQA_LABEL_STUDIO_CONCURRENCY", "2")
    get_settings.cache_clear()
    settings = get_settings()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time
        from contextlib import ExitStack
        from crowdqa.jobs.outbound import exchange_slot
        from crowdqa.store.settings import get_settings
        with ExitStack() as stack:
            for _ in range(2):
                stack.enter_context(exchange_slot(settings=get_settings(), project_id="p1", what="pull"))
            print("held", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(QuotaExceededError, match="CROWDQA_LABEL_STUDIO_CONCURRENCY = 2") as caught:
            with exchange_slot(settings=settings, project_id="p1", what="push"):
                pass
        assert 1 <= caught.value.retry_after <= settings.label_studio_timeout
        with exchange_slot(settings=settings, project_id="p2", what="pull"):
            pass
    finally:
        holder.communicate("\n", timeout=30)
    with exchange_slot(settings=settings, project_id="p1", what="pull"), \
            exchange_slot(settings=settings, project_id="p1", what="pull"):
        pass


def test_the_slot_of_a_process_that_died_lapses_after_its_deadline(settings, monkeypatch):
    """A holder killed without letting go keeps its slot until its instant (deadline and margin), not for ever."""
    monkeypatch.setenv("CROWDQA_LABEL_STUDIO_CONCURRENCY", "1")
    get_settings.cache_clear()
    settings = get_settings()
    from crowdqa.jobs.queue import redis_connection

    # What a killed holder leaves: its member, due at its deadline and margin.
    redis_connection(settings).zadd("crowdqa:exchanges:p1", {"dead": time.time() + 1.0})
    with pytest.raises(QuotaExceededError):
        with exchange_slot(settings=settings, project_id="p1", what="pull"):
            pass
    time.sleep(1.1)
    with exchange_slot(settings=settings, project_id="p1", what="pull"):
        pass


def test_the_embedded_server_counts_in_its_own_redis(tmp_path, monkeypatch):
    """No CROWDQA_REDIS_URL: the limit holds between the threads of the one embedded process (fakeredis)."""
    monkeypatch.setenv("CROWDQA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CROWDQA_REDIS_URL", raising=False)
    monkeypatch.setenv("CROWDQA_LABEL_STUDIO_CONCURRENCY", "1")
    get_settings.cache_clear()
    settings = get_settings()
    assert settings.embedded
    with exchange_slot(settings=settings, project_id="p1", what="pull"):
        with pytest.raises(QuotaExceededError, match="1 pulls or pushes of Label Studio under way"):
            with exchange_slot(settings=settings, project_id="p1", what="pull"):
                pass
    with exchange_slot(settings=settings, project_id="p1", what="pull"):
        pass
    get_settings.cache_clear()
