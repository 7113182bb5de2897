#!/usr/bin/env bash
# The guest SDKs' own tests, outside any component: Rust (the views over typed and OTLP protobuf
# batches, the adapter's life cycle), Python (pytest, with the opentelemetry-sdk release the SDK
# bundles, in .venv-py311), JavaScript (Node's test runner). The guests built on them are tested by
# `cargo test` (tests/all/guests/python_sdk.rs, tests/all/guests/languages.rs, tests/all/guests/check.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --quiet --manifest-path sdk/rust/Cargo.toml --all-features
# The Python 3.11 venv python/test.sh uses: the same pins (opentelemetry-sdk, pytest).
[ -x .venv-py311/bin/python ] || python3 -m venv .venv-py311
.venv-py311/bin/pip install -q --disable-pip-version-check -r sdk/python/requirements.txt -r python/requirements-test.txt
.venv-py311/bin/python -m pytest sdk/python/tests -q -p no:cacheprovider
node --test sdk/js/test/
# The SDKs as packages: the Python one installs by path with pip (and imports from the install,
# not this folder); the JavaScript one packs as an npm package; their API docs in docs/ are
# current (rendered from the sources by sdk/api_docs.py).
# (From a copy: setuptools writes build/ and *.egg-info next to the sources it builds.)
sdk_copy="$(mktemp -d)"
cp -r sdk/python/pyproject.toml sdk/python/lens_exporter_sdk "$sdk_copy"
.venv-py311/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps "$sdk_copy"
rm -rf "$sdk_copy"
(cd /tmp && "$OLDPWD/.venv-py311/bin/python" -c "import lens_exporter_sdk as s; assert 'site-packages' in s.__file__, s.__file__")
(cd sdk/js && npm pack --dry-run --silent >/dev/null)
python3 sdk/api_docs.py --check
(cd sdk/rust && RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps --all-features)
