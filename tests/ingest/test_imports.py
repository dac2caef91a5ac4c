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


def test_columnar_readers_do_not_import_pandas(tmp_path):
    """pyarrow's to_numpy and scalar conversion import pandas; the fast paths avoid both."""
    (tmp_path / "a.csv").write_text("task,worker,label,gold\nt1,w1,a,a\nt1,w2,b,\nt2,w1,b,\n", encoding="utf-8")
    (tmp_path / "b.conll").write_text("EU\tB-ORG\tO\nrejects\tO\tO\n\nA\tO\t?\n", encoding="utf-8")
    loaded = _loaded(
        "from pathlib import Path\nimport crowdqa.ingest.categorical as c, crowdqa.ingest.conll as k\n"
        f"assert c._read_columnar(Path({str(tmp_path / 'a.csv')!r}), "
        "{'item': None, 'annotator': None, 'label': None, 'gold': None}, role='crowd') is not None\n"
        f"assert k._read_columnar(Path({str(tmp_path / 'b.conll')!r}), role='crowd') is not None")
    assert "pyarrow" in loaded and "pandas" not in loaded
