#!/usr/bin/env bash
# The oracle of the differential suite (tests/all/parity): NeMo Lens 0.1.0 in a Python 3.13 venv at
# .venv-parity. Idempotent: does nothing when the venv already holds that version.
set -euo pipefail
cd "$(dirname "$0")/../../.."
VERSION=0.1.0
VENV=.venv-parity
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('nemo-lens') != '$VERSION')" 2>/dev/null; then
  exit 0
fi
PY=""
if command -v pyenv >/dev/null 2>&1; then
  v=$(pyenv versions --bare | grep -E '^3\.13(\.[0-9]+)?$' | sort -V | tail -1 || true)
  if [ -n "$v" ]; then PY="$(pyenv root)/versions/$v/bin/python3"; fi
fi
if [ -z "$PY" ] && command -v python3.13 >/dev/null 2>&1; then PY=$(command -v python3.13); fi
if [ -z "$PY" ]; then
  echo "tests/all/parity/venv.sh: no Python 3.13 found (pyenv or python3.13): NeMo Lens needs it" >&2
  exit 1
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "nemo-lens[sdk]==$VERSION"
