"""A Python rank loads a component named by an ``oci://`` reference: pushed to a real registry
(Debian's ``docker-registry`` on loopback) with ``lens push``, exported through by digest, and an
unpinned tag refused with the line to paste."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time

import lens
import pytest
from conftest import ROOT, recorded, recorder
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lens_binary() -> list[str]:
    built = ROOT / "target" / "debug" / "lens"
    if built.exists():
        return [str(built)]
    return ["cargo", "run", "-q", "-p", "lens-cli", "--bin", "lens", "--"]


@pytest.fixture
def registry(tmp_path):
    """``127.0.0.1:<port>`` of a registry serving from ``tmp_path``."""
    port = free_port()
    config = tmp_path / "registry.yml"
    config.write_text(
        "version: 0.1\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {tmp_path / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n"
    )
    log = open(tmp_path / "registry.log", "wb")
    child = subprocess.Popen(
        ["/usr/bin/docker-registry", "serve", str(config)], stdout=log, stderr=log
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, (tmp_path / "registry.log").read_text()
            time.sleep(0.02)
    yield f"127.0.0.1:{port}"
    child.kill()
    child.wait()
    log.close()


def push(registry: str, file: str, repository: str, *extra: str) -> str:
    """``lens push`` of ``file`` (with the ``extra`` arguments); the pinned reference it
    printed."""
    out = subprocess.run(
        [*lens_binary(), "push", file, f"oci://{registry}/{repository}:1.0", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DOCKER_CONFIG": "/nonexistent"},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(line for line in out.stdout.splitlines() if "path = " in line)
    return line.split('"')[1]


def test_a_python_rank_exports_through_a_component_named_by_digest(
    registry, guests, tmp_path: pathlib.Path
):
    pinned = push(registry, guests["recorder"], "acme/recorder")
    assert pinned.startswith(f"oci://{registry}/acme/recorder:1.0@sha256:")
    guests = {**guests, "recorder": pinned}
    exporter = recorder(guests, tmp_path, "otlp-json")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for i in range(3):
        with tracer.start_as_current_span(f"step {i}"):
            pass
    provider.shutdown()
    assert exporter.stats()["exported"] == 3, exporter.stats()
    assert len(recorded(tmp_path)) >= 1
    # Compiled ahead, as a job's prologue would.
    assert lens.compile(pinned)[0][0] == pinned


def test_an_unpinned_tag_is_refused_with_the_line_to_paste(registry, guests, tmp_path):
    pinned = push(registry, guests["recorder"], "acme/tagged")
    tag = f"oci://{registry}/acme/tagged:1.0"
    with pytest.raises(lens.ExporterLoadError) as refused:
        lens.WasmSpanExporter(tag)
    assert (
        f"names no digest: a tag can move. It resolves to sha256:{pinned.split('@sha256:')[1]}"
        in str(refused.value)
    )
    assert f'pin it: path = "{pinned}"' in str(refused.value)
    # Followed when allowed.
    followed = recorder({**guests, "recorder": tag}, tmp_path, "typed", allow_unpinned=True)
    followed.shutdown()


def openssl_key_pair(dir: pathlib.Path, name: str) -> tuple[pathlib.Path, pathlib.Path]:
    """An ECDSA P-256 key pair made by openssl: (PKCS#8 private key, public key)."""
    private, public = dir / f"{name}.key", dir / f"{name}.pub"
    for args in (
        ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", private],
        ["pkey", "-in", private, "-pubout", "-out", public],
    ):
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)
    return private, public


def test_a_signed_component_loads_with_its_key_and_is_refused_with_another(
    registry, guests, tmp_path
):
    keys = tmp_path / "keys"
    keys.mkdir()
    private, public = openssl_key_pair(keys, "acme")
    _, stranger = openssl_key_pair(keys, "stranger")
    pinned = push(registry, guests["recorder"], "acme/signed", "--sign-key", str(private))
    with pytest.raises(lens.ExporterLoadError) as refused:
        lens.WasmSpanExporter(pinned, verify_key=stranger)
    assert f"{pinned}: refused, not signed by the key {stranger}: none of its 1 signature" in str(
        refused.value
    )
    exporter = recorder({**guests, "recorder": pinned}, tmp_path, "typed", verify_key=public)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("step"):
        pass
    provider.shutdown()
    assert exporter.stats()["exported"] == 1, exporter.stats()
    assert lens.compile(pinned, verify_key=str(public))[0][0] == pinned
