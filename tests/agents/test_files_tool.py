"""The ``files`` tool: attachments listed and read (office formats through markitdown), nothing
else reachable, long text paged, every failure an error result."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from assay.agents import files_tool
from assay.agents.files_tool import FilesTool
from assay.agents.tools import MAX_OUTPUT, PAGE, ToolContext, make_tool


def _xlsx(path: Path) -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["item", "qty"])
    ws.append(["apples", 42])
    ws.append(["quinces", 1234])
    wb.save(path)


def _docx(path: Path) -> None:
    import docx

    d = docx.Document()
    d.add_heading("Field report", level=1)
    d.add_paragraph("The zebra count is 17.")
    d.add_paragraph("Second paragraph about okapis.")
    d.save(path)


def _pdf(path: Path) -> None:
    import fpdf

    p = fpdf.FPDF()
    p.add_page()
    p.set_font("Helvetica", size=12)
    p.cell(0, 10, "The pdf secret is 31415.")
    p.output(str(path))


def _pptx(path: Path) -> None:
    import pptx
    from pptx.util import Inches

    pr = pptx.Presentation()
    slide = pr.slides.add_slide(pr.slide_layouts[5])
    slide.shapes.title.text = "Quarterly results"
    slide.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1)).text_frame.text = \
        "Seventy two percent"
    pr.save(path)


OFFICE = {"sheet.xlsx": (_xlsx, ["Sales", "apples", "42", "quinces", "1234"]),
          "report.docx": (_docx, ["Field report", "The zebra count is 17.", "okapis"]),
          "paper.pdf": (_pdf, ["The pdf secret is 31415."]),
          "deck.pptx": (_pptx, ["Quarterly results", "Seventy two percent"])}
TEXT = {"data.csv": "city,population\nOslo,709037\nBergen,291940\n",
        "data.json": json.dumps({"answer": 42, "name": "deep thought"}),
        "notes.txt": "plain notes, ünïcode kept\n"}


@pytest.fixture
def attached(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "attachments"
    folder.mkdir()
    paths = []
    for name, (make, _) in OFFICE.items():
        make(folder / name)
        paths.append(folder / name)
    for name, text in TEXT.items():
        (folder / name).write_text(text, encoding="utf-8")
        paths.append(folder / name)
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    return paths


async def read(tool: FilesTool, name: str, **kw: object):
    return await tool.call({"action": "read", "name": name, **kw})


async def test_list_gives_names_and_sizes(attached: list[Path]) -> None:
    r = await FilesTool(attached).call({"action": "list"})
    assert not r.error
    for p in attached:
        assert f"{p.name} ({p.stat().st_size:,} bytes)" in r.text
    assert "secret" not in r.text
    assert (await FilesTool([]).call({"action": "list"})).text == "no files are attached"


@pytest.mark.parametrize("name", list(OFFICE))
async def test_office_formats_are_read_through_markitdown(attached: list[Path],
                                                          name: str) -> None:
    r = await read(FilesTool(attached), name)
    assert not r.error, r.text
    for want in OFFICE[name][1]:
        assert want in r.text


@pytest.mark.parametrize("name", list(TEXT))
async def test_text_formats_are_read_as_they_are(attached: list[Path], name: str) -> None:
    r = await read(FilesTool(attached), name)
    assert (r.error, r.text) == (False, TEXT[name])


async def test_the_tool_is_built_from_the_registry(attached: list[Path]) -> None:
    tool = make_tool("files", ToolContext(files=attached))
    assert tool.spec.name == "files" and "\n" not in tool.spec.description
    assert (await tool.call({"action": "read", "name": "data.csv"})).text == TEXT["data.csv"]
    assert await tool.aclose() is None


async def test_an_attachment_may_be_named_by_its_full_path(attached: list[Path]) -> None:
    r = await read(FilesTool(attached), str(attached[-1]))
    assert (r.error, r.text) == (False, TEXT["notes.txt"])


@pytest.mark.parametrize("name", ["nope.txt", "../secret.txt", "attachments/../secret.txt",
                                  "/etc/passwd", "..", "attachments/data.csv", "secret.txt"])
async def test_only_attachments_are_reachable(attached: list[Path], name: str) -> None:
    r = await read(FilesTool(attached), name)
    assert r.error and "no attached file is named" in r.text and "data.csv" in r.text
    assert "TOP SECRET" not in r.text and "root:" not in r.text


async def test_a_link_beside_the_attachments_is_not_followed(attached: list[Path],
                                                             tmp_path: Path) -> None:
    link = attached[0].parent / "link.txt"
    link.symlink_to(tmp_path / "secret.txt")
    for name in ("link.txt", str(link)):
        r = await read(FilesTool(attached), name)
        assert r.error and "TOP SECRET" not in r.text


async def test_long_text_is_bounded_and_paged_with_offset(tmp_path: Path) -> None:
    text = "".join(f"line {i:05d}\n" for i in range(3000))  # 33,000 characters
    (tmp_path / "long.txt").write_text(text)
    tool = FilesTool([tmp_path / "long.txt"])
    pages, offset = [], 0
    for _ in range(10):  # 5 pages
        r = await read(tool, "long.txt", offset=offset)
        assert not r.error and len(r.text) <= MAX_OUTPUT
        body, _, note = r.text.rpartition("\n[characters ")
        pages.append(body)
        if "read on with offset=" not in note:
            assert note.endswith("the end]")
            break
        offset = int(note.split("offset=")[1].rstrip("]"))
        assert offset == len("".join(pages))
    whole = "".join(pages) == text  # (a bool: pytest's diff of 33,000 characters is slow)
    assert whole and len(pages) == -(-len(text) // PAGE)
    r = await read(tool, "long.txt", offset=len(text))
    assert r.error and "past the end" in r.text


async def test_converted_text_is_kept_for_the_tool_instance(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("first")
    tool = FilesTool([path])
    assert (await read(tool, "a.txt")).text == "first"
    path.write_text("second")
    assert (await read(tool, "a.txt")).text == "first"
    assert (await read(FilesTool([path]), "a.txt")).text == "second"


async def test_conversion_runs_off_the_event_loop(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()

    def convert(path: Path) -> str:
        started.set()
        return "converted" if release.wait(10) else "the loop was blocked"

    monkeypatch.setattr(files_tool, "_convert", convert)
    (tmp_path / "a.pdf").write_bytes(b"%PDF")
    call = asyncio.create_task(read(FilesTool([tmp_path / "a.pdf"]), "a.pdf"))
    for _ in range(1000):
        if started.is_set():
            break
        await asyncio.sleep(0.01)
    release.set()  # only reaches the converter while it waits, if the loop is free
    assert (await call).text == "converted"


async def test_unreadable_files_are_error_results(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "broken.xlsx").write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    (tmp_path / "folder.pdf").mkdir()
    tool = FilesTool([tmp_path / n for n in ("blob.bin", "broken.xlsx", "gone.docx",
                                              "folder.pdf")])
    for name, why in [("blob.bin", "not supported"), ("broken.xlsx", "zip"),
                      ("gone.docx", "missing"), ("folder.pdf", "not a regular file")]:
        r = await read(tool, name)
        assert r.error and r.text.startswith(f"cannot read {name}: ") and why in r.text, r.text
        assert "\n" not in r.text


@pytest.mark.parametrize("arguments, word", [
    ({}, "action"), ({"action": "delete"}, "action"), ({"action": "read"}, "name"),
    ({"action": "read", "name": 3}, "name"), ({"action": "read", "name": " "}, "name"),
    ({"action": "read", "name": "data.csv", "offset": "10"}, "offset"),
    ({"action": "read", "name": "data.csv", "offset": -1}, "offset"),
    ({"action": "read", "name": "data.csv", "offset": True}, "offset")])
async def test_bad_arguments_are_named(attached: list[Path], arguments: dict,
                                       word: str) -> None:
    r = await FilesTool(attached).call(arguments)
    assert r.error and r.text.startswith(word)
