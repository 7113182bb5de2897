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
