"""``crowdqa ingest`` of a large multi-annotator CoNLL file streams (issue 30 item 7: an 82 MB, 47-annotator file
peaked at 2.3 GB). Oracle: the peak resident memory (VmHWM) of a process of its own that reads a generated file,
less what the process held before it read (the interpreter, and every import, by ingesting a small file first),
against the file's size."""

from __future__ import annotations

import subprocess
import sys

from tests.ingest.conll_many import write_conll

_PROGRAM = """
import sys
from crowdqa.api.cli import main

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key + ":"))

assert main(["ingest", sys.argv[2], "--format", "conll"]) == 0  # a small file first: every import is done
before = status("VmHWM")
assert main(["ingest", sys.argv[1], "--format", "conll"]) == 0
print(before, status("VmHWM"), file=sys.stderr)
"""


def test_ingest_peak_memory_is_under_four_times_the_file(tmp_path):
    size = write_conll(tmp_path / "many.conll", target_bytes=12_000_000)
    write_conll(tmp_path / "few.conll", target_bytes=10_000)
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(tmp_path / "many.conll"), str(tmp_path / "few.conll")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    before, peak = map(int, done.stderr.split()[-2:])
    assert (peak - before) / size < 4, (peak - before) / size
    print(f"peak growth {(peak - before) / size:.2f}x the file")
