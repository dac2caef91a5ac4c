"""Start-up: the commands and the columnar readers import only what they use (issue 14).

Checked in a fresh interpreter by the modules it has loaded, not by a clock.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("argv", [["--help"], ["sample-size", "--help"], ["aggregate", "--help"]])
def test_help_imports_no_numpy(argv):
    loaded = _loaded(f"import sys\nfrom crowdqa.api.cli import main\nsys.argv = ['crowdqa', *{argv!r}]\n"
                     "try:\n    main()\nexcept SystemExit:\n    pass")
    assert "numpy" not in loaded and "scipy" not in loaded


def _fast_read_loads(path, reader: str) -> set[str]:
    """The modules a fresh interpreter has loaded after ``reader``'s fast path read ``path`` (asserted taken)."""
    call = {"categorical": "c._read_columnar(Path({p!r}), {{'item': None, 'annotator': None, 'label': None, "
                           "'gold': None}}, role='crowd')",
            "conll": "k._read_columnar(Path({p!r}), role='crowd')"}[reader].format(p=str(path))
    return _loaded("from pathlib import Path\nimport crowdqa.ingest.categorical as c, crowdqa.ingest.conll as k\n"
                   f"assert {call} is not None")


def test_fast_readers_import_no_pandas_nor_pyarrow_compute(tmp_path):
    """pyarrow's to_numpy and scalar conversion import pandas; pyarrow.compute's import alone costs a command
    line more than reading a file of 300k answers. A plain categorical file (the CLI's) and a CoNLL file are
    read as bytes with numpy alone; a categorical file with quotes by Arrow's CSV parser."""
    (tmp_path / "a.csv").write_text("task,worker,label,gold\nt1,w1,a,a\nt1,w2,b,\nt2,w1,b,\n", encoding="utf-8")
    (tmp_path / "q.csv").write_text('task,worker,label\n"t, 1",w1,a\nt2,w1,b\n', encoding="utf-8")
    (tmp_path / "b.conll").write_text("EU\tB-ORG\tO\nrejects\tO\tO\n\nA\tO\t?\n", encoding="utf-8")
    for path, reader in ((tmp_path / "a.csv", "categorical"), (tmp_path / "b.conll", "conll")):
        loaded = _fast_read_loads(path, reader)
        assert "pyarrow" not in loaded and "pandas" not in loaded, path.name
    loaded = _fast_read_loads(tmp_path / "q.csv", "categorical")
    assert "pyarrow" in loaded and "pandas" not in loaded
