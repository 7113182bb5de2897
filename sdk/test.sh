#!/usr/bin/env bash
# The guest SDKs' own tests, outside any component: Rust (the views over typed and OTLP protobuf
# batches, the adapter's life cycle), Python (pytest, with the opentelemetry-sdk release the SDK
# bundles, in .venv-sdk), JavaScript (Node's test runner). The guests built on them are tested by
# `cargo test` (tests/python_sdk.rs, tests/language_guests.rs, tests/check.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --quiet --manifest-path sdk/rust/Cargo.toml --all-features
[ -x .venv-sdk/bin/python ] || python3 -m venv .venv-sdk
.venv-sdk/bin/pip install -q --disable-pip-version-check -r sdk/python/requirements.txt -r python/requirements-test.txt
.venv-sdk/bin/python -m pytest sdk/python/tests -q -p no:cacheprovider
node --test sdk/js/test/
