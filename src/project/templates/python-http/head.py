"""{{name}}: a vendor integration for Lens ({{signals}}).

Each batch arrives as OTLP bytes and is POSTed, unchanged, to the vendor's OTLP/HTTP ingest with
the SDK's HTTP client.

Settings (`settings = { ... }` in the config, `--setting` with `lens check`):
- `endpoint` (required): `https://ingest.example.com` (each signal's OTLP path is added:
  `/v1/traces`, `/v1/metrics`, `/v1/logs`), or a URL with its own path;
- `format` (default `protobuf`): `protobuf` or `json`, the OTLP encoding the ingest takes;
- `timeout_ms` (default 10000): the connection's and each response wait's bound.

The vendor's key is not read here: the platform team gives it to the host as a credential
(`credentials` in `lens.toml`), and the host adds the header to the requests to that host. This
component never holds it. Retries are the host's: `http.send` raises `RetryableExportError`
for 429, 502, 503, 504 and a failed connection, `RejectedExportError` for any other failure.
"""

import lens_exporter_sdk
from lens_exporter_sdk import http

CONTENT_TYPES = {"protobuf": "application/x-protobuf", "json": "application/json"}


class Vendor:
    """One signal's exporter: where it posts, in which encoding, and how long it waits."""

    def __init__(self, settings, default_path):
        endpoint = settings.get("endpoint")
        if not endpoint:
            raise ValueError("setting `endpoint` is required, e.g. https://ingest.example.com")
        self.url = str(http.parse_url(endpoint, default_path))
        # What the host hands `export`: OTLP protobuf bytes, or OTLP/JSON text.
        self.encoding = settings.get("format", "protobuf")
        if self.encoding not in CONTENT_TYPES:
            raise ValueError(f"setting `format` = {self.encoding!r}: say protobuf or json")
        self.headers = [("content-type", CONTENT_TYPES[self.encoding])]
        timeout_ms = settings.get("timeout_ms", "10000")
        try:
            self.timeout = int(timeout_ms) / 1000
        except ValueError:
            raise ValueError(f"setting `timeout_ms` = {timeout_ms!r} is not a number") from None

    def export(self, data):
        body = data if isinstance(data, bytes) else data.encode()
        http.send(self.url, body, self.headers, self.timeout)


# The registration: componentize-py looks for these names in this module.
