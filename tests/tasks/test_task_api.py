"""The Python API routes keyword options by the task's own options model."""

from __future__ import annotations

import pytest

from assay.api import make_spec
from assay.errors import ConfigError


def test_a_task_option_wins_over_an_engine_setting_of_the_same_name(workspace):
    spec = make_spec("datagen_generate", "openai/x", seed=7, n=3, limit=2)
    assert spec.task_options == {"seed": 7, "n": 3}
    assert spec.seed is None and spec.limit == 2
    # either side can be named explicitly
    spec = make_spec("datagen_generate", "openai/x", engine={"seed": 5}, task_options={"n": 2})
    assert spec.seed == 5 and spec.task_options == {"n": 2}
    # a task without a seed option: the engine's
    assert make_spec("qa", "openai/x", data="d.jsonl", seed=3).seed == 3


def test_an_unknown_keyword_names_both_lists(workspace):
    with pytest.raises(ConfigError) as e:
        make_spec("qa", "openai/x", data="d.jsonl", scorrer="exact")
    text = str(e.value)
    assert "unknown option scorrer for task qa" in text
    assert "task options:" in text and "scorer" in text and "engine settings:" in text
    assert "\n" not in text
