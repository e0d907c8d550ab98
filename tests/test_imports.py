"""Heavy libraries (and the book's compat layer) stay off the command line's import path
and off a qa run.

``import scipy.stats`` alone cost 1.3 s of every ``assay run`` once; each heavy
library is imported only where it is used (BFCL's tree-sitter for Java/JS decoding,
math-verify for the math scorer, pyarrow for parquet GAIA metadata, ...).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assay.testing import FakeServer, Rule

HEAVY = ("scipy", "numpy", "datasets", "pyarrow", "llama_cpp", "math_verify", "sympy",
         "tree_sitter", "huggingface_hub", "assay.web.server",
         # the HelloAgents-compatible names are never on the core path
         "assay.compat")

PROBE = """
import atexit, json, sys
heavy = {heavy!r}
atexit.register(lambda: print("LOADED " + json.dumps(
    sorted(m for m in heavy if m in sys.modules)), file=sys.stderr))
{body}
"""


def loaded_by(body: str, *, home: Path) -> list[str]:
    code = PROBE.format(heavy=HEAVY, body=body)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, ASSAY_HOME=str(home)), timeout=300)
    line = next((x for x in p.stderr.splitlines() if x.startswith("LOADED ")), None)
    assert line is not None, (p.returncode, p.stdout, p.stderr)
    also = next((x for x in p.stderr.splitlines() if x.startswith("ALSO")), "ALSO ")
    assert also.strip() == "ALSO", also
    return json.loads(line.removeprefix("LOADED "))


def test_importing_the_cli_loads_nothing_heavy(tmp_path: Path) -> None:
    # nor the templates or the HTTP client: `assay --help` needs neither
    body = ("import sys\nimport assay.cli.main\n"
            "print('ALSO ' + ' '.join(m for m in ('jinja2', 'aiohttp') if m in sys.modules),"
            " file=sys.stderr)")
    assert loaded_by(body, home=tmp_path) == []


def test_a_whole_qa_run_loads_nothing_heavy(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"question": f"Repeat after me: w{i}",
                                        "answer": f"w{i}"}) + "\n" for i in range(20)))
    with FakeServer(rules=[Rule(r"Repeat after me: (\S+)", "Answer: \\1")]) as srv:
        argv = ["assay", "run", "qa", "--data", str(data), "--model", "openai/fake",
                "--base-url", srv.base_url, "-q", "--no-cache"]
        body = (f"import sys\nsys.argv = {argv!r}\nfrom assay.cli.main import main\n"
                "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n")
        assert loaded_by(body, home=tmp_path / "home") == []
        assert srv.stats["requests"] == 20


def test_gaia_samples_are_built_without_the_compat_layer(tmp_path: Path) -> None:
    gaia = Path(__file__).resolve().parent / "tasks" / "gaia"
    body = (f"import sys\nsys.path.insert(0, {str(gaia)!r})\n"
            "import gaia_fixtures as fx\n"
            "from assay.tasks.registry import build_task\n"
            f"root = fx.write_gaia_fixture(__import__('pathlib').Path({str(tmp_path / 'g')!r}))\n"
            "samples = build_task('gaia', {'data_dir': str(root)}).samples()\n"
            "assert len(samples) == 11 and all(s.row for s in samples)\n"
            "print('ALSO ' + ' '.join(m for m in ('assay.compat',) if m in sys.modules),"
            " file=sys.stderr)")
    assert "assay.compat" not in loaded_by(body, home=tmp_path / "home")
