"""A failed stage never damages the committed reports, and one failed record write never aborts a fan-out.

* An artefact's files are written into a staging folder, checked, then renamed into place all in a row
  (fedlib/reporting/atomic_files.py): under a file-size limit, a read-only committed file, a directory in place of a file,
  a failing rename, or a SIGKILL half-way, the committed set stays byte for byte.
* `run_many` keeps going when one record cannot be written and names every unwritten record in one line.
* Those failures reach a notebook (what `dvc repro` runs) as one line, not a traceback.

The artefact is FAdamGT Figure 3's real `write()` on a tiny real result (6 two-round runs, cached per module).
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fedlib import experiments
from fedlib.papers.fadamgt import fig3
from fedlib.reporting import artefact as A
from fedlib.reporting import atomic_files, grid, notebook, profiles, report

ROOT = Path(__file__).resolve().parents[2]
FILES = ["fig3.csv", "fig3.json", "fig3.md", "fig3.png", "fig3.svg"]    # (+ fig3_seeds.csv where claims have one)
TINY = {"seeds": [0], "alpha_grid": [0.1, 1.0], "datasets": {"cifar100": {"rounds": 2}}}
OTHER = {"seeds": [0], "alpha_grid": [0.1], "datasets": {"cifar100": {"rounds": 2}}}   # a subset: no new runs


def settings_of(overrides: dict) -> dict:
    return profiles.load_settings("fadamgt_fig3", "embedded", overrides, ROOT / "params.yaml", schema=fig3.PARAMS)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """The run cache of the tiny Figure 3 (both result variants read their runs from it)."""
    path = tmp_path_factory.mktemp("fig3cache")
    experiments.run_many(fig3.configs(settings_of(TINY)), path, workers=1, verbose=False)
    return path


def build(overrides: dict, cache: Path) -> tuple[dict, dict]:
    settings = settings_of(overrides)
    cells = fig3.cells(settings)                 # labelled as Notebook.runs labels them
    records = grid.labelled(experiments.run_many(grid.configs_of(cells), cache, workers=1, verbose=False), cells)
    return fig3.build(records, settings), settings


def write(out: Path, overrides: dict, cache: Path) -> list[Path]:
    result, settings = build(overrides, cache)
    return list(atomic_files.write_files(out, "fig3", lambda folder: fig3.write(result, settings, folder)))


def files(folder: Path) -> dict[str, bytes]:
    """The plain files directly in `folder` with their bytes (the committed set)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.is_file() or p.name.startswith("."))


@pytest.fixture
def committed(tmp_path, cache) -> tuple[Path, dict[str, bytes]]:
    """reports/fadamgt/ holding a complete Figure 3 set, and its bytes."""
    out = tmp_path / "reports" / "fadamgt"
    write(out, TINY, cache)
    return out, files(out)


def assert_one_line(message: str, *words: str) -> None:
    assert len(message.strip().splitlines()) == 1 and "Traceback" not in message, message
    for w in words:
        assert w in message, (w, message)


# ================================================================================ the transaction
def test_a_write_publishes_the_whole_set_and_replaces_it_whole(committed, cache):
    out, before = committed
    assert set(FILES) <= set(before) and leftovers(out) == []
    assert json.loads(before["fig3.json"])["numbers"].keys() >= {"alpha0.1/FAdamGT/rounds", "alpha1/FAdamGT/rounds"}
    paths = write(out, OTHER, cache)
    after = files(out)
    assert sorted(p.name for p in paths) == sorted(before) and all(p.parent == out for p in paths)
    assert sorted(after) == sorted(before) and leftovers(out) == []
    for name in ("fig3.csv", "fig3.md", "fig3.json"):         # every file describes the new, one-α grid
        assert after[name] != before[name], name
    assert "alpha1/FAdamGT/rounds" not in json.loads(after["fig3.json"])["numbers"]


def _child(script: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "agg"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env,
                          timeout=300, **kw)


CHILD_PRELUDE = """
    import json, os, resource, signal, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from test_safe_writes import build, OTHER
    from fedlib.papers.fadamgt import fig3
    from fedlib.reporting import atomic_files
    result, settings = build(OTHER, Path({cache!r}))
    out = Path({out!r})
"""


@pytest.mark.slow
def test_file_size_limit_leaves_the_committed_set(committed, cache):
    """The notebook step under `ulimit -f 60` (SIGXFSZ ignored, so the write gets EFBIG): one line naming fig3.png
    and the limit; not one committed byte changes (before staging, fig3.png was left cut at 61,440 bytes)."""
    out, before = committed
    assert len(before["fig3.png"]) > 60 * 1024                  # the figure cannot fit under the limit
    script = CHILD_PRELUDE + """
    from fedlib.reporting import artefact as A, notebook
    nb = notebook.Notebook(fig3, A.of(fig3), {{"out_dir": str(out)}}, settings)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (60 * 1024, resource.RLIM_INFINITY))
    try:
        nb.artefact(result["records"], show=False)
    except atomic_files.ReportWriteFailed as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    """
    proc = _child(script.format(tests=str(Path(__file__).resolve().parent), cache=str(cache), out=str(out)))
    assert proc.returncode == 1, proc.stderr
    assert_one_line(proc.stderr, str(out / "fig3.png"), "File too large", "ulimit -f", "61440 bytes", "unchanged")
    assert files(out) == before and leftovers(out) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_read_only_committed_file_leaves_the_committed_set(committed, cache):
    """A read-only fig3.md (a request not to overwrite it) refuses the whole set: before staging, png/svg/csv were
    rewritten for the new seeds while md/json still described the old ones."""
    out, before = committed
    (out / "fig3.md").chmod(0o444)
    try:
        with pytest.raises(atomic_files.ReportWriteFailed) as err:
            write(out, OTHER, cache)
    finally:
        (out / "fig3.md").chmod(0o644)
    assert_one_line(str(err.value), str(out / "fig3.md"), "read-only")
    assert files(out) == before and leftovers(out) == []


def test_a_directory_in_place_of_a_file_leaves_the_committed_set(committed, cache):
    out, before = committed
    (out / "fig3.csv").unlink()
    (out / "fig3.csv").mkdir()
    before.pop("fig3.csv")
    with pytest.raises(atomic_files.ReportWriteFailed) as err:
        write(out, OTHER, cache)
    assert_one_line(str(err.value), str(out / "fig3.csv"), "is a directory")
    assert files(out) == before and (out / "fig3.csv").is_dir()
    assert leftovers(out) == ["fig3.csv"]


def test_a_failing_rename_puts_the_previous_files_back(committed, cache, monkeypatch):
    out, before = committed
    real, calls = os.replace, []

    def replace(src, dst):
        if Path(dst).parent == out:
            calls.append(Path(dst).name)
            if len(calls) == 4:                                 # the fourth rename into out (fig3.csv) fails
                raise OSError(errno.EIO, "Input/output error")
        return real(src, dst)
    monkeypatch.setattr(atomic_files.os, "replace", replace)
    with pytest.raises(atomic_files.ReportWriteFailed) as err:
        write(out, OTHER, cache)
    monkeypatch.undo()
    assert calls[:4] == ["fig3.png", "fig3.svg", "fig3_curves.csv", "fig3.csv"]   # the figure's were put back
    assert_one_line(str(err.value), "Input/output error", str(out / "fig3.csv"))
    assert files(out) == before and leftovers(out) == []


def test_a_write_that_fails_names_the_file_it_was_writing(committed, cache, monkeypatch):
    """An error raised while writing a file (here the Markdown page: a full disk) names that file."""
    out, before = committed
    real = report.write_text

    def full(path, text):
        if Path(path).name == "fig3.md":
            Path(path).write_bytes(b"# half a page")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, text)
    monkeypatch.setattr(report, "write_text", full)
    with pytest.raises(atomic_files.ReportWriteFailed) as err:
        write(out, OTHER, cache)
    assert_one_line(str(err.value), str(out / "fig3.md"), "No space left on device")
    assert files(out) == before and leftovers(out) == []


@pytest.mark.slow
def test_a_write_killed_between_files_leaves_the_committed_set(committed, cache):
    """SIGKILL after fig3.png, .svg and .csv were written, before fig3.md: the committed set is untouched, and the
    next write removes the dead writer's staging folder."""
    out, before = committed
    script = CHILD_PRELUDE + """
    from fedlib.reporting import report
    real = report.write_text
    def killed(path, text):
        if Path(path).name == "fig3.md":
            os.kill(os.getpid(), signal.SIGKILL)
        return real(path, text)
    report.write_text = killed
    atomic_files.write_files(out, "fig3", lambda folder: fig3.write(result, settings, folder))
    """
    proc = _child(script.format(tests=str(Path(__file__).resolve().parent), cache=str(cache), out=str(out)))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert files(out) == before
    orphan = [p for p in out.iterdir() if p.name.startswith(atomic_files.STAGING)]
    assert len(orphan) == 1 and sorted(p.name for p in orphan[0].iterdir()) == ["fig3.csv", "fig3.png", "fig3.svg",
                                                                                            "fig3_curves.csv"]
    write(out, OTHER, cache)
    assert leftovers(out) == [] and sorted(files(out)) == sorted(before)


@pytest.mark.slow
def test_a_write_killed_between_renames_is_finished_by_the_next_call(committed, cache, tmp_path):
    """SIGKILL after 2 of the 5 renames: the commit folder lets the next call finish the other 3, so the folder holds
    the complete new set (byte-identical to one written without a kill), never a mix."""
    out, before = committed
    reference = tmp_path / "reference"
    write(reference, OTHER, cache)
    script = CHILD_PRELUDE + """
    real, done = os.replace, []
    def replace(src, dst):
        if Path(dst).parent == out and Path(src).parent.name.startswith(atomic_files.COMMIT):
            if len(done) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            done.append(dst)
        return real(src, dst)
    atomic_files.os.replace = replace
    atomic_files.write_files(out, "fig3", lambda folder: fig3.write(result, settings, folder))
    """
    proc = _child(script.format(tests=str(Path(__file__).resolve().parent), cache=str(cache), out=str(out)))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    mixed = files(out)
    assert sum(mixed[n] != before[n] for n in before) == 2            # the kill landed between two renames
    assert sorted(atomic_files._recover(out)) == sorted(n for n in before if mixed[n] == before[n])
    assert files(out) == files(reference) and leftovers(out) == []


@pytest.mark.parametrize("name, data, why", [
    ("a.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "not a complete PNG"),
    ("a.json", b'{"claims": [1, 2', "does not parse as JSON"),
    ("a.json", b'{"x": NaN}', "does not parse as JSON"),
    ("a.csv", b"a,b\n1,2\n3\n", "not a CSV table"),
    ("a.svg", b"<svg><g></svg>", "does not parse as SVG"),
    ("a.md", b"\xff\xfe", "not UTF-8"),
    ("a.md", b"", "empty"),
    ("a.txt", b"text", "not an artefact file name"),     # the next call's roll forward moves artefact files only
    (".a.md", b"text", "not an artefact file name"),
])
def test_an_incomplete_file_is_refused_in_one_line(tmp_path, name, data, why):
    def write(folder):
        (folder / name).write_bytes(data)
        return [folder / name]
    with pytest.raises(atomic_files.ReportWriteFailed) as err:
        atomic_files.write_files(tmp_path / "out", "a", write)
    assert_one_line(str(err.value), str(tmp_path / "out" / name), why)
    assert not (tmp_path / "out").exists()                        # the folder it created is gone again


def test_complete_files_are_published_with_their_bytes(committed, tmp_path):
    out, before = committed
    written = atomic_files.write_files(tmp_path, "copy", lambda f: [shutil.copy(out / n, f / n) for n in before])
    assert {p.name: data for p, data in written.items()} == before == files(tmp_path)


def test_reports_index_is_written_whole_or_refused_in_one_line(committed, capsys):
    """reports/README.md and reports/scorecard.md go through the same staged write: a read-only scorecard refuses
    both, and an artefact json that cannot be read is named in one line; the index pages stay as they were."""
    from fedlib.reporting import index

    out, _ = committed
    root = out.parent
    assert index.main([str(root)]) == 0
    pages = files(root)
    assert sorted(pages) == ["README.md", "scorecard.md", "scorecard_summary.png", "scorecard_summary.svg",
                             "scorecard_summary_curves.csv"] and b"fig3.md" in pages["README.md"]
    (out / "fig3.json").write_text((out / "fig3.json").read_text().replace('"title": "', '"title": "New '))
    (root / "scorecard.md").chmod(0o444)
    capsys.readouterr()
    try:
        assert index.main([str(root)]) == 1
    finally:
        (root / "scorecard.md").chmod(0o644)
    assert_one_line(capsys.readouterr().err, str(root / "scorecard.md"), "read-only", "unchanged")
    assert files(root) == pages and leftovers(root) == ["fadamgt"]
    (out / "broken.json").mkdir()                               # a json path that cannot be read
    assert index.main([str(root)]) == 1
    assert_one_line(capsys.readouterr().err, "cannot read", "broken.json", "Is a directory", "unchanged")
    assert files(root) == pages


# ================================================================================ run_many
RUN = dict(dataset="digits", n_clients=6, clients_per_round=3, rounds=2, local_steps=1, batch_size=16,
           partition="iid")
SEEDS = [{**RUN, "seed": s} for s in range(4)]


def test_one_record_path_that_is_a_directory_leaves_every_other_record_written(tmp_path, capsys):
    blocked = experiments.fingerprint(SEEDS[1])
    experiments.record_path(tmp_path, blocked).mkdir(parents=True)
    with pytest.raises(experiments.RunsFailed) as err:
        experiments.run_many(SEEDS, tmp_path, workers=1)
    message = str(err.value)
    assert_one_line(message, "1 of 4 run record(s) could not be written",
                    f"{experiments.record_path(tmp_path, blocked)}: is a directory")
    assert err.value.unwritten.keys() == {blocked} and not err.value.failures
    for cfg in SEEDS[:1] + SEEDS[2:]:
        assert experiments.load_cached(cfg, tmp_path) is not None, cfg["seed"]
    assert "3 to run on this process" in capsys.readouterr().out     # the doomed run was not even computed


def test_a_full_disk_on_one_record_leaves_every_other_record_written(tmp_path, monkeypatch):
    real, full = experiments.write_record_atomic, experiments.fingerprint(SEEDS[0])

    def write(path, record):
        if record["fingerprint"] == full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, record)
    monkeypatch.setattr(experiments, "write_record_atomic", write)
    with pytest.raises(experiments.RunsFailed) as err:
        experiments.run_many(SEEDS, tmp_path, workers=1, verbose=False)
    assert_one_line(str(err.value), "1 of 4 run record(s) could not be written",
                    f"{experiments.record_path(tmp_path, full)}: No space left on device", "every other record")
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == sorted(experiments.fingerprint(c) for c in SEEDS[1:])


def test_failures_render_as_one_line_in_a_notebook():
    """IPython (and so papermill, and `dvc repro`) shows `_render_traceback_` instead of the frames."""
    for exc in (experiments.RunsFailed({}, 3, {"ab": "runs/x/ab.json: Is a directory"}),
                atomic_files.ReportWriteFailed("cannot write fig3 into reports/fadamgt: fig3.png: File too large")):
        assert exc._render_traceback_() == [f"{type(exc).__name__}: {exc}"]
        assert len(str(exc).splitlines()) == 1


@pytest.mark.slow
def test_a_notebook_stage_with_an_unwritable_record_fails_in_one_line(tmp_path):
    """What `dvc repro fadamgt_fig3` runs (papermill), with one run-record path taken by a directory: the failing cell
    shows one line naming the record, the other records are written, and reports/ is untouched."""
    papermill = pytest.importorskip("papermill")
    settings = settings_of(TINY)
    configs = fig3.configs(settings)
    cache = tmp_path / "runs" / "fadamgt" / "fig3"
    # the notebook pins its runs to the portable CPU path (Notebook.configs), whatever path this process has
    blocked = experiments.record_path(cache, experiments.fingerprint({**configs[0], "cpu_path": "portable"}))
    blocked.mkdir(parents=True)
    reports = tmp_path / "reports" / "fadamgt"
    reports.mkdir(parents=True)
    (reports / "fig3.md").write_text("committed\n")
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "fadamgt_fig3.ipynb"), str(tmp_path / "executed.ipynb"), kernel_name="python3",
            progress_bar=False, cwd=str(tmp_path), start_timeout=120,
            parameters={"overrides": TINY, "params_file": str(ROOT / "params.yaml"), "workers": 1,
                        "out_dir": str(reports), "cache_dir": str(cache)})
    assert err.value.ename == "RunsFailed" and len(err.value.traceback) == 1, err.value.traceback
    assert_one_line(err.value.traceback[0], str(blocked), "is a directory")
    assert len(list(cache.glob("*.json"))) == len(configs)           # the other 5 records + the directory
    assert files(reports) == {"fig3.md": b"committed\n"}


def test_notebook_artefact_goes_through_the_all_or_nothing_write(committed, cache, monkeypatch):
    """Notebook.artefact publishes through atomic_files.write_files: write() sees a staging folder, never out_dir."""
    out, _ = committed
    seen = []
    real = fig3.write
    monkeypatch.setattr(fig3, "write", lambda result, settings, folder: seen.append(Path(folder)) or real(
        result, settings, folder))
    result, settings = build(OTHER, cache)
    nb = notebook.Notebook(fig3, A.of(fig3), {"out_dir": str(out)}, settings)
    before = files(out)
    nb.artefact(result["records"], show=False)
    assert len(seen) == 1 and seen[0].parent == out and seen[0].name.startswith(atomic_files.STAGING)
    assert sorted(files(out)) == sorted(before) and files(out) != before and leftovers(out) == []


# ================================================================================ recovery cannot escape or mix
DEAD = 99_999_999          # above any pid_max: never a live writer


def _planted(out: Path, prefix: str, staged_files: dict[str | bytes, bytes]) -> Path:
    """reports/fadamgt/ holding the old fig3 set, and a dead writer's folder (`prefix`: staging or commit)."""
    out.mkdir(parents=True)
    for ext in ("md", "csv"):
        (out / f"fig3.{ext}").write_text(f"old {ext}\n")
    stage = out / f"{prefix}fig3-{DEAD}"
    stage.mkdir()
    for name, data in staged_files.items():
        with open(os.fsencode(stage) + b"/" + (name if isinstance(name, bytes) else name.encode()), "wb") as f:
            f.write(data)
    return stage


def test_a_dead_writers_commit_is_rolled_forward(tmp_path):
    out = tmp_path / "reports" / "fadamgt"
    stage = _planted(out, atomic_files.COMMIT, {"fig3.csv": b"new csv\n"})       # fig3.md already renamed
    (stage / "previous").mkdir()
    os.link(out / "fig3.md", stage / "previous" / "fig3.md")
    (out / "fig3.md").write_text("new md\n")
    assert atomic_files._recover(out) == ["fig3.csv"]
    assert files(out) == {"fig3.csv": b"new csv\n", "fig3.md": b"new md\n"} and leftovers(out) == []


GOOD = {"fig3.md": b"new md\n", "fig3.csv": b"new csv\n"}


@pytest.mark.parametrize("prefix, extra", [
    (atomic_files.STAGING, {}),                          # killed before its commit: half written, never published
    (atomic_files.COMMIT, {"victim.txt": b"x"}),         # not an artefact file: nothing moves, the good ones neither
    (atomic_files.COMMIT, {".hidden.md": b"x"}),
    (atomic_files.COMMIT, {b"\xff\xfe.md": b"x"}),       # not UTF-8
    (atomic_files.COMMIT, {"fig3 .md": b"x"}),
])
def test_a_stray_half_or_foreign_folder_is_discarded_in_one_line(tmp_path, capsys, prefix, extra):
    """A dead writer's staging folder, or a commit folder holding anything but plain artefact files, publishes
    nothing: the folder is removed with one line on stderr, the old set stays, nothing outside is touched."""
    out = tmp_path / "reports" / "fadamgt"
    stage = _planted(out, prefix, {**GOOD, **extra})
    assert atomic_files._recover(out) == []
    assert files(out) == {"fig3.csv": b"old csv\n", "fig3.md": b"old md\n"} and leftovers(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]
    assert_one_line(capsys.readouterr().err, "discarded", str(stage))


def test_a_linked_folder_a_staged_link_or_a_subfolder_is_discarded(tmp_path, capsys):
    """A commit folder that is a link to another folder, or one holding a link or a folder, moves nothing (the link's
    target stays where it is)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "fig3.md").write_text("elsewhere")
    out = tmp_path / "reports" / "fadamgt"
    stage = _planted(out, atomic_files.COMMIT, {})
    (stage / "fig3.csv").symlink_to(elsewhere / "fig3.md")
    (out / f"{atomic_files.COMMIT}fig3-{DEAD + 1}").symlink_to(elsewhere)
    (out / f"{atomic_files.COMMIT}fig3-{DEAD + 2}").mkdir()
    (out / f"{atomic_files.COMMIT}fig3-{DEAD + 2}" / "fig3.md").mkdir()
    assert atomic_files._recover(out) == []
    assert files(out) == {"fig3.csv": b"old csv\n", "fig3.md": b"old md\n"} and leftovers(out) == []
    assert files(elsewhere) == {"fig3.md": b"elsewhere"}
    assert len(capsys.readouterr().err.strip().splitlines()) == 3


def test_the_commit_holds_every_file_and_links_to_the_ones_it_replaces(tmp_path, monkeypatch):
    """At the first rename into the folder, the commit folder holds every new file, and `previous/` the file it
    replaces (the same inode: a hard link), which a failed rename would put back."""
    (tmp_path / "t.md").write_text("old")
    seen = []
    real = atomic_files.os.replace

    def replace(src, dst):
        if Path(dst).parent == tmp_path and not seen:
            commit = Path(src).parent
            seen.append((commit.name.split("-")[0], sorted(os.listdir(commit)), os.listdir(commit / "previous"),
                         os.stat(commit / "previous" / "t.md").st_ino == os.stat(tmp_path / "t.md").st_ino))
        return real(src, dst)
    monkeypatch.setattr(atomic_files.os, "replace", replace)
    atomic_files.write_files(tmp_path, "t", lambda f: [report.write_text(f / "t.md", "x"),
                                                      report.write_text(f / "t.csv", "a\n")])
    assert seen == [(".commit", ["previous", "t.csv", "t.md"], ["t.md"], True)]
    assert files(tmp_path) == {"t.csv": b"a\n", "t.md": b"x\n"} and leftovers(tmp_path) == []


def test_the_notebook_shows_the_bytes_it_published(committed, cache, monkeypatch):
    """Notebook.artefact shows the figure and the page down to its claims from the bytes the write published (the
    claims follow in the notebook's next cell), the page's own image links left out."""
    import IPython.display

    out, _ = committed
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    result, settings = build(OTHER, cache)
    notebook.Notebook(fig3, A.of(fig3), {"out_dir": str(out)}, settings).artefact(result["records"])
    image, page = shown
    assert image.data == (out / "fig3.png").read_bytes()
    md = (out / "fig3.md").read_text()
    assert page.data == "\n".join(line for line in md[:md.index(report.CLAIMS_HEADING)].splitlines()
                                  if not line.startswith("!["))
    assert "![" in md and "|" in page.data                        # the page had an image link; its table is shown
