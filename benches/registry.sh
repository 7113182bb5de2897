#!/usr/bin/env bash
# Components from a registry against the same file from disk (docs/benchmarks.md, "OCI
# registry"): `benches/registry.sh LENS ROUNDS`. A local Debian docker-registry on loopback; the
# Python JSON-lines guest (guest-examples/dist/python-jsonl.wasm, ~19 MB). Per round, each with
# a fresh store and compilation cache unless said:
#   disk cold      lens compile FILE            (read, hash, compile)
#   disk cached    the same again               (the index and the cache)
#   oci cold       lens pull REF                (manifest, layer streamed and verified, compile)
#   oci cached     the same again               (stored digest: no network, the cache)
#   oci pull only  lens pull REF, the compilation cache warm, the store empty
#   4 cold ranks   four `lens pull REF` at once: wall time, CPU seconds in all, layer downloads
#   signed         the same component pushed with `--sign-key` (an openssl P-256 key), pulled
#                  with `--verify-key`: the pull alone (signatures read and verified first), then
#                  cached (the stored signatures verified offline) against `oci cached`
set -euo pipefail
LENS=${1:-target/debug/lens}
ROUNDS=${2:-3}
WASM=guest-examples/dist/python-jsonl.wasm
work=$(mktemp -d)
trap 'kill $registry_pid 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/registry.yml" <<YML
version: 0.1
storage:
  filesystem:
    rootdirectory: $work/data
http:
  addr: 127.0.0.1:$port
YML
docker-registry serve "$work/registry.yml" > "$work/registry.log" 2>&1 &
registry_pid=$!
until (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do sleep 0.05; done
ref=$("$LENS" push "$WASM" "oci://127.0.0.1:$port/bench/python:1.0" | sed -n 's/^  path = "\(.*\)"$/\1/p')
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/k.pem" 2> /dev/null
openssl pkey -in "$work/k.pem" -pubout -out "$work/k.pub"
signed=$("$LENS" push "$WASM" "oci://127.0.0.1:$port/bench/signed:1.0" --sign-key "$work/k.pem" \
  | sed -n 's/^  path = "\(.*\)"$/\1/p')
secs() { local s=$EPOCHREALTIME; "$@" > /dev/null; python3 -c "print(f'{$EPOCHREALTIME - $s:.3f}')"; }
downloads() { grep -c '"GET /v2/bench/python/blobs/sha256:.* 200 ' "$work/registry.log" || true; }
for round in $(seq "$ROUNDS"); do
  c="$work/c$round"
  disk_cold=$(LENS_WASM_CACHE_DIR=$c-disk secs "$LENS" compile "$WASM")
  disk_cached=$(LENS_WASM_CACHE_DIR=$c-disk secs "$LENS" compile "$WASM")
  oci_cold=$(LENS_WASM_CACHE_DIR=$c-oci secs "$LENS" pull "$ref")
  oci_cached=$(LENS_WASM_CACHE_DIR=$c-oci secs "$LENS" pull "$ref")
  rm -rf "$c-disk/oci"
  pull_only=$(LENS_WASM_CACHE_DIR=$c-disk secs "$LENS" pull "$ref")
  before=$(downloads)
  start=$EPOCHREALTIME
  cpu=$( { /usr/bin/time -f "%U %S" bash -c "
    for i in 1 2 3 4; do LENS_WASM_CACHE_DIR=$c-four '$LENS' pull '$ref' > /dev/null & done; wait
  "; } 2>&1 | tail -1 | awk '{print $1 + $2}')
  wall=$(python3 -c "print(f'{$EPOCHREALTIME - $start:.3f}')")
  rm -rf "$c-disk/oci"
  signed_pull=$(LENS_WASM_CACHE_DIR=$c-disk secs "$LENS" pull "$signed" --verify-key "$work/k.pub")
  signed_cached=$(LENS_WASM_CACHE_DIR=$c-disk secs "$LENS" pull "$signed" --verify-key "$work/k.pub")
  echo "round $round: disk cold $disk_cold s, disk cached $disk_cached s, oci cold $oci_cold s, oci cached $oci_cached s, oci pull only $pull_only s; 4 cold ranks $wall s wall, $cpu CPU s, $(( $(downloads) - before )) layer download(s); signed: pull only $signed_pull s, cached $signed_cached s"
done
