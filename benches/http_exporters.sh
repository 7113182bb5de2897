#!/usr/bin/env bash
# The HTTP template's exporter (`lens new LANG DIR --template http`) in Python, JavaScript and
# Rust against the same local OTLP/HTTP server, per span: `lens check`'s cost line (10k spans in
# batches of 512, each batch one POST of its OTLP protobuf bytes, the host adding the key as a
# credential), ROUNDS rounds with the languages interleaved, so that the machine's noise falls
# on all three alike. Each row: the median and the spread (min–max) of the rounds, and the
# median's ratio to Rust's.
#   benches/http_exporters.sh [lens binary] [rounds]
# The server is rotel (PyPI `rotel`, a native OTLP collector, exporting to its blackhole): a
# server fast enough that the guest's cost is what differs. SERVER=stdlib uses the template's
# own test_server.py (Python's standard library) instead.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
lens="$(realpath "${1:-$here/target/release/lens}")"
rounds="${2:-5}"
export LENS_TOOLS_DIR="${LENS_TOOLS_DIR:-$here/guest-examples/.tools}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/guest-examples/.tools/project-target}"
export LENS_HOME="${LENS_HOME:-$here/target/lens-test-home}"
work="$(mktemp -d)"
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
port=14318
export VENDOR_API_KEY="bench-key"
if [ "${SERVER:-rotel}" = stdlib ]; then
  sed "s/4318/$port/" "$here/src/project/templates/test_server.py" >"$work/server.py"
  python3 "$work/server.py" >/dev/null &
else
  agent="$(python3 -c "import rotel, os; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))")"
  "$agent" start --otlp-grpc-endpoint 127.0.0.1:14317 --otlp-http-endpoint "127.0.0.1:$port" \
    --exporter blackhole >/dev/null 2>&1 &
fi
server=$!
sleep 1
langs=(rust python js)
for lang in "${langs[@]}"; do
  (cd "$work" && "$lens" new "$lang" "$lang" --template http >/dev/null && cd "$lang" && "$lens" build >/dev/null 2>&1)
done
declare -A costs
for _ in $(seq "$rounds"); do
  for lang in "${langs[@]}"; do
    cost=$("$lens" check "$work/$lang/build/$lang.wasm" --allow-host "127.0.0.1:$port" \
      --credential "x-api-key@http://127.0.0.1:$port=env:VENDOR_API_KEY" \
      --setting "endpoint=http://127.0.0.1:$port" | sed -n 's/.*cost *\([0-9.]*\) µs per span.*/\1/p')
    costs[$lang]+="$cost "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), a[1], a[NR]}'; }
read -r rust_median _ _ <<<"$(echo "${costs[rust]}" | median)"
echo "| exporter (template \`http\`, OTLP protobuf, ${SERVER:-rotel} server) | µs per span, median (min–max of $rounds) | ratio |"
echo "|---|---:|---:|"
for lang in "${langs[@]}"; do
  read -r m lo hi <<<"$(echo "${costs[$lang]}" | median)"
  printf '| %s | %.2f (%.2f–%.2f) | %.2f × Rust |\n' "$lang" "$m" "$lo" "$hi" "$(echo "$m / $rust_median" | bc -l)"
done
