// The JavaScript SDK outside a component (Node's test runner): OTLP/JSON requests, as the host
// writes them, become OpenTelemetry JS's objects; results, exceptions and the life cycle map to
// the WIT answers.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AggregationTemporality,
  DataPointType,
  ExportResultCode,
  RetryableExportError,
  SpanKind,
  SpanStatusCode,
  exportLogs,
  exportMetrics,
  exportSpans,
  hrTimeToNanos,
} from "../lens-exporter-sdk.js";

const TRACE = "5b8efff798038103d269b633813fc60c";
const SPAN = "eee19b7ec3c1b174";
const PARENT = "00f067aa0ba902b7";
const resource = { attributes: [{ key: "dl.rank", value: { tag: "s64", val: 3n } }, { key: "raw", value: { tag: "bytes", val: [1, 2] } }] };
const RESOURCE = { attributes: [{ key: "dl.rank", value: { intValue: "3" } }] };

const spanRequest = {
  resourceSpans: [{
    resource: RESOURCE,
    scopeSpans: [{
      scope: { name: "trainer", version: "2.1" },
      spans: [
        {
          traceId: TRACE, spanId: SPAN, traceState: "vendor=a1", parentSpanId: PARENT, flags: 0x301,
          name: "step ✓", kind: 3, startTimeUnixNano: "1700000000000000001", endTimeUnixNano: "1700000000000000901",
          attributes: [
            { key: "i", value: { intValue: "-9223372036854775808" } },
            { key: "f", value: { doubleValue: 0.25 } },
            { key: "ia", value: { arrayValue: { values: [{ intValue: "8" }] } } },
            { key: "raw", value: { bytesValue: "AQI=" } },
          ],
          events: [{ timeUnixNano: "1700000000000000500", name: "spike", attributes: [{ key: "loss", value: { doubleValue: 9.5 } }] }],
          links: [{ traceId: TRACE, spanId: PARENT, flags: 0x301, attributes: [] }],
          status: { code: 2, message: "nan loss" },
        },
        { traceId: TRACE, spanId: PARENT, name: "root", kind: 1, startTimeUnixNano: "1999999999", endTimeUnixNano: "2000000001" },
      ],
    }],
  }],
};

class Recorder {
  constructor(settings, res, answer) {
    Object.assign(this, { settings, res, answer, items: [], closed: false });
  }
  export(items, done) {
    if (this.answer === "throw") throw new TypeError("bad batch");
    if (this.answer === "retry") throw new RetryableExportError("busy", 250);
    if (this.answer === "never") return;
    this.items.push(...(Array.isArray(items) ? items : [items]));
    done({ code: this.answer === "failed" ? ExportResultCode.FAILED : ExportResultCode.SUCCESS, error: this.answer === "failed" ? new Error("503") : undefined });
  }
  shutdown() {
    this.closed = true;
  }
}

function started(make, answer, settings = [["path", "/out/x"]]) {
  let built;
  const component = make((s, r) => (built = new Recorder(s, r, answer)));
  component.init(settings, resource);
  return [component, () => built];
}

const batch = (request) => ({ tag: "otlp-json", val: JSON.stringify(request) });

test("spans are ReadableSpans with every field", () => {
  const [component, exporter] = started(exportSpans);
  component.export(batch(spanRequest));
  const [child, root] = exporter().items;
  assert.deepEqual(exporter().settings, { path: "/out/x" });
  assert.deepEqual(exporter().res.attributes, { "dl.rank": 3n, raw: Uint8Array.from([1, 2]) });
  assert.equal(child.name, "step ✓");
  assert.deepEqual(child.spanContext(), { traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: false, traceState: "vendor=a1" });
  assert.deepEqual(child.parentSpanContext, { traceId: TRACE, spanId: PARENT, traceFlags: 1, isRemote: true, traceState: "vendor=a1" });
  assert.equal(child.kind, SpanKind.CLIENT);
  assert.equal(hrTimeToNanos(child.startTime), 1700000000000000001n);
  assert.equal(hrTimeToNanos(child.duration), 900n);
  assert.deepEqual(child.status, { code: SpanStatusCode.ERROR, message: "nan loss" });
  assert.deepEqual(child.attributes, { i: -9223372036854775808n, f: 0.25, ia: [8n], raw: Uint8Array.from([1, 2]) });
  assert.equal(child.events[0].name, "spike");
  assert.equal(hrTimeToNanos(child.events[0].time), 1700000000000000500n);
  assert.equal(child.links[0].context.isRemote, true);
  assert.deepEqual(child.instrumentationScope, { name: "trainer", version: "2.1", schemaUrl: undefined });
  assert.deepEqual(child.resource.attributes, { "dl.rank": 3n });
  assert.equal(root.parentSpanContext, undefined);
  // Across a second boundary, and with fewer than 10 digits.
  assert.deepEqual([root.startTime, root.endTime, root.duration], [[1, 999999999], [2, 1], [0, 2]]);
  assert.equal(root.kind, SpanKind.INTERNAL);
  assert.equal(root.status.code, SpanStatusCode.UNSET);
});

test("metrics are ResourceMetrics of every kind", () => {
  const point = { startTimeUnixNano: "10", timeUnixNano: "20", attributes: [] };
  const metrics = [
    { name: "loss", gauge: { dataPoints: [{ ...point, asDouble: 2.5 }] } },
    { name: "tokens", sum: { dataPoints: [{ ...point, asInt: "7" }], aggregationTemporality: 1, isMonotonic: true } },
    { name: "lat", histogram: { dataPoints: [{ ...point, count: "3", sum: 6, bucketCounts: ["1", "2"], explicitBounds: [1] }], aggregationTemporality: 2 } },
    { name: "exp", exponentialHistogram: { dataPoints: [{ ...point, count: "2", scale: 2, zeroCount: "1", positive: { offset: -1, bucketCounts: ["1"] } }] } },
  ];
  const [component, exporter] = started(exportMetrics);
  component.export(batch({ resourceMetrics: [{ resource: RESOURCE, scopeMetrics: [{ scope: { name: "trainer" }, metrics }] }] }));
  const [rm] = exporter().items;
  const [gauge, sum, hist, exp] = rm.scopeMetrics[0].metrics;
  assert.equal(gauge.dataPointType, DataPointType.GAUGE);
  assert.equal(gauge.dataPoints[0].value, 2.5);
  assert.equal(sum.aggregationTemporality, AggregationTemporality.DELTA);
  assert.equal(sum.dataPoints[0].value, 7n);
  assert.equal(hrTimeToNanos(sum.dataPoints[0].endTime), 20n);
  assert.deepEqual(hist.dataPoints[0].value, { buckets: { boundaries: [1], counts: [1, 2] }, count: 3, sum: 6, min: undefined, max: undefined });
  assert.equal(exp.dataPointType, DataPointType.EXPONENTIAL_HISTOGRAM);
  assert.deepEqual(exp.dataPoints[0].value.positive, { offset: -1, bucketCounts: [1] });
});

test("logs are ReadableLogRecords", () => {
  const record = {
    timeUnixNano: "5", observedTimeUnixNano: "6", severityNumber: 13, severityText: "WARN",
    body: { kvlistValue: { values: [{ key: "k", value: { boolValue: true } }] } },
    traceId: TRACE, spanId: SPAN, flags: 1, eventName: "checkpoint",
  };
  const [component, exporter] = started(exportLogs);
  component.export(batch({ resourceLogs: [{ resource: RESOURCE, scopeLogs: [{ scope: { name: "lens.log" }, logRecords: [record, {}] }] }] }));
  const [full, bare] = exporter().items;
  assert.equal(hrTimeToNanos(full.hrTime), 5n);
  assert.deepEqual(full.body, { k: true });
  assert.deepEqual(full.spanContext, { traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: false, traceState: undefined });
  assert.equal(full.eventName, "checkpoint");
  assert.equal(bare.hrTime, undefined);
  assert.equal(bare.body, undefined);
});

const thrown = (f) => {
  try {
    f();
  } catch (e) {
    return e;
  }
  assert.fail("did not throw");
};

test("failures, exceptions and retries become WIT answers", () => {
  const empty = batch({ resourceSpans: [] });
  assert.deepEqual(thrown(() => started(exportSpans, "failed")[0].export(empty)), { tag: "rejected", val: "export failed: Error: 503" });
  assert.deepEqual(thrown(() => started(exportSpans, "throw")[0].export(empty)), { tag: "rejected", val: "export threw TypeError: bad batch" });
  assert.deepEqual(thrown(() => started(exportSpans, "retry")[0].export(empty)), { tag: "retryable", val: { message: "busy", delayMs: 250n } });
  const never = thrown(() => started(exportSpans, "never")[0].export(empty));
  assert.match(never.val, /without calling its resultCallback/);
});

test("the life cycle is enforced", () => {
  const component = exportSpans((s) => new Recorder(s));
  const empty = batch({ resourceSpans: [] });
  assert.deepEqual(thrown(() => component.export(empty)), { tag: "rejected", val: "the exporter was not initialized" });
  component.init([], { attributes: [] });
  assert.equal(thrown(() => component.export({ tag: "typed", val: [] })).val, "the JavaScript SDK reads OTLP/JSON batches");
  component.shutdown();
  assert.deepEqual(thrown(() => component.export(empty)), { tag: "rejected", val: "the exporter is shut down" });
  assert.equal(thrown(() => component.shutdown()), "already shut down");
  assert.equal(thrown(() => exportSpans(() => { throw new Error("no path"); }).init([], { attributes: [] })), "the exporter's factory failed: Error: no path");
});

test("a metric exporter's temporality reaches the host", () => {
  const delta = exportMetrics(() => ({ selectAggregationTemporality: () => AggregationTemporality.DELTA, export() {}, shutdown() {} }));
  assert.deepEqual(delta.init([], { attributes: [] }), { encoding: "otlp-json", temporality: "delta" });
});

test("the docs example runs", async () => {
  // The JavaScript snippet of docs/writing-an-exporter.md, with its import pointed at the SDK.
  const { readFile, writeFile, mkdtemp, rm } = await import("node:fs/promises");
  const { join } = await import("node:path");
  const { tmpdir } = await import("node:os");
  const docs = await readFile(new URL("../../../docs/writing-an-exporter.md", import.meta.url), "utf8");
  const section = docs.slice(docs.indexOf("### JavaScript"));
  let snippet = section.slice(section.indexOf("```js\n") + 6);
  snippet = snippet.slice(0, snippet.indexOf("```"));
  const sdk = new URL("../lens-exporter-sdk.js", import.meta.url).href;
  const dir = await mkdtemp(join(tmpdir(), "lens-docs-"));
  const file = join(dir, "exporter.mjs");
  await writeFile(file, snippet.replace(/from "[^"]*lens-exporter-sdk\.js"/, `from "${sdk}"`));
  // Imported, the module no longer needs its file.
  const { spanExporter } = await import(file);
  await rm(dir, { recursive: true });
  const printed = [];
  const log = console.log;
  console.log = (...args) => printed.push(args);
  try {
    spanExporter.init([["prefix", "rank3"]], { attributes: [] });
    spanExporter.export(batch(spanRequest));
  } finally {
    console.log = log;
  }
  assert.deepEqual(printed[0], [`rank3 step ✓ ${TRACE} 900ns`, ["i", "f", "ia", "raw"]]);
  assert.equal(printed.length, 2);
});

test("a processor's edits answer each span once, in index order, a drop winning", async () => {
  const { Edits } = await import("../lens-exporter-sdk.js");
  const edits = new Edits();
  assert.deepEqual(edits.toWit(), []);
  edits.rename(3, "renamed");
  edits.setAttribute(3, "cost.centre", "research");
  edits.removeAttribute(3, "gen_ai.prompt");
  edits.setStatus(3, SpanStatusCode.ERROR, "bad");
  edits.setAttribute(1, "n", 7);
  edits.drop(1);
  edits.setAttribute(1, "ignored", true);
  edits.drop(0);
  assert.ok(edits.isDropped(1) && !edits.isDropped(3));
  assert.equal(edits.size, 3);
  assert.deepEqual(edits.toWit(), [
    { index: 0, action: { tag: "drop" } },
    { index: 1, action: { tag: "drop" } },
    {
      index: 3,
      action: {
        tag: "edit",
        val: [
          { tag: "rename", val: "renamed" },
          { tag: "set-attribute", val: { key: "cost.centre", value: { tag: "string", val: "research" } } },
          { tag: "remove-attribute", val: "gen_ai.prompt" },
          { tag: "set-status", val: { tag: "error", val: "bad" } },
        ],
      },
    },
  ]);
  const value = (v) => {
    const e = new Edits();
    e.setAttribute(0, "k", v);
    return e.toWit()[0].action.val[0].val.value;
  };
  assert.deepEqual(value(2), { tag: "s64", val: 2n });
  assert.deepEqual(value(0.5), { tag: "f64", val: 0.5 });
  assert.deepEqual(value(true), { tag: "bool", val: true });
  assert.deepEqual(value(["a", "b"]), { tag: "string-array", val: ["a", "b"] });
  assert.deepEqual(value([1, 2]), { tag: "s64-array", val: [1n, 2n] });
  for (const bad of [null, [], [1, "a"], { a: 1 }]) assert.throws(() => value(bad), /attribute value/);
  assert.throws(() => new Edits().drop(-1), /span index -1/);
});

test("a processor gets the batch's spans in order and answers its edits; a throw is the call's error", async () => {
  const { processSpans } = await import("../lens-exporter-sdk.js");
  let closed = false;
  const component = processSpans((settings) => ({
    process(spans, edits) {
      spans.forEach((s, i) => {
        if (s.name === settings.drop) edits.drop(i);
        if (s.name === "boom") throw new Error("cannot process");
      });
    },
    shutdown() {
      closed = true;
    },
  }));
  assert.equal(component.init([["drop", "step ✓"]], resource), "otlp-json");
  assert.deepEqual(component.process({ tag: "otlp-json", val: JSON.stringify(spanRequest) }), [{ index: 0, action: { tag: "drop" } }]);
  const boom = structuredClone(spanRequest);
  boom.resourceSpans[0].scopeSpans[0].spans[0].name = "boom";
  assert.throws(() => component.process({ tag: "otlp-json", val: JSON.stringify(boom) }), (e) => e === "process threw Error: cannot process");
  assert.throws(() => component.process({ tag: "typed", val: [] }), (e) => e === "the JavaScript SDK reads OTLP/JSON batches");
  component.shutdown();
  assert.ok(closed);
  assert.throws(() => component.process({ tag: "otlp-json", val: "{}" }), (e) => e === "the processor is shut down");
});

test("a log processor gets the batch's records and answers its edits", async () => {
  const { processLogs } = await import("../lens-exporter-sdk.js");
  const component = processLogs(() => ({
    process(records, edits) {
      records.forEach((r, i) => {
        if (r.severityText === "DEBUG") edits.drop(i);
        else edits.setBody(i, "[redacted]");
      });
    },
  }));
  assert.equal(component.init([], resource), "otlp-json");
  const request = {
    resourceLogs: [{ scopeLogs: [{ scope: { name: "t" }, logRecords: [
      { severityText: "DEBUG", body: { stringValue: "a" } },
      { severityText: "INFO", body: { stringValue: "b" } },
    ] }] }],
  };
  assert.deepEqual(component.process({ tag: "otlp-json", val: JSON.stringify(request) }), [
    { index: 0, action: { tag: "drop" } },
    { index: 1, action: { tag: "edit", val: [{ tag: "set-body", val: "[redacted]" }] } },
  ]);
});

test("a metric processor gets the collection's metrics in order across scopes", async () => {
  const { processMetrics } = await import("../lens-exporter-sdk.js");
  const component = processMetrics(() => ({
    process(metrics, edits) {
      metrics.forEach((m, i) => {
        if (m.descriptor.name === "hot") edits.drop(i);
        else edits.rename(i, `${m.descriptor.name}.x`);
      });
    },
  }));
  assert.equal(component.init([], resource), "otlp-json");
  const gauge = (name) => ({ name, gauge: { dataPoints: [{ asDouble: 1.5, timeUnixNano: "1" }] } });
  const request = {
    resourceMetrics: [{ scopeMetrics: [
      { scope: { name: "a" }, metrics: [gauge("loss")] },
      { scope: { name: "b" }, metrics: [gauge("hot"), gauge("tokens")] },
    ] }],
  };
  assert.deepEqual(component.process({ tag: "otlp-json", val: JSON.stringify(request) }), [
    { index: 0, action: { tag: "edit", val: [{ tag: "rename", val: "loss.x" }] } },
    { index: 1, action: { tag: "drop" } },
    { index: 2, action: { tag: "edit", val: [{ tag: "rename", val: "tokens.x" }] } },
  ]);
});
