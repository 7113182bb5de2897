#!/usr/bin/env bash
# The whole test suite, as the README's second command runs it on a fresh machine: installs the
# test tools (PyPI: the rotel collector, ruff, maturin, pytest; Debian: docker-registry,
# apache2-utils and openssl for the registry and signature tests, chromium for the report's
# browser tests), builds the example exporters of
# every language with their pinned tools (guest-examples/build.sh), makes the NeMo Lens oracle's
# venv (tests/all/parity/venv.sh), then runs the Rust tests (one binary, tests/all, and the
# library's unit and doc tests), the Python package's tests on 3.11 and 3.13 (python/test.sh)
# and the guest SDKs' own tests (sdk/test.sh). Each step is idempotent: a second run reuses
# what the first installed. CONTRIBUTING.md says what each step installs and where.
set -euo pipefail
cd "$(dirname "$0")/.."
last=$SECONDS
step() {
  printf '== %s (previous step %ds)\n' "$*" $((SECONDS - last))
  last=$SECONDS
}
step "test tools (requirements-test.txt)"
python3 -m pip install -q --disable-pip-version-check -r requirements-test.txt
step "a real OCI registry (Debian's docker-registry, htpasswd from apache2-utils, openssl) and a real browser (Debian's chromium, headless, for lens report)"
if ! command -v docker-registry >/dev/null || ! command -v htpasswd >/dev/null ||
  ! command -v openssl >/dev/null || ! [ -x /usr/bin/chromium ]; then
  sudo_=""
  [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -q docker-registry apache2-utils openssl chromium >/dev/null
fi
step "example exporters (guest-examples/build.sh)"
guest-examples/build.sh
step "the NeMo Lens oracle (tests/all/parity/venv.sh)"
tests/all/parity/venv.sh
# One compilation cache for everything the tests start (the tests' own installs, `lens`
# commands, exporters built from the process environment, the Python package): each guest
# compiles once per clean checkout, not once per kind of caller.
export LENS_WASM_CACHE_DIR="${LENS_WASM_CACHE_DIR:-$PWD/target/lens-test-wasm-cache}"
step "Rust: cargo test"
cargo test
step "Python package (python/test.sh)"
python/test.sh
step "guest SDKs (sdk/test.sh)"
sdk/test.sh
step "done"
