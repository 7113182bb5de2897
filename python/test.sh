#!/usr/bin/env bash
# The Python package's tests: builds the abi3 wheel the way `pip install ./python` does (pip and
# maturin as the PEP 517 backend, in an isolated build environment; the dev profile, through
# MATURIN_PEP517_ARGS, so that it shares the workspace's target directory, and so wasmtime's
# build, with `cargo test`), installs it into a
# Python 3.11 venv (.venv-py311, the machine's python3) and into the NeMo Lens venv
# (.venv-parity, Python 3.13, made by tests/all/parity/venv.sh), and runs pytest in both: the NeMo
# Lens tests (marker `nemo`) in the second only.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/all/parity/venv.sh
[ -x .venv-py311/bin/python ] || python3 -m venv .venv-py311
for py in .venv-py311/bin/python .venv-parity/bin/python; do
  "$py" -m pip install -q -r python/requirements-test.txt
done
rm -rf target/lens-wheels
MATURIN_PEP517_ARGS="--profile dev" .venv-py311/bin/python -m pip wheel -q --no-deps \
  -w target/lens-wheels ./python
LENS_WHEEL=$(ls target/lens-wheels/*.whl)
export LENS_WHEEL
LENS_TEST_GUESTS=$(cargo run --quiet -p lens-test-guests)
export LENS_TEST_GUESTS
for py in .venv-py311/bin/python .venv-parity/bin/python; do
  "$py" -m pip install -q --force-reinstall --no-deps "$LENS_WHEEL"
done
.venv-py311/bin/python -m pytest python/tests -q -m "not nemo" -p no:cacheprovider
.venv-parity/bin/python -m pytest python/tests -q -p no:cacheprovider
