#!/usr/bin/env bash
# Mutation testing: mutate one fedlib module and run only the tests that cover it (mutmut 3, a dev dependency).
#   scripts/mutants.sh fedlib/algorithms/fedcm.py [more modules ...]
#   scripts/mutants.sh "fedlib/engine/simulation.py::batch,batch_positions"  # only these functions of a module
#   scripts/mutants.sh engine-batching                                # the engine's sampling and batching code
#   scripts/mutants.sh --render-only                                  # rebuild reports/testing/mutation.md from the results
# Results go to reports/testing/mutation.json and reports/testing/mutation.md. Slow: not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
exec nice -n 10 python scripts/mutants.py "$@"
