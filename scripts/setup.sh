#!/usr/bin/env bash
# Idempotent set-up used by both README commands: a .venv holding PyTorch and fedlib with its pipeline and test
# extras, plus the Jupyter kernel the notebooks name. Re-running it is quick: it reinstalls only when
# pyproject.toml changed.
#
#   PYTHON=python3.11 bash scripts/setup.sh     # choose the interpreter (>= 3.11, checked first)
#   FEDLIB_TORCH="torch==2.13.0"                 # the pip arguments used when the venv has no torch yet. Which build
#                                                # the pin gives depends on the package index: the CPU build only
#                                                # where a CPU wheel is served (this project's build machine has a
#                                                # local one); plain PyPI gives the CUDA build on Linux. Small CPU build
#                                                # on Linux: FEDLIB_TORCH="torch==2.13.0 --index-url
#                                                # https://download.pytorch.org/whl/cpu". GPU users: install your CUDA
#                                                # build into .venv first (any torch>=2.4 is accepted and left alone).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "setup: $PYTHON not found; install Python >= 3.11 or set PYTHON=/path/to/python3.11" >&2
  exit 2
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "setup: fedlib needs Python >= 3.11, but $PYTHON is $("$PYTHON" -c 'import platform; print(platform.python_version())'); set PYTHON=/path/to/python3.11 (or newer)" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
VPY=.venv/bin/python

stamp=.venv/.fedlib-setup-stamp
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$VPY" -c "import fedlib, torch, dvc, papermill" 2>/dev/null; then
  echo "setup: .venv is up to date"
  exit 0
fi

"$VPY" -m pip install --quiet --upgrade "pip>=24"     # the pip bundled with older venvs mis-resolves some sets
if ! "$VPY" -c "import torch" 2>/dev/null; then
  echo "setup: installing ${FEDLIB_TORCH:-torch==2.13.0}"
  # shellcheck disable=SC2086  # FEDLIB_TORCH may carry pip options (e.g. --index-url), so it is word-split
  "$VPY" -m pip install --quiet ${FEDLIB_TORCH:-torch==2.13.0}
fi
echo "setup: installing fedlib (editable) with the pipeline and dev extras"
"$VPY" -m pip install --quiet -e ".[pipeline,dev]"
"$VPY" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (fedlib)" >/dev/null
echo "$want" > "$stamp"
echo "setup: done ($("$VPY" -c 'import torch; print("torch", torch.__version__)'))"
