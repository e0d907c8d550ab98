"""The book's data-generation tools take an LLM object through the one Python adapter:
``invoke(messages)`` sync or async, shared by every call (a client holds no sample state)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from assay.compat import LLMJudgeTool
from assay.tasks.datagen.problem import Problem, save_problems

VERDICT = json.dumps({"rationale": "ok", "scores": {
    "correctness": 5, "clarity": 4, "difficulty_match": 3, "completeness": 4}})


def _problems(tmp_path: Path) -> Path:
    return save_problems([Problem(f"p-{i}", f"Find the remainder when {i}^2 is divided by 7.",
                                  str(i * i % 7), source="test") for i in range(3)],
                         tmp_path / "problems.jsonl")


def test_an_async_invoke_llm_judges(tmp_path: Path, workspace: Path) -> None:
    class AsyncLLM:  # an async HelloAgentsLLM-style client
        model = "async-judge"

        def __init__(self) -> None:
            self.calls = 0

        async def invoke(self, messages: list[dict[str, str]]) -> str:
            await asyncio.sleep(0)
            assert messages[-1]["role"] == "user" and "remainder" in messages[-1]["content"]
            self.calls += 1
            return VERDICT

    llm = AsyncLLM()
    result = json.loads(LLMJudgeTool(llm=llm).run(
        {"generated_data_path": str(_problems(tmp_path)), "output_dir": str(tmp_path / "j")}))
    assert result["status"] == "success", result
    assert result["metrics"]["overall_mean"]["value"] == 4.0
    assert result["metrics"]["n_invalid"] == 0 and result["metrics"]["n_valid"] == 3
    assert llm.calls == 3  # the client itself was called: shared, not copied


def test_an_llm_client_that_cannot_be_copied_is_shared(tmp_path: Path, workspace: Path) -> None:
    class Client:  # like HelloAgentsLLM: holds an HTTP client that cannot be deep-copied
        model = "locked-judge"

        def __init__(self) -> None:
            self.lock = threading.Lock()

        def invoke(self, messages: list[dict[str, str]]) -> str:
            with self.lock:
                return VERDICT

    result = json.loads(LLMJudgeTool(llm=Client()).run(
        {"generated_data_path": str(_problems(tmp_path)), "output_dir": str(tmp_path / "j")}))
    assert result["status"] == "success", result
    assert result["metrics"]["overall_mean"]["value"] == 4.0


def test_the_generator_delay_is_the_engine_rate_limit(tmp_path: Path, workspace: Path) -> None:
    from assay.compat import AIMEGenerator
    from assay.errors import ConfigError
    from assay.store.sqlite import Store

    class Generator:  # invoke(messages) -> the generator's JSON
        def invoke(self, messages: list[dict[str, str]]) -> str:
            return json.dumps({"problem": f"How many multiples of 3 are at most {len(messages)}"
                               f"{len(messages[-1]['content']) % 89}?", "answer": 7,
                               "solution": "Count them.", "topic": "Number Theory"})

    gen = AIMEGenerator(llm=Generator(), delay_seconds=0.01, use_reference_examples=False)
    path = gen.generate_and_save(2, tmp_path / "out")
    assert len(json.loads(Path(path).read_text())) == 2
    store = Store()
    try:
        assert store.get_run(gen.last_run_id)["spec"]["rpm"] == 6000.0  # 60 / 0.01 s
    finally:
        store.close()
    with pytest.raises(ConfigError, match="delay_seconds"):
        AIMEGenerator(delay_seconds=-1)
