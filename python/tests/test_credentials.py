"""Host-held credentials from a Python rank: the ``credentials`` keyword gives a sandboxed
exporter a key that reaches its host and nobody else, that the guest cannot find (its
environment, settings, its own request's headers, its memory), that no repr or error shows,
and whose absence is an ``ExporterLoadError`` naming it."""

from __future__ import annotations

import http.server
import os
import threading
import uuid

import lens
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


class _Ingest(http.server.BaseHTTPRequestHandler):
    """Answers 200 to a request carrying the server's key in ``x-acme-key``, else 401, and
    records every request's headers."""

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        self.server.received.append({k.lower(): v for k, v in self.headers.items()})
        ok = self.headers.get("x-acme-key") == self.server.key
        body = b"ok" if ok else b'{"error":"invalid api key"}'
        self.send_response(200 if ok else 401)
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def ingest():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ingest)
    server.key = f"sk-py-{uuid.uuid4().hex}"
    server.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _export_one(exporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("step"):
        pass
    provider.shutdown()


def test_a_host_held_credential_reaches_its_host_and_the_guest_never_sees_it(
    guests, ingest, tmp_path, monkeypatch
):
    monkeypatch.setenv("LENS_PY_TEST_ACME_KEY", ingest.key)
    authority = f"127.0.0.1:{ingest.server_port}"
    exporter = lens.WasmSpanExporter(
        guests["hostile"],
        settings={
            "mode": "steal-credential",
            "targets": f"{authority},localhost:{ingest.server_port}",
        },
        allowed_hosts=[authority, f"localhost:{ingest.server_port}"],
        credentials=[
            {
                "host": f"http://{authority}",
                "header": "x-acme-key",
                "from_env": "LENS_PY_TEST_ACME_KEY",
            }
        ],
        preopens=[{"host": str(tmp_path), "guest": "/out", "read_only": False}],
        call_timeout_ms=20000,
        name="acme",
        blocking=True,
    )
    shown = repr(exporter)
    assert "x-acme-key" in shown and authority in shown and "LENS_PY_TEST_ACME_KEY" in shown
    assert ingest.key not in shown
    _export_one(exporter)
    found = (tmp_path / "found.txt").read_text()
    memory = (tmp_path / "memory.bin").read_bytes()
    assert len(memory) >= 1 << 20
    assert ingest.key not in found, found
    assert ingest.key.encode() not in memory
    assert f"{authority}: " in found and "status 200" in found.split("\n")[2], found
    assert "status 401" in found.split("\n")[3], found
    assert ingest.key not in str(exporter.stats())
    keys = [r.get("x-acme-key") for r in ingest.received]
    assert sorted(keys) == sorted([ingest.key, "guest-guess"]), ingest.received
    by_host = {r["host"]: r["x-acme-key"] for r in ingest.received}
    assert by_host[authority] == ingest.key
    assert by_host[f"localhost:{ingest.server_port}"] == "guest-guess"


def test_a_missing_credential_is_an_error_naming_it(guests, ingest):
    authority = f"127.0.0.1:{ingest.server_port}"
    assert "LENS_PY_SURELY_UNSET" not in os.environ
    with pytest.raises(lens.ExporterLoadError) as raised:
        lens.WasmSpanExporter(
            guests["hostile"],
            settings={"mode": "noop"},
            allowed_hosts=[authority],
            credentials=[
                {
                    "host": f"http://{authority}",
                    "header": "x-acme-key",
                    "from_env": "LENS_PY_SURELY_UNSET",
                }
            ],
        )
    message = str(raised.value)
    assert "credential `x-acme-key` for http://" in message
    assert "LENS_PY_SURELY_UNSET" in message and "not set" in message


def test_a_credential_for_a_host_not_allowed_is_refused(guests):
    with pytest.raises(lens.ExporterLoadError, match="not in `allowed_hosts`"):
        lens.WasmSpanExporter(
            guests["hostile"],
            settings={"mode": "noop"},
            credentials=[{"host": "ingest.acme.com", "header": "x-acme-key", "from_env": "HOME"}],
        )
