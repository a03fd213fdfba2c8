#!/usr/bin/env bash
# Idempotent set-up used by both README commands: a .venv holding PyTorch and fedlib with its pipeline and test
# extras, plus the Jupyter kernel the notebooks name. Re-running it is quick: it reinstalls only when
# pyproject.toml changed.
#
#   PYTHON=python3.11 bash scripts/setup.sh     # choose the interpreter (>= 3.11)
#   FEDLIB_TORCH="torch==2.13.0"                 # what to install when the venv has no torch yet. The default pin is
#                                                # the CPU build this project is tested with on CPU machines; GPU
#                                                # users: install your CUDA build of torch into .venv first (any
#                                                # torch>=2.4 is accepted and left alone).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
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
  "$VPY" -m pip install --quiet "${FEDLIB_TORCH:-torch==2.13.0}"
fi
echo "setup: installing fedlib (editable) with the pipeline and dev extras"
"$VPY" -m pip install --quiet -e ".[pipeline,dev]"
"$VPY" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (fedlib)" >/dev/null
echo "$want" > "$stamp"
echo "setup: done ($("$VPY" -c 'import torch; print("torch", torch.__version__)'))"
