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
