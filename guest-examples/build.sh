#!/usr/bin/env bash
# Builds every example exporter into guest-examples/dist/, installing the pinned language tools
# on first use (cached in guest-examples/.tools/, laid out as `lens build`'s tools directory:
# the tests point LENS_TOOLS_DIR there, so each tool is installed once). Run from anywhere:
#   guest-examples/build.sh            # all guests
#   guest-examples/build.sh rust c     # some of: rust c python js
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wit="$here/../wit"
dist="$here/dist"
tools="$here/.tools"
mkdir -p "$dist" "$tools"

# The pins of `lens build` (src/project/tools.rs; a test keeps them equal).
COMPONENTIZE_PY_VERSION=0.25.1
COMPONENTIZE_JS_VERSION=0.23.0
DEBIAN_C_PACKAGES="clang lld wasi-libc libclang-rt-14-dev-wasm32"

step() { printf '== %s\n' "$*"; }
# Whether a tool directory holds a finished install (`lens build` writes the same marker last).
installed() { [ -f "$1/.lens-installed" ]; }
mark_installed() { echo "$2" > "$1/.lens-installed"; }

build_rust() {
  step "rust: rust-jsonl, rust-vendor-http, rust-redact, rust-filter"
  rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
  cargo build --quiet --release --target wasm32-wasip2 \
    --manifest-path "$here/Cargo.toml" --target-dir "$tools/rust-target"
  cp "$tools/rust-target/wasm32-wasip2/release/lens_jsonl_exporter.wasm" "$dist/rust-jsonl.wasm"
  cp "$tools/rust-target/wasm32-wasip2/release/lens_vendor_http_exporter.wasm" "$dist/rust-vendor-http.wasm"
  cp "$tools/rust-target/wasm32-wasip2/release/lens_redact_processor.wasm" "$dist/rust-redact.wasm"
  cp "$tools/rust-target/wasm32-wasip2/release/lens_filter_processor.wasm" "$dist/rust-filter.wasm"
}

build_c() {
  step "c: c-jsonl (Debian clang + wasi-libc, wit-bindgen C bindings, preview1 reactor adapter)"
  missing=""
  for p in $DEBIAN_C_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    else
      echo "missing Debian packages:$missing (apt-get install them)" >&2; exit 1
    fi
  fi
  cargo build --quiet --release --manifest-path "$here/c-jsonl/tool/Cargo.toml" --target-dir "$tools/c-tool-target"
  local tool="$tools/c-tool-target/release/lens-c-guest-tool" gen="$tools/c-bindings"
  "$tool" bindgen "$wit" exporter "$gen"
  clang --target=wasm32-wasi --sysroot=/usr -O2 -mexec-model=reactor -I"$gen" \
    -o "$tools/c-jsonl.core.wasm" "$here/c-jsonl/exporter.c" "$gen/exporter.c" "$gen/exporter_component_type.o"
  "$tool" component "$tools/c-jsonl.core.wasm" "$dist/c-jsonl.wasm"
}

build_python() {
  step "python: python-jsonl, python-seed, python-redact (componentize-py $COMPONENTIZE_PY_VERSION, the Python SDK)"
  local venv="$tools/componentize-py-$COMPONENTIZE_PY_VERSION" sdk="$here/../sdk/python"
  if ! installed "$venv"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "componentize-py==$COMPONENTIZE_PY_VERSION"
    mark_installed "$venv" "componentize-py $COMPONENTIZE_PY_VERSION"
  fi
  # The SDK's pure-Python dependencies (the real opentelemetry-sdk), bundled into each component,
  # named after the digest of the requirements, as `lens build` names them.
  local deps="$tools/python-sdk-deps-$(sha256sum "$sdk/requirements.txt" | cut -c1-12)"
  if ! installed "$deps"; then
    rm -rf "$deps"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --target "$deps" -r "$sdk/requirements.txt"
    mark_installed "$deps" "the Python SDK's dependencies"
  fi
  "$venv/bin/componentize-py" -d "$wit" -w all-signals componentize -p "$sdk" -p "$deps" \
    -p "$here/python-jsonl" app -o "$dist/python-jsonl.wasm" >/dev/null
  "$venv/bin/componentize-py" -d "$wit" -w exporter componentize -p "$sdk" -p "$deps" \
    -p "$here/python-seed" app -o "$dist/python-seed.wasm" >/dev/null
  "$venv/bin/componentize-py" -d "$wit" -w all-processors componentize -p "$sdk" -p "$deps" \
    -p "$here/python-redact" app -o "$dist/python-redact.wasm" >/dev/null
  # Not an example: the SDK's test guest (tests/all/guests/python_sdk.rs).
  "$venv/bin/componentize-py" -d "$wit" -w exporter componentize -p "$sdk" -p "$deps" \
    -p "$sdk/tests/guest" app -o "$dist/python-sdk-fields.wasm" >/dev/null
}

build_js() {
  step "js: js-jsonl, js-filter (componentize-js $COMPONENTIZE_JS_VERSION)"
  local js="$tools/componentize-js-$COMPONENTIZE_JS_VERSION"
  if ! installed "$js"; then
    rm -rf "$js" && mkdir -p "$js"
    echo '{"name":"lens-js-tools","private":true}' > "$js/package.json"
    (cd "$js" && npm install --silent --no-audit --no-fund \
      "@bytecodealliance/componentize-js@$COMPONENTIZE_JS_VERSION")
    mark_installed "$js" "componentize-js $COMPONENTIZE_JS_VERSION"
  fi
  # No HTTP needed: -d http -d fetch-event keeps wasi:http out of its imports.
  "$js/node_modules/.bin/componentize-js" "$here/js-jsonl/exporter.js" --wit "$wit" -n all-signals \
    -o "$dist/js-jsonl.wasm" -d http -d fetch-event >/dev/null
  "$js/node_modules/.bin/componentize-js" "$here/js-filter/processor.js" --wit "$wit" \
    -n all-processors -o "$dist/js-filter.wasm" -d http -d fetch-event >/dev/null
  # componentize-qjs (same package) is not used: its --sync runtime has no console or stdio,
  # and its default runtime needs the component-model async ABI. See docs/writing-an-exporter.md.
}

langs=("$@")
[ ${#langs[@]} -eq 0 ] && langs=(rust c python js)
for lang in "${langs[@]}"; do
  case "$lang" in
    rust) build_rust ;;
    c) build_c ;;
    python) build_python ;;
    js) build_js ;;
    *) echo "unknown language $lang (rust c python js)" >&2; exit 2 ;;
  esac
done
ls -la "$dist"
