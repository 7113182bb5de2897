#!/usr/bin/env bash
# The edit–check loop of an exporter author, per language, with a release `lens`:
#   first:  `lens new` → `lens build` → `lens check` (an empty compilation cache: a cold compile)
#   edit:   change one line → `lens build` → `lens check --quick`, three times
# With LOOP_BASELINE=1 the compilation cache's compiled functions are removed before each
# edit's check: every edit then compiles from scratch, as before that cache existed.
# Toolchains are installed beforehand (their one-time install is timed by `lens build` itself
# and reported apart). Each language gets a fresh Lens home and compilation cache.
#   benches/edit_check_loop.sh [lens binary] [python js rust]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
lens="$(realpath "${1:-$here/target/release/lens}")"
shift || true
langs=("$@")
[ ${#langs[@]} -eq 0 ] && langs=(python js rust)
export LENS_TOOLS_DIR="${LENS_TOOLS_DIR:-$here/guest-examples/.tools}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/guest-examples/.tools/project-target}"

now() { date +%s.%N; }
since() { printf '%.1f' "$(echo "$(now) - $1" | bc)"; }

for lang in "${langs[@]}"; do
  work="$(mktemp -d)"
  export LENS_HOME="$work/home" LENS_WASM_CACHE_DIR="$work/cache"
  cd "$work"
  t0=$(now)
  "$lens" new "$lang" loop --signals spans >/dev/null
  cd loop
  "$lens" build >/dev/null 2>&1
  built=$(since "$t0")
  "$lens" check build/loop.wasm --quick --output-lines 0 | grep -q '^PASS$'
  echo "$lang first: built in ${built} s, check passed at $(since "$t0") s"
  case "$lang" in
    python) file=app.py; from='"span")'; to='"span-%d")' ;;
    js) file=exporter.js; from='?? "span"'; to='?? "span-%d"' ;;
    rust) file=src/lib.rs; from='unwrap_or("span")'; to='unwrap_or("span-%d")' ;;
  esac
  for i in 1 2 3; do
    new=$(printf "$to" "$i")
    python3 - "$file" "$from" "$new" <<'EOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert old in text, (old, path)
open(path, "w").write(text.replace(old, new, 1))
EOF
    from="$new"
    [ "${LOOP_BASELINE:-}" = 1 ] && rm -rf "$LENS_WASM_CACHE_DIR/functions"
    t1=$(now)
    "$lens" build >/dev/null 2>&1
    b=$(since "$t1")
    "$lens" check build/loop.wasm --quick --output-lines 0 | grep -q '^PASS$'
    echo "$lang edit $i: build ${b} s, check passed at $(since "$t1") s"
  done
  cd /; rm -rf "$work"
done
