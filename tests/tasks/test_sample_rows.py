"""A qa sample carries its dataset row when the row holds more than the sample's fields."""

from __future__ import annotations

import json

from assay.tasks.qa import QATask


def test_rows_go_with_samples_only_when_they_add_something(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"id": "a", "question": "Q1", "answer": "x"}) + "\n"
                 + json.dumps({"id": "b", "question": "Q2", "answer": "y", "lang": "fr"}) + "\n")
    task = QATask(data=str(p), template="{{ row.id }}/{{ row.question }}/{{ row.answer }}"
                                             "{% if row.get('lang') %} ({{ row.lang }}){% endif %}")
    a, b = task.samples()
    assert a.row is None  # nothing beyond id, question and answer: the sample is the row
    assert b.row == {"id": "b", "question": "Q2", "answer": "y", "lang": "fr"}
    # a template sees the whole row either way
    assert task.render(a) == "a/Q1/x" and task.render(b) == "b/Q2/y (fr)"
