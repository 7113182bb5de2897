// The HTTP helpers and forwarding exporters outside a component (Node's test runner, whose
// `fetch` stands in for the sandbox's): URLs, a response read as OTLP exporters read it, and
// batches handed over unchanged.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import {
  HttpError,
  RejectedExportError,
  RetryableExportError,
  exportResult,
  forwardLogs,
  forwardMetrics,
  forwardSpans,
  parseUrl,
  post,
  send,
} from "../lens-exporter-sdk.js";

const bytes = (s) => new TextEncoder().encode(s);
const response = (status, body = "", headers = {}) => ({ status, headers, body: bytes(body) });

test("a URL splits into scheme, authority and path", () => {
  const u = parseUrl("https://ingest.acme.com:8443/v1/traces", "/x");
  assert.deepEqual([u.https, u.authority, u.path], [true, "ingest.acme.com:8443", "/v1/traces"]);
  assert.equal(parseUrl("http://127.0.0.1:4318", "/v1/logs").toString(), "http://127.0.0.1:4318/v1/logs");
  assert.throws(() => parseUrl("ftp://x"), /must start with http:\/\/ or https:\/\//);
  assert.throws(() => parseUrl("https://user:key@acme.com/"), /has a user/);
});

test("a response is read as OTLP exporters read it", () => {
  assert.equal(exportResult("u", response(204)), undefined);
  for (const status of [429, 502, 503, 504]) {
    assert.throws(
      () => exportResult("u", response(status, "slow down", { "retry-after": "3" })),
      (e) => e instanceof RetryableExportError && e.message === `u: HTTP ${status}: slow down` && e.delayMs === 3000,
    );
  }
  assert.throws(() => exportResult("u", response(401, "bad key\n")), (e) => e instanceof RejectedExportError && e.message === "u: HTTP 401: bad key");
  assert.throws(
    () => exportResult("u", response(400, "x".repeat(1000))),
    (e) => e.message === `u: HTTP 400: ${"x".repeat(200)}… (1000 bytes)`,
  );
  assert.throws(() => exportResult("u", new HttpError("connection", "refused")), RetryableExportError);
  assert.throws(() => exportResult("u", new HttpError("denied", "no")), (e) => e instanceof RejectedExportError && /denied by the host/.test(e.message));
});

test("post and send talk to a server, and a refused connection is retryable", async () => {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      res.writeHead(body === "good" ? 200 : 401, { "x-seen": req.headers["content-type"] });
      res.end(body === "good" ? "" : "invalid api key");
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const url = `http://127.0.0.1:${server.address().port}/v1/traces`;
  try {
    const r = await post(url, bytes("good"), { "content-type": "application/x-protobuf" });
    assert.equal(r.status, 200);
    assert.equal(r.headers["x-seen"], "application/x-protobuf");
    await assert.rejects(send(url, "bad"), (e) => e instanceof RejectedExportError && e.message === `${url}: HTTP 401: invalid api key`);
  } finally {
    server.close();
  }
  await assert.rejects(send(url, "good"), RetryableExportError);
});

const witResource = { attributes: [] };

test("a forwarder gets the bytes as the host sent them and its errors reach the host", async () => {
  const sent = [];
  let answer;
  const exporter = forwardSpans((settings) => ({
    encoding: settings.encoding,
    async export(data) {
      if (answer) throw answer;
      sent.push(data);
    },
  }));
  assert.equal(exporter.init([], witResource), "otlp-protobuf");
  await exporter.export({ tag: "otlp-protobuf", val: new Uint8Array([10, 0]) });
  assert.deepEqual(sent, [new Uint8Array([10, 0])]);
  answer = new RejectedExportError("HTTP 401: bad key");
  await assert.rejects(exporter.export({ tag: "otlp-protobuf", val: new Uint8Array() }), (e) => e.tag === "rejected" && e.val === "HTTP 401: bad key");
  answer = new RetryableExportError("HTTP 503", 100);
  await assert.rejects(exporter.export({ tag: "otlp-protobuf", val: new Uint8Array() }), (e) => e.tag === "retryable" && e.val.delayMs === 100n);
  await exporter.shutdown();
  await assert.rejects(exporter.export({ tag: "otlp-protobuf", val: new Uint8Array() }), (e) => e.tag === "rejected" && /shut down/.test(e.val));
  const logs = forwardLogs(() => ({ encoding: "json", export() {} }));
  assert.equal(logs.init([], witResource), "otlp-json");
  assert.throws(() => forwardSpans(() => ({ encoding: "xml", export() {} })).init([], witResource), /encoding is "xml"/);
});

test("a metric forwarder chooses encoding and temporality", () => {
  const metrics = forwardMetrics(() => ({ temporality: "delta", export() {} }));
  assert.deepEqual(metrics.init([], witResource), { encoding: "otlp-protobuf", temporality: "delta" });
  assert.throws(() => forwardMetrics(() => ({ temporality: "weekly", export() {} })).init([], witResource), /temporality is "weekly"/);
});
