"""Reading datasets from JSONL, JSON, CSV/TSV files and (offline) Hugging Face ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.data.files import load_rows, sha256_file
from assay.errors import AssayError, DatasetError


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def one_line(e: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# --------------------------------------------------------------------------- JSONL


def test_jsonl_skips_blank_lines_and_keeps_true_line_numbers(tmp_path):
    p = write(tmp_path / "d.jsonl",
              '{"question": "q1", "answer": "a1"}\n\n   \n{"question": "q2", "answer": 2}\n\n')
    rows = load_rows(str(p))
    assert rows.rows == [{"question": "q1", "answer": "a1"}, {"question": "q2", "answer": 2}]
    assert rows.locations == [f"{p}:1", f"{p}:4"]
    assert rows.info["source"] == "file"
    assert rows.info["format"] == "jsonl"
    assert rows.info["path"] == str(p.resolve())


def test_jsonl_with_utf8_bom_and_crlf(tmp_path):
    p = write(tmp_path / "bom.jsonl",
              '\ufeff{"question": "é?", "answer": "a"}\r\n{"question": "q", "answer": "b"}\r\n'
              .encode())
    rows = load_rows(str(p))
    assert [r["question"] for r in rows.rows] == ["é?", "q"]
    assert list(rows.rows[0]) == ["question", "answer"]  # no "\ufeffquestion" key


def test_jsonl_invalid_json_names_file_and_line(tmp_path):
    p = write(tmp_path / "bad.jsonl",
              '{"question": "q1", "answer": "a"}\n{"question": "q2", "answer": "b"}\n'
              '{"question": oops}\n')
    with pytest.raises(DatasetError) as e:
        load_rows(str(p))
    msg = one_line(e)
    assert f"{p}:3" in msg and "invalid JSON" in msg


def test_jsonl_non_object_line_is_an_error_with_line_number(tmp_path):
    p = write(tmp_path / "list.jsonl", '{"question": "q", "answer": "a"}\n\n[1, 2]\n')
    with pytest.raises(DatasetError) as e:
        load_rows(str(p))
    msg = one_line(e)
    assert f"{p}:3" in msg and "JSON object" in msg and "list" in msg


def test_ndjson_suffix_and_uppercase_suffix(tmp_path):
    a = write(tmp_path / "d.ndjson", '{"q": 1}\n')
    b = write(tmp_path / "D.JSONL", '{"q": 2}\n')
    assert load_rows(str(a)).rows == [{"q": 1}]
    assert load_rows(str(b)).rows == [{"q": 2}]


# --------------------------------------------------------------------------- JSON


def test_json_list(tmp_path):
    p = write(tmp_path / "d.json", json.dumps([{"question": "q1"}, {"question": "q2"}]))
    rows = load_rows(str(p))
    assert rows.rows == [{"question": "q1"}, {"question": "q2"}]
    assert rows.locations == [f"{p}[0]", f"{p}[1]"]
    assert rows.info["format"] == "json"


@pytest.mark.parametrize("key", ["data", "rows", "examples"])
def test_json_object_wrapping_a_list(tmp_path, key):
    p = write(tmp_path / "d.json", json.dumps({"version": 2, key: [{"question": "q"}]}))
    assert load_rows(str(p)).rows == [{"question": "q"}]


def test_json_with_a_non_object_item(tmp_path):
    p = write(tmp_path / "d.json", json.dumps([{"question": "q"}, 3]))
    with pytest.raises(DatasetError) as e:
        load_rows(str(p))
    assert "item 1" in one_line(e) and str(p) in str(e.value)


def test_json_that_is_not_a_list(tmp_path):
    p = write(tmp_path / "d.json", json.dumps({"question": "q"}))
    with pytest.raises(DatasetError, match="list of objects"):
        load_rows(str(p))


def test_invalid_json_names_the_line(tmp_path):
    p = write(tmp_path / "d.json", '[{"question": "q"},\n {oops}]')
    with pytest.raises(DatasetError) as e:
        load_rows(str(p))
    assert f"{p}:2" in one_line(e)


# --------------------------------------------------------------------------- CSV / TSV


def test_csv_with_header_quoted_commas_and_escaped_quotes(tmp_path):
    p = write(tmp_path / "d.csv",
              'question,answer\n"Hello, world?",yes\n"Say ""hi""",hi\nWhat is 2+2,4\n')
    rows = load_rows(str(p))
    assert rows.rows == [
        {"question": "Hello, world?", "answer": "yes"},
        {"question": 'Say "hi"', "answer": "hi"},
        {"question": "What is 2+2", "answer": "4"},
    ]
    assert rows.locations == [f"{p}:2", f"{p}:3", f"{p}:4"]
    assert rows.info["format"] == "csv"


def test_tsv_keeps_commas_inside_fields(tmp_path):
    p = write(tmp_path / "d.tsv", "question\tanswer\nq, with comma\ta, b\nq2\ta2\n")
    rows = load_rows(str(p))
    assert rows.rows == [{"question": "q, with comma", "answer": "a, b"},
                         {"question": "q2", "answer": "a2"}]
    assert rows.info["format"] == "tsv"


def test_csv_with_semicolons_is_detected(tmp_path):
    p = write(tmp_path / "d.csv", "question;answer\nq1;a1\nq2;a2\n")
    assert load_rows(str(p)).rows == [{"question": "q1", "answer": "a1"},
                                      {"question": "q2", "answer": "a2"}]


def test_csv_row_with_more_fields_than_header(tmp_path):
    p = write(tmp_path / "d.csv", "question,answer\nq1,a1\nq2,a2\nq3,a3,extra\n")
    with pytest.raises(DatasetError) as e:
        load_rows(str(p))
    msg = one_line(e)
    assert f"{p}:4" in msg and "more fields than the header" in msg


def test_empty_csv_needs_a_header(tmp_path):
    p = write(tmp_path / "d.csv", "")
    with pytest.raises(DatasetError, match="header"):
        load_rows(str(p))


def test_csv_double_quoted_field_containing_apostrophes(tmp_path):
    p = write(tmp_path / "d.csv",
              "question,answer\n\"What's 'a' or 'b'?\",a\nWho wrote 'Hamlet'?,'Shakespeare'\n")
    rows = load_rows(str(p))
    assert rows.rows == [
        {"question": "What's 'a' or 'b'?", "answer": "a"},
        {"question": "Who wrote 'Hamlet'?", "answer": "'Shakespeare'"},
    ]


def test_csv_multiline_row_is_located_at_its_first_line(tmp_path):
    p = write(tmp_path / "d.csv", 'question,answer\n"multi\nline",a1\nq2,a2\n')
    rows = load_rows(str(p))
    assert rows.rows[0] == {"question": "multi\nline", "answer": "a1"}
    assert rows.locations == [f"{p}:2", f"{p}:4"]


# --------------------------------------------------------------------------- sources


def test_unsupported_extension(tmp_path):
    p = write(tmp_path / "d.txt", "question,answer\n")
    with pytest.raises(DatasetError) as e:
        load_rows(str(p))
    msg = one_line(e)
    assert "'.txt'" in msg and ".jsonl" in msg and ".csv" in msg


@pytest.mark.parametrize("name", ["missing.jsonl", "missing.csv", "sub/dir/missing.json"])
def test_missing_local_file(tmp_path, name):
    source = str(tmp_path / name)
    with pytest.raises(DatasetError) as e:
        load_rows(source)
    assert one_line(e) == f"dataset file not found: {source}"


def test_relative_missing_file_is_not_treated_as_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatasetError, match="dataset file not found: ./nope"):
        load_rows("./nope")


def test_folder_is_refused(tmp_path):
    with pytest.raises(DatasetError, match="is a folder"):
        load_rows(str(tmp_path))


def test_content_hash_is_stable_and_follows_the_content(tmp_path):
    p = write(tmp_path / "d.jsonl", '{"question": "q", "answer": "a"}\n')
    h1 = load_rows(str(p)).info["content_hash"]
    assert h1 == load_rows(str(p)).info["content_hash"] == sha256_file(p)
    assert len(h1) == 64
    copy = write(tmp_path / "copy.jsonl", p.read_bytes())
    assert load_rows(str(copy)).info["content_hash"] == h1  # content, not path
    write(p, '{"question": "q", "answer": "b"}\n')
    assert load_rows(str(p)).info["content_hash"] != h1


def test_hub_id_offline_gives_one_line_dataset_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DatasetError) as e:
        load_rows("someone/nonexistent-dataset")
    msg = one_line(e)
    assert isinstance(e.value, AssayError)
    assert "someone/nonexistent-dataset" in msg
    assert "local" in msg and ("JSONL" in msg or ".jsonl" in msg)
