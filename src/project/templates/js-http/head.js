// {{name}}: a vendor integration for Lens ({{signals}}).
//
// Each batch arrives as OTLP bytes and is POSTed, unchanged, to the vendor's OTLP/HTTP ingest
// with the SDK's HTTP helpers (over the sandbox's `fetch`, which is the host's `wasi:http`).
//
// Settings (`settings = { ... }` in the config, `--setting` with `lens check`):
// - `endpoint` (required): `https://ingest.example.com` (each signal's OTLP path is added:
//   `/v1/traces`, `/v1/metrics`, `/v1/logs`), or a URL with its own path;
// - `format` (default `protobuf`): `protobuf` or `json`, the OTLP encoding the ingest takes;
// - `timeout_ms` (default 10000): the bound of each request.
//
// The vendor's key is not read here: the platform team gives it to the host as a credential
// (`credentials` in `lens.toml`), and the host adds the header to the requests to that host.
// This component never holds it. Retries are the host's: `send` throws `RetryableExportError`
// for 429, 502, 503, 504 and a failed connection, `RejectedExportError` for any other failure.

const CONTENT_TYPES = { protobuf: "application/x-protobuf", json: "application/json" };

// One signal's exporter: where it posts, in which encoding, and how long it waits.
class Vendor {
  constructor(settings, defaultPath) {
    if (!settings.endpoint) throw new Error("setting `endpoint` is required, e.g. https://ingest.example.com");
    this.url = parseUrl(settings.endpoint, defaultPath).toString();
    // What the host hands `export`: OTLP protobuf bytes, or OTLP/JSON text.
    this.encoding = settings.format ?? "protobuf";
    if (!(this.encoding in CONTENT_TYPES)) throw new Error(`setting \`format\` = ${JSON.stringify(this.encoding)}: say protobuf or json`);
    this.headers = { "content-type": CONTENT_TYPES[this.encoding] };
    this.timeoutMs = Number(settings.timeout_ms ?? "10000");
    if (!Number.isFinite(this.timeoutMs)) throw new Error(`setting \`timeout_ms\` = ${JSON.stringify(settings.timeout_ms)} is not a number`);
  }

  async export(data) {
    await send(this.url, data, this.headers, { timeoutMs: this.timeoutMs });
  }
}

