"""What the agentic backends need, checked before any model call: ``memory_vector`` without
sentence-transformers/faiss and ``web_search`` without a SerpAPI key (or its packages) are
one-line errors, and no request reaches the server.

Absent packages are made absent for sure: ``sys.modules[name] = None`` blocks an import
(and ``find_spec``) whatever is installed.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import official_oracle as oracle
import pytest

from assay.engine.runner import Engine, RunSpec
from assay.errors import ConfigError
from assay.store.sqlite import Store

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)


@pytest.fixture
def store(workspace: Path):
    s = Store()
    yield s
    s.close()


def attempt(store: Store, base_url: str, category: str) -> ConfigError:
    spec = RunSpec(task="bfcl", model="openai/fake", base_url=base_url,
                   task_options={"category": category, "mode": "fc"})
    with pytest.raises(ConfigError) as info:
        asyncio.run(Engine(store, quiet=True).run(spec))
    return info.value


def test_memory_vector_without_its_packages(fake_server, store, monkeypatch) -> None:
    for name in ("sentence_transformers", "faiss"):
        monkeypatch.setitem(sys.modules, name, None)
    srv = fake_server()
    message = str(attempt(store, srv.base_url, "memory_vector"))
    assert message == ("BFCL memory_vector needs the packages sentence-transformers, "
                       "faiss-cpu: pip install 'assay[bfcl-vector]'")
    assert srv.requests == [] and store.list_runs() == []


def test_memory_kv_without_its_packages(fake_server, store, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "rank_bm25", None)
    srv = fake_server()
    message = str(attempt(store, srv.base_url, "memory_kv"))
    assert message == ("BFCL memory_kv needs the package rank-bm25: "
                       "pip install 'assay[bfcl-memory]'")
    assert srv.requests == []


def test_web_search_without_a_key_or_packages(fake_server, store, monkeypatch) -> None:
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "html2text", None)
    srv = fake_server()
    both = str(attempt(store, srv.base_url, "web_search_base"))
    # html2text, and whichever other package of the extra is missing here too
    assert re.match(r"web_search needs a SerpAPI key: set SERPAPI_API_KEY; BFCL "
                    r"web_search_base needs the packages? html2text\b", both), both
    assert both.endswith(": pip install 'assay[bfcl-web]'") and "\n" not in both
    monkeypatch.setenv("SERPAPI_API_KEY", "sk-test-not-a-real-key")
    packages = str(attempt(store, srv.base_url, "web_search_no_snippet"))
    assert re.match(r"BFCL web_search_no_snippet needs the packages? html2text\b", packages)
    assert "sk-test" not in packages
    assert srv.requests == [] and store.list_runs() == []


def test_the_cli_says_it_in_one_line(fake_server, workspace) -> None:
    srv = fake_server()
    env = {k: v for k, v in os.environ.items() if k != "SERPAPI_API_KEY"}
    out = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category",
                          "web_search", "--model", "openai/fake", "--base-url", srv.base_url,
                          "-q"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1, out.stderr
    assert "web_search needs a SerpAPI key: set SERPAPI_API_KEY" in out.stderr
    assert srv.requests == []
