"""Where the official simulators come from, and the shared long-context state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import official_oracle as oracle
import pytest

from assay.tasks.bfcl import data as bfcl_data
from assay.tasks.bfcl.multiturn import sim

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)


def test_copied_simulators_import_without_site_packages(tmp_path: Path) -> None:
    """What 'assay data pull bfcl' keeps beside the data imports on its own: the package's
    empty __init__ files and the simulator modules, nothing of bfcl_eval's dependencies."""
    pkg = bfcl_data.installed_package_dir()
    assert pkg is not None
    bfcl_data.copy_simulators(pkg, tmp_path)
    code = tmp_path / bfcl_data.CODE_DIR
    names = sorted(p.name for p in (code / bfcl_data.SIM_DIR).glob("*.py"))
    assert {"gorilla_file_system.py", "long_context.py", "travel_booking.py"} <= set(names)
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); "
             "from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.gorilla_file_system "
             "import GorillaFileSystem; fs = GorillaFileSystem(); "
             "fs._load_scenario({'root': {'w': {'type': 'directory', 'contents': {}}}}); "
             "print(fs.ls()); print('site' in sys.modules)")
    out = subprocess.run([sys.executable, "-S", "-c", probe, str(code)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["{'current_directory_content': []}", "False"]


def test_sim_root_falls_back_to_the_pulled_copy(tmp_path: Path, workspace: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = bfcl_data.installed_package_dir()
    dest = bfcl_data.cache_root() / "2026.3.23"
    bfcl_data.copy_simulators(pkg, dest)
    real = sim.importlib.util.find_spec
    monkeypatch.setattr(sim.importlib.util, "find_spec",
                        lambda name, *a: None if name == "bfcl_eval" else real(name, *a))
    assert sim.sim_root() == dest / bfcl_data.CODE_DIR
    (dest / bfcl_data.CODE_DIR).rename(tmp_path / "gone")
    assert sim.sim_root() is None


def test_pristine_values_come_from_the_shipped_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutation made before the first use must not become the reference state."""
    module = sim._import("long_context")
    cards = module.CREDIT_CARD_EXTENSION
    card = next(iter(cards))
    shipped = cards[card]["balance"]
    monkeypatch.setattr(sim, "_pristine", None)
    cards[card]["balance"] = -1.0  # what a booking did before anyone took a snapshot
    try:
        with sim.pristine_long_context():
            assert module.CREDIT_CARD_EXTENSION[card]["balance"] == shipped
            module.CREDIT_CARD_EXTENSION[card]["balance"] = 7.0  # an entry's own change
        assert module.CREDIT_CARD_EXTENSION[card]["balance"] == shipped  # undone on exit
    finally:
        monkeypatch.undo()
        with sim.pristine_long_context():
            pass
