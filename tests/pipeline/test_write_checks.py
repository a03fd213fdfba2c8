"""The all-or-nothing report writer's checks that planted bugs slipped past (issue #51): a live writer's folders are
left alone by another writer's recovery, a PNG cut inside its IEND chunk and a CSV of blank lines are refused."""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image

from fedlib.reporting import atomic_files


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (3, 2), (10, 20, 30)).save(buf, "PNG")
    return buf.getvalue()


def _write(out: Path, name: str, data: bytes) -> dict:
    def write(folder):
        (folder / name).write_bytes(data)
        return [folder / name]
    return atomic_files.write_files(out, name.split(".")[0], write)


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 12])
def test_a_png_cut_inside_its_last_chunk_is_refused(tmp_path, cut):
    data = _png()
    with pytest.raises(atomic_files.ReportWriteFailed, match="a.png: not a complete PNG"):
        _write(tmp_path / "out", "a.png", data[:-cut])
    assert not (tmp_path / "out").exists()
    assert _write(tmp_path / "out", "a.png", data) == {tmp_path / "out" / "a.png": data}      # whole: published


@pytest.mark.parametrize("data", [b"\n", b"\n\n\n", b"\r\n\r\n", b" \n \n", b",\n,\n"])
def test_a_csv_of_blank_lines_is_refused(tmp_path, data):
    with pytest.raises(atomic_files.ReportWriteFailed, match="a.csv: not a CSV table"):
        _write(tmp_path / "out", "a.csv", data)
    assert not (tmp_path / "out").exists()
    assert _write(tmp_path / "out", "a.csv", b"x\n1\n")                  # a one-column table is one


@pytest.fixture
def live_pid():
    """A live process other than this one (the one that started the tests)."""
    return os.getppid()


@pytest.mark.parametrize("prefix", [atomic_files.STAGING, atomic_files.COMMIT])
def test_recovery_leaves_a_live_writers_folder_alone(tmp_path, capsys, live_pid, prefix):
    """Another process writing the same reports folder right now: its staging (or commit) folder is neither
    removed nor rolled forward by this writer's recovery."""
    out = tmp_path / "reports"
    folder = out / f"{prefix}fig3-{live_pid}"
    folder.mkdir(parents=True)
    (folder / "fig3.md").write_text("being written\n")
    assert atomic_files._recover(out) == []
    _write(out, "table1.md", b"# table 1\n")
    assert (folder / "fig3.md").read_text() == "being written\n"
    assert sorted(p.name for p in out.iterdir()) == sorted([folder.name, "table1.md"])
    assert capsys.readouterr().err == ""
