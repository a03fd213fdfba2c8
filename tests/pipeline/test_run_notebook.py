"""The DVC stages' papermill entry point: papermill's CLI, same behaviour, without the unused rfc3987_syntax import."""
import subprocess
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("papermill")


def _notebook(path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("x = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("import sys\nprint(x * 7, 'rfc3987_syntax' in sys.modules)")]
    nbformat.write(nb, path)


@pytest.mark.slow
def test_run_notebook_executes_like_papermill_and_skips_the_grammar_import(tmp_path):
    src, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    _notebook(src)
    probe = (f"import sys, runpy; sys.argv = ['papermill', {str(src)!r}, {str(out)!r}, '-k', 'python3', '-p', 'x', '6', "
             "'--no-progress-bar']; "
             "from fedlib.reporting.run_notebook import main\n"
             "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
             "print('GRAMMAR', sys.modules.get('rfc3987_syntax', 'absent'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "GRAMMAR None" in done.stdout                   # marked absent in the papermill process
    cells = nbformat.read(out, as_version=4).cells
    assert any("x = 6" in c.source for c in cells)                        # the injected parameter cell
    printed = "".join(o.get("text", "") for o in cells[-1].outputs)
    assert printed.strip().split()[0] == "42"


@pytest.mark.slow
def test_run_notebook_help_is_papermills():
    done = subprocess.run([sys.executable, "-m", "fedlib.reporting.run_notebook", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "Usage: papermill" in done.stdout and "--parameters" in done.stdout


def _run_main(src, out):
    probe = (f"import sys; sys.argv = ['papermill', {str(src)!r}, {str(out)!r}, '-k', 'python3', '--no-progress-bar']; "
             "from fedlib.reporting.run_notebook import main\n"
             "try:\n    main()\nexcept SystemExit as e:\n    sys.exit(e.code)\n")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_run_notebook_stops_the_kernel_at_once_and_still_fails_on_a_failing_cell(tmp_path):
    # an atexit hook runs only when the kernel is asked to shut down gracefully; killed at once, it never runs
    marker = tmp_path / "atexit-ran"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(f"import atexit, pathlib\natexit.register(pathlib.Path({str(marker)!r}).touch)"
                                          "\nprint('ok')")]
    src, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, src)
    done = _run_main(src, out)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok" in "".join(o.get("text", "") for o in nbformat.read(out, as_version=4).cells[0].outputs)
    assert not marker.exists()

    nb.cells = [nbformat.v4.new_code_cell("raise ValueError('planted failure')")]
    nbformat.write(nb, src)
    failed = _run_main(src, out)
    assert failed.returncode == 1
    assert "planted failure" in failed.stderr + failed.stdout
    assert nbformat.read(out, as_version=4).cells[-1].outputs[0]["ename"] == "ValueError"
