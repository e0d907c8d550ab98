"""The datagen steps' headline rates are clustered by sample over epochs."""

from __future__ import annotations

from assay.core.types import SampleResult
from assay.tasks.datagen.generate_metrics import generate_metrics
from assay.tasks.datagen.verify import VerifyTask


def rows(name: str, values: list[float], epochs: int) -> list[SampleResult]:
    return [SampleResult(run_id="r", sample_id=f"s{i}", epoch=e, input=None, target=None,
                         output="", prediction=None, scores={name: {"value": v}}, error=None,
                         latency_s=0.0, input_tokens=0, output_tokens=0,
                         metadata={"topic": "algebra"})
            for i, v in enumerate(values) for e in range(epochs)]


def test_identical_epochs_give_the_one_epoch_interval():
    values = [1.0] * 7 + [0.0] * 5
    for metrics, key, name in ((generate_metrics, "valid_rate", "valid"),
                               (VerifyTask.metrics, "agreement_rate", "verified")):
        one, three = metrics(rows(name, values, 1))[key], metrics(rows(name, values, 3))[key]
        assert (three["value"], three["n"], three["ci_low"], three["ci_high"]) == (
            one["value"], one["n"], one["ci_low"], one["ci_high"]), key
        assert three["clustered_by"] == "sample" and three["observations"] == 36
