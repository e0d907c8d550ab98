"""A qa sample carries its dataset row when the row holds more than the sample's fields,
or when a template of the user's may read it (the sample alone then renders its prompt)."""

from __future__ import annotations

import json

from assay.tasks.qa import QATask


def test_rows_go_with_samples_only_when_they_add_something(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"id": "a", "question": "Q1", "answer": "x"}) + "\n"
                 + json.dumps({"id": "b", "question": "Q2", "answer": "y", "lang": "fr"}) + "\n")
    a, b = QATask(data=str(p)).samples()
    assert a.row is None  # nothing beyond id, question and answer: the sample is the row
    assert b.row == {"id": "b", "question": "Q2", "answer": "y", "lang": "fr"}
    template = ("{{ row.id }}/{{ row.question }}/{{ row.answer }}"
                "{% if row.get('lang') %} ({{ row.lang }}){% endif %}")
    a, b = QATask(data=str(p), template=template).samples()
    assert a.row == {"id": "a", "question": "Q1", "answer": "x"}  # the template reads it
    # a task built anew (another process) renders the prompts from the samples alone
    fresh = QATask(data=str(p), template=template)
    assert fresh.render(a) == "a/Q1/x" and fresh.render(b) == "b/Q2/y (fr)"
