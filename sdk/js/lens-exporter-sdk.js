// The Lens JavaScript guest SDK: write an exporter the way OpenTelemetry JS exporters are written
// (a class with `export(items, resultCallback)`, `shutdown()`, `forceFlush()`) and receive the
// objects those exporters receive — `ReadableSpan`s, `ResourceMetrics`, `ReadableLogRecord`s —
// built from the host's OTLP/JSON batches. `lens build` bundles it (an npm package, imported as
// `lens-exporter-sdk`) and builds the component with componentize-js.
//
// ```js
// import { exportSpans, ExportResultCode } from "lens-exporter-sdk";
// class Stdout {
//   export(spans, done) {
//     for (const s of spans) console.log(s.name, s.spanContext().traceId);
//     done({ code: ExportResultCode.SUCCESS });
//   }
//   shutdown() {}
// }
// export const spanExporter = exportSpans((settings, resource) => new Stdout());
// ```
//
// A span processor (world `span-processors`) is `processSpans(factory)`, exported as
// `spanProcessor`: its `process(spans, edits)` records in an `Edits` what happens to the spans
// that change, by index (metric and log processors: `processMetrics`, `processLogs`).
//
// Differences from OpenTelemetry JS, all forced by the sandbox or by exactness:
// - `export` must call `resultCallback` before it returns, and `shutdown`/`forceFlush` must
//   finish before they return (a component's calls are synchronous; a Promise is not awaited).
// - 64-bit integers (attribute values, sums, counts in `Int` points) are `BigInt`, since a JS
//   number cannot hold them exactly; doubles are numbers. Times are `HrTime` ([seconds, nanos]),
//   exact; `hrTimeToNanos` gives the BigInt.
// - Throw `RetryableExportError` (or answer FAILED with `error` set to one) for a transient failure:
//   the host retries the batch. Any other failure drops it, counted, with its message.

export const ExportResultCode = Object.freeze({ SUCCESS: 0, FAILED: 1 });
export const SpanKind = Object.freeze({ INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 });
export const SpanStatusCode = Object.freeze({ UNSET: 0, OK: 1, ERROR: 2 });
export const AggregationTemporality = Object.freeze({ DELTA: 0, CUMULATIVE: 1 });
export const DataPointType = Object.freeze({ HISTOGRAM: 0, EXPONENTIAL_HISTOGRAM: 1, GAUGE: 2, SUM: 3 });

/** A transient failure: the host sends the batch again, after `delayMs` if given. */
export class RetryableExportError extends Error {
  constructor(message, delayMs) {
    super(message);
    this.name = "RetryableExportError";
    this.delayMs = delayMs;
  }
}

/** An `HrTime` as nanoseconds since the epoch (BigInt, exact). */
export const hrTimeToNanos = (hr) => BigInt(hr[0]) * 1000000000n + BigInt(hr[1]);

// From OTLP/JSON's decimal string, by slicing: BigInt arithmetic is slow without a JIT.
const hrTime = (nanos) => {
  const digits = String(nanos ?? 0);
  const split = digits.length - 9;
  return split > 0 ? [Number(digits.slice(0, split)), Number(digits.slice(split))] : [0, Number(digits)];
};

// `end - start` of two HrTimes (0 if the clock went backwards).
const hrDuration = ([s1, n1], [s2, n2]) => {
  const [s, n] = n2 >= n1 ? [s2 - s1, n2 - n1] : [s2 - s1 - 1, n2 - n1 + 1000000000];
  return s < 0 ? [0, 0] : [s, n];
};
const optionalHrTime = (nanos) => (nanos === undefined || nanos === "0" || nanos === 0 ? undefined : hrTime(nanos));

// OTLP/JSON `AnyValue`: one member; 64-bit integers arrive as decimal strings.
function value(v) {
  if ("stringValue" in v) return v.stringValue;
  if ("intValue" in v) return BigInt(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue); // also "NaN", "Infinity"
  if ("boolValue" in v) return v.boolValue;
  if ("arrayValue" in v) return (v.arrayValue.values ?? []).map(value);
  if ("kvlistValue" in v) return attributes(v.kvlistValue.values);
  if ("bytesValue" in v) return Uint8Array.from(atob(v.bytesValue), (c) => c.charCodeAt(0));
  return undefined;
}

const attributes = (kvs) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, value(kv.value ?? {})]));

const resource = (r) => ({ attributes: attributes(r?.attributes) });
const scope = (s) => ({ name: s?.name ?? "", version: s?.version || undefined, schemaUrl: s?.schemaUrl || undefined });

// OTLP `SpanFlags`: whether the context is remote is known (0x100) and true (0x200).
const REMOTE = 0x300;

function context(traceId, spanId, flags, traceState) {
  return {
    traceId,
    spanId,
    traceFlags: flags & 0xff,
    isRemote: (flags & REMOTE) === REMOTE,
    traceState: traceState || undefined,
  };
}

function readableSpan(s, res, sc) {
  const flags = s.flags ?? 0;
  const cx = context(s.traceId, s.spanId, flags & 0xff, s.traceState);
  const parent = s.parentSpanId ? context(s.traceId, s.parentSpanId, flags, s.traceState) : undefined;
  const startTime = hrTime(s.startTimeUnixNano);
  const endTime = hrTime(s.endTimeUnixNano);
  return {
    name: s.name ?? "",
    kind: (s.kind ?? 1) - 1,
    spanContext: () => cx,
    parentSpanContext: parent,
    parentSpanId: s.parentSpanId || undefined,
    startTime,
    endTime,
    duration: hrDuration(startTime, endTime),
    status: { code: s.status?.code ?? 0, message: s.status?.message || undefined },
    attributes: attributes(s.attributes),
    events: (s.events ?? []).map((e) => ({
      name: e.name ?? "",
      time: hrTime(e.timeUnixNano),
      attributes: attributes(e.attributes),
      droppedAttributesCount: e.droppedAttributesCount ?? 0,
    })),
    links: (s.links ?? []).map((l) => ({
      context: context(l.traceId, l.spanId, l.flags ?? 0, l.traceState),
      attributes: attributes(l.attributes),
      droppedAttributesCount: l.droppedAttributesCount ?? 0,
    })),
    ended: true,
    resource: res,
    instrumentationScope: sc,
    droppedAttributesCount: s.droppedAttributesCount ?? 0,
    droppedEventsCount: s.droppedEventsCount ?? 0,
    droppedLinksCount: s.droppedLinksCount ?? 0,
  };
}

// `make(item, resource, scope)` for each item of an OTLP request, in order.
function grouped(request, resources, scopes, items, make) {
  const out = [];
  for (const group of request[resources] ?? []) {
    const res = resource(group.resource);
    for (const inner of group[scopes] ?? []) {
      const sc = scope(inner.scope);
      for (const item of inner[items] ?? []) out.push(make(item, res, sc));
    }
  }
  return out;
}

const spans = (request) => grouped(request, "resourceSpans", "scopeSpans", "spans", readableSpan);

// OTLP `AggregationTemporality` numbers (1 delta, 2 cumulative) to OpenTelemetry JS's.
const temporality = (t) => (t === 1 ? AggregationTemporality.DELTA : AggregationTemporality.CUMULATIVE);

function point(p, v) {
  return {
    startTime: optionalHrTime(p.startTimeUnixNano),
    endTime: hrTime(p.timeUnixNano),
    attributes: attributes(p.attributes),
    value: v,
  };
}

const numberValue = (p) => ("asDouble" in p ? Number(p.asDouble) : BigInt(p.asInt ?? 0));
const optional = (x) => (x === undefined ? undefined : Number(x));
const buckets = (b) => ({ offset: b?.offset ?? 0, bucketCounts: (b?.bucketCounts ?? []).map(Number) });

function metricData(m) {
  const descriptor = { name: m.name ?? "", description: m.description ?? "", unit: m.unit ?? "" };
  if (m.gauge) {
    return { descriptor, dataPointType: DataPointType.GAUGE, aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPoints: (m.gauge.dataPoints ?? []).map((p) => point(p, numberValue(p))) };
  }
  if (m.sum) {
    return { descriptor, dataPointType: DataPointType.SUM, isMonotonic: !!m.sum.isMonotonic,
      aggregationTemporality: temporality(m.sum.aggregationTemporality),
      dataPoints: (m.sum.dataPoints ?? []).map((p) => point(p, numberValue(p))) };
  }
  if (m.histogram) {
    return { descriptor, dataPointType: DataPointType.HISTOGRAM,
      aggregationTemporality: temporality(m.histogram.aggregationTemporality),
      dataPoints: (m.histogram.dataPoints ?? []).map((p) => point(p, {
        buckets: { boundaries: p.explicitBounds ?? [], counts: (p.bucketCounts ?? []).map(Number) },
        count: Number(p.count ?? 0), sum: optional(p.sum), min: optional(p.min), max: optional(p.max),
      })) };
  }
  const h = m.exponentialHistogram ?? {};
  return { descriptor, dataPointType: DataPointType.EXPONENTIAL_HISTOGRAM,
    aggregationTemporality: temporality(h.aggregationTemporality),
    dataPoints: (h.dataPoints ?? []).map((p) => point(p, {
      count: Number(p.count ?? 0), sum: optional(p.sum), min: optional(p.min), max: optional(p.max),
      scale: p.scale ?? 0, zeroCount: Number(p.zeroCount ?? 0),
      positive: buckets(p.positive), negative: buckets(p.negative),
    })) };
}

function resourceMetrics(request) {
  // Lens sends one resource per collection.
  const rm = (request.resourceMetrics ?? [])[0] ?? {};
  return {
    resource: resource(rm.resource),
    scopeMetrics: (rm.scopeMetrics ?? []).map((sm) => ({ scope: scope(sm.scope), metrics: (sm.metrics ?? []).map(metricData) })),
  };
}

const readableLogRecord = (r, res, sc) => ({
  hrTime: optionalHrTime(r.timeUnixNano),
  hrTimeObserved: optionalHrTime(r.observedTimeUnixNano),
  spanContext: r.traceId && r.spanId ? context(r.traceId, r.spanId, r.flags ?? 0) : undefined,
  severityText: r.severityText || undefined,
  severityNumber: r.severityNumber || undefined,
  body: r.body ? value(r.body) : undefined,
  attributes: attributes(r.attributes),
  eventName: r.eventName || undefined,
  droppedAttributesCount: r.droppedAttributesCount ?? 0,
  resource: res,
  instrumentationScope: sc,
});

const logRecords = (request) => grouped(request, "resourceLogs", "scopeLogs", "logRecords", readableLogRecord);

// WIT answers: an error is thrown as the error value (a string, or `{ tag, val }` for an
// `export-error`); a thrown Error object is not a `result` error and traps the component.
const rejected = (val) => ({ tag: "rejected", val });
// A `RetryableExportError` as the WIT `retry-hint`.
const hint = (e) => ({ message: e.message, delayMs: e.delayMs === undefined ? undefined : BigInt(e.delayMs) });

// The exporter `factory` builds from `init`'s settings and resource (its failure, `init`'s error).
function build(factory, settings, res) {
  try {
    return factory(Object.fromEntries(settings), witResource(res));
  } catch (e) {
    throw `the exporter's factory failed: ${message(e)}`;
  }
}

// What an exception thrown by an exporter's `export` makes of the batch, as the WIT `export-error`.
function exportError(e) {
  if (e instanceof RetryableExportError) return { tag: "retryable", val: hint(e) };
  if (e instanceof RejectedExportError) return rejected(e.message);
  return rejected(`export threw ${message(e)}`);
}
const message = (e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

function witResource(r) {
  const plain = (v) => (v.tag === "bytes" ? Uint8Array.from(v.val) : v.val);
  return { attributes: Object.fromEntries(r.attributes.map((kv) => [kv.key, plain(kv.value)])) };
}

// One interface's functions around the user's exporter.
function adapter(factory, convert, extra) {
  let exporter = null;
  let state = "new";
  const live = (err) => {
    if (state !== "live") throw err(state === "shut" ? "the exporter is shut down" : "the exporter was not initialized");
    return exporter;
  };
  return {
    init(settings, res) {
      exporter = build(factory, settings, res);
      state = "live";
      return extra.init(exporter);
    },
    export(batch) {
      const ex = live(rejected);
      if (batch.tag !== "otlp-json") throw rejected("the JavaScript SDK reads OTLP/JSON batches");
      let result;
      try {
        ex.export(convert(JSON.parse(batch.val)), (r) => { result = r; });
      } catch (e) {
        throw exportError(e);
      }
      if (result === undefined) throw rejected("export returned without calling its resultCallback (exports must be synchronous)");
      if (result.code === ExportResultCode.SUCCESS) return;
      if (result.error instanceof RetryableExportError) {
        throw { tag: "retryable", val: hint(result.error) };
      }
      throw rejected(result.error ? `export failed: ${message(result.error)}` : "export failed");
    },
    forceFlush() {
      const ex = live(String);
      try {
        ex.forceFlush?.();
      } catch (e) {
        throw `forceFlush threw ${message(e)}`;
      }
    },
    shutdown() {
      if (state !== "live") throw state === "shut" ? "already shut down" : "the exporter was not initialized";
      state = "shut";
      try {
        exporter.shutdown?.();
      } catch (e) {
        throw `shutdown threw ${message(e)}`;
      }
    },
  };
}

/** The `spanExporter` export for exporters `factory(settings, resource)` builds: export it
 * under that name. The exporter receives `ReadableSpan`s:
 *
 * ```js
 * class Lines {
 *   export(spans, done) {
 *     for (const s of spans) console.log(s.name, s.spanContext().traceId);
 *     done({ code: ExportResultCode.SUCCESS });
 *   }
 *   shutdown() {}
 * }
 * export const spanExporter = exportSpans((settings, resource) => new Lines());
 * ```
 */
export const exportSpans = (factory) => adapter(factory, spans, { init: () => "otlp-json" });

/** The `metricExporter` export: the exporter receives `ResourceMetrics`; its
 * `selectAggregationTemporality()` (if any) for a counter decides cumulative or delta
 * aggregation:
 *
 * ```js
 * class Points {
 *   selectAggregationTemporality() { return AggregationTemporality.DELTA; }
 *   export(rm, done) {
 *     for (const sm of rm.scopeMetrics) for (const m of sm.metrics) console.log(m.descriptor.name, m.dataPoints.length);
 *     done({ code: ExportResultCode.SUCCESS });
 *   }
 *   shutdown() {}
 * }
 * export const metricExporter = exportMetrics((settings) => new Points());
 * ```
 */
export const exportMetrics = (factory) =>
  adapter(factory, resourceMetrics, {
    init: (ex) => ({
      encoding: "otlp-json",
      temporality: ex.selectAggregationTemporality?.("COUNTER") === AggregationTemporality.DELTA ? "delta" : "cumulative",
    }),
  });

/** The `logExporter` export: the exporter receives `ReadableLogRecord`s:
 *
 * ```js
 * class Records {
 *   export(records, done) {
 *     for (const r of records) console.log(r.severityText, r.body);
 *     done({ code: ExportResultCode.SUCCESS });
 *   }
 *   shutdown() {}
 * }
 * export const logExporter = exportLogs((settings) => new Records());
 * ```
 */
export const exportLogs = (factory) => adapter(factory, logRecords, { init: () => "otlp-json" });

// A span attribute value as the WIT `value` (64-bit integers as BigInt; a JS number is an
// integer when it has no fraction, as OpenTelemetry JS's OTLP encoding decides).
function witValue(v) {
  const one = (x) => {
    if (typeof x === "string") return { tag: "string", val: x };
    if (typeof x === "boolean") return { tag: "bool", val: x };
    if (typeof x === "bigint") return { tag: "s64", val: x };
    if (typeof x === "number") return Number.isInteger(x) ? { tag: "s64", val: BigInt(x) } : { tag: "f64", val: x };
    return undefined;
  };
  if (v instanceof Uint8Array) return { tag: "bytes", val: v };
  const single = one(v);
  if (single) return single;
  if (Array.isArray(v) && v.length > 0) {
    const items = v.map(one);
    const tag = items[0]?.tag;
    if (tag && items.every((i) => i?.tag === tag)) return { tag: `${tag}-array`, val: items.map((i) => i.val) };
  }
  throw new TypeError(`attribute value ${String(v)}: expected a string, boolean, number, BigInt, Uint8Array or a non-empty array of one of them`);
}

/** What a processor does to the spans of one batch, by index (the order `process` got them
 * in). A dropped span stays dropped (later changes to it are ignored); changes to one span
 * apply in the order made. */
export class Edits {
  #items = new Map();

  /** Drops span `index`: no exporter after this processor sees it. */
  drop(index) {
    this.#items.set(this.#index(index), null);
  }

  /** Sets attribute `key` of item `index`, replacing one with that key (on a metric: on each
   * of its data points). */
  setAttribute(index, key, value) {
    this.#change(index, { tag: "set-attribute", val: { key, value: witValue(value) } });
  }

  /** Removes attribute `key` of item `index`, if it has one (on a metric: from each of its
   * data points). */
  removeAttribute(index, key) {
    this.#change(index, { tag: "remove-attribute", val: key });
  }

  /** Renames item `index`: a span, a metric (a log record: sets its event name). */
  rename(index, name) {
    this.#change(index, { tag: "rename", val: name });
  }

  /** Replaces the body of log record `index` with the string `text` (log processors). */
  setBody(index, text) {
    this.#change(index, { tag: "set-body", val: String(text) });
  }

  /** Sets the status of span `index` (`SpanStatusCode`, and a message for ERROR). */
  setStatus(index, code, message = "") {
    const status = code === SpanStatusCode.OK ? { tag: "ok" } : code === SpanStatusCode.ERROR ? { tag: "error", val: message } : { tag: "unset" };
    this.#change(index, { tag: "set-status", val: status });
  }

  /** Whether span `index` is dropped. */
  isDropped(index) {
    return this.#items.has(index) && this.#items.get(index) === null;
  }

  /** How many spans change. */
  get size() {
    return this.#items.size;
  }

  #index(index) {
    if (!Number.isInteger(index) || index < 0) throw new RangeError(`span index ${index}: expected a non-negative integer`);
    return index;
  }

  #change(index, change) {
    const i = this.#index(index);
    if (!this.#items.has(i)) this.#items.set(i, []);
    this.#items.get(i)?.push(change);
  }

  /** The answer `process` returns to the host. */
  toWit() {
    return [...this.#items.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, changes]) => ({ index, action: changes === null ? { tag: "drop" } : { tag: "edit", val: changes } }));
  }
}

/** The `spanProcessor` export (world `span-processors`) for processors `factory(settings,
 * resource)` builds: export it under that name. The processor's `process(spans, edits)` gets
 * the batch's `ReadableSpan`s and records in `edits` what happens to the spans that change;
 * a throw sends the batch on unprocessed or drops it, as the entry's `on_fault` says:
 *
 * ```js
 * class Quiet {
 *   process(spans, edits) {
 *     spans.forEach((s, i) => { if (s.name === "data_loader") edits.drop(i); });
 *   }
 * }
 * export const spanProcessor = processSpans(() => new Quiet());
 * ```
 */
export const processSpans = (factory) => processor(factory, spans);

/** The `metricProcessor` export (world `metric-processors`): as `processSpans`, the
 * processor's `process(metrics, edits)` getting the collection's `MetricData`, in order across
 * scopes; a dropped metric takes its data points with it, and `edits.setAttribute(i, key, v)` /
 * `removeAttribute` apply to each of its data points:
 *
 * ```js
 * export const metricProcessor = processMetrics(() => ({
 *   process(metrics, edits) {
 *     metrics.forEach((m, i) => { if (m.descriptor.name === "train.grad_norm") edits.drop(i); });
 *   },
 * }));
 * ```
 */
export const processMetrics = (factory) => processor(factory, metricsInOrder);

// The `MetricData` of a collection, in batch order (resource, scope, metric).
const metricsInOrder = (request) =>
  (request.resourceMetrics ?? []).flatMap((rm) => (rm.scopeMetrics ?? []).flatMap((sm) => (sm.metrics ?? []).map(metricData)));

/** The `logProcessor` export (world `log-processors`): as `processSpans`, the processor's
 * `process(records, edits)` getting the batch's `ReadableLogRecord`s; `edits.rename(i, name)`
 * sets a record's event name, `edits.setBody(i, text)` its body:
 *
 * ```js
 * export const logProcessor = processLogs(() => ({
 *   process(records, edits) {
 *     records.forEach((r, i) => { if (r.severityText === "DEBUG") edits.drop(i); });
 *   },
 * }));
 * ```
 */
export const processLogs = (factory) => processor(factory, logRecords);

// One processor interface's functions around the user's processor; `convert` reads a batch.
function processor(factory, convert) {
  let processor = null;
  let state = "new";
  return {
    init(settings, res) {
      try {
        processor = factory(Object.fromEntries(settings), witResource(res));
      } catch (e) {
        throw `the processor's factory failed: ${message(e)}`;
      }
      state = "live";
      return "otlp-json";
    },
    process(batch) {
      if (state !== "live") throw state === "shut" ? "the processor is shut down" : "the processor was not initialized";
      if (batch.tag !== "otlp-json") throw "the JavaScript SDK reads OTLP/JSON batches";
      const edits = new Edits();
      try {
        processor.process(convert(JSON.parse(batch.val)), edits);
        return edits.toWit();
      } catch (e) {
        throw `process threw ${message(e)}`;
      }
    },
    shutdown() {
      if (state !== "live") throw state === "shut" ? "already shut down" : "the processor was not initialized";
      state = "shut";
      try {
        processor.shutdown?.();
      } catch (e) {
        throw `shutdown threw ${message(e)}`;
      }
    },
  };
}

// ---- HTTP and forwarding (projects built with `http = true`, `lens new js DIR --template http`)

/** The backend refused the batch for good (a 4xx, a bad key): the host drops it, counted as
 * failed, with this message. */
export class RejectedExportError extends Error {
  constructor(message) {
    super(message);
    this.name = "RejectedExportError";
  }
}

/** A request that got no response: `kind` is `"denied"` (the host refused it: its host is not
 * in `allowed_hosts`), `"connection"` (worth retrying) or `"invalid"` (its URL). */
export class HttpError extends Error {
  constructor(kind, message) {
    super(`${kind === "denied" ? "denied by the host" : kind === "invalid" ? "invalid request" : "connection failed"}: ${message}`);
    this.name = "HttpError";
    this.kind = kind;
  }
}

/** How many bytes of an error response's body a message quotes. */
export const QUOTED_BODY = 200;

/** Splits `http[s]://authority[/path]`; a URL without a path gets `defaultPath`. Throws an
 * `HttpError` of kind `"invalid"`. */
export function parseUrl(url, defaultPath = "/") {
  const https = url.startsWith("https://");
  if (!https && !url.startsWith("http://")) throw new HttpError("invalid", `\`${url}\` must start with http:// or https://`);
  const rest = url.slice(https ? 8 : 7);
  const slash = rest.indexOf("/");
  const [authority, path] = slash < 0 ? [rest, defaultPath] : [rest.slice(0, slash), rest.slice(slash)];
  if (!authority || /[@?#]/.test(authority)) throw new HttpError("invalid", `\`${url}\` has no host (or has a user, which goes in a header)`);
  return { https, authority, path, toString: () => `${https ? "https" : "http"}://${authority}${path}` };
}

/** Reads `sent` (a response `{ status, headers, body }` from `post`, or the `HttpError` it threw)
 * as OTLP exporters do: returns for a 2xx; throws `RetryableExportError` for 429, 502, 503, 504
 * (after `Retry-After` seconds, if sent) and a failed connection; `RejectedExportError` naming the
 * status and the first bytes of the body otherwise. */
export function exportResult(what, sent) {
  if (sent instanceof HttpError) {
    if (sent.kind === "connection") throw new RetryableExportError(`${what}: ${sent.message}`);
    throw new RejectedExportError(`${what}: ${sent.message}`);
  }
  if (sent.status >= 200 && sent.status < 300) return;
  let message = `${what}: HTTP ${sent.status}`;
  if (sent.body.length > 0) {
    const quoted = new TextDecoder().decode(sent.body.subarray(0, QUOTED_BODY)).trim();
    message += `: ${quoted}`;
    if (sent.body.length > QUOTED_BODY) message += `… (${sent.body.length} bytes)`;
  }
  if ([429, 502, 503, 504].includes(sent.status)) {
    const after = /^\s*\d+\s*$/.test(sent.headers["retry-after"] ?? "") ? Number(sent.headers["retry-after"]) * 1000 : undefined;
    throw new RetryableExportError(message, after);
  }
  throw new RejectedExportError(message);
}

/** POSTs `body` (a `Uint8Array` or string) to `url` with `headers` (an object) over the host's
 * `wasi:http` (the sandbox's `fetch`); resolves to `{ status, headers, body }` (lowercase header
 * names, the body a `Uint8Array`) or rejects with an `HttpError`. `timeoutMs` bounds the whole
 * request. Redirects are not followed (the host follows none with a credential either). */
export async function post(url, body, headers = {}, { timeoutMs = 10000 } = {}) {
  const target = parseUrl(url).toString();
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new HttpError("connection", `no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  const request = (async () => {
    let r;
    try {
      r = await fetch(target, { method: "POST", body, headers, redirect: "manual" });
    } catch (e) {
      // The sandbox's fetch says only "NetworkError": a denied host and a refused connection look alike.
      throw new HttpError("connection", `${message(e)} (is its host in the entry's \`allowed_hosts\`?)`);
    }
    const answer = new Uint8Array(await r.arrayBuffer());
    const names = {};
    r.headers.forEach((v, k) => { names[k.toLowerCase()] = v; });
    return { status: r.status, headers: names, body: answer };
  })();
  try {
    return await Promise.race([request, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `post`, then `exportResult`: resolves to the response of a 2xx, rejects otherwise. */
export async function send(url, body, headers = {}, options = {}) {
  let response;
  try {
    response = await post(url, body, headers, options);
  } catch (e) {
    if (e instanceof HttpError) exportResult(url, e);
    throw e;
  }
  exportResult(url, response);
  return response;
}

// A forwarding exporter's functions: the batch's OTLP bytes (or JSON text) go to the
// exporter's `export` as the host made them; `export` may return a Promise (componentize-js
// runs the event loop until it settles), so that it can `await send(...)`.
function forwarder(factory, extra) {
  let exporter = null;
  let state = "new";
  const encodings = { protobuf: "otlp-protobuf", json: "otlp-json" };
  return {
    init(settings, res) {
      exporter = build(factory, settings, res);
      const encoding = encodings[exporter.encoding ?? "protobuf"];
      if (!encoding) throw `the exporter's encoding is ${JSON.stringify(exporter.encoding)}: say "protobuf" or "json"`;
      state = "live";
      return extra(exporter, encoding);
    },
    async export(batch) {
      if (state !== "live") throw rejected(state === "shut" ? "the exporter is shut down" : "the exporter was not initialized");
      if (batch.tag !== "otlp-protobuf" && batch.tag !== "otlp-json") throw rejected("the batch is not in the encoding asked for");
      try {
        await exporter.export(batch.val);
      } catch (e) {
        throw exportError(e);
      }
    },
    async forceFlush() {
      if (state !== "live") throw state === "shut" ? "the exporter is shut down" : "the exporter was not initialized";
      try {
        await exporter.forceFlush?.();
      } catch (e) {
        throw `forceFlush threw ${message(e)}`;
      }
    },
    async shutdown() {
      if (state !== "live") throw state === "shut" ? "already shut down" : "the exporter was not initialized";
      state = "shut";
      try {
        await exporter.shutdown?.();
      } catch (e) {
        throw `shutdown threw ${message(e)}`;
      }
    },
  };
}

/** The `spanExporter` export of a forwarding exporter: `factory(settings, resource)` builds an
 * object whose `export(data)` receives each batch as an OTLP `ExportTraceServiceRequest`, as
 * protobuf bytes (`Uint8Array`), or as OTLP/JSON text if its `encoding` is `"json"`, and sends it
 * on; it may be `async`. It resolves on success and throws to fail (`RetryableExportError`,
 * `RejectedExportError`, anything else: rejected):
 *
 * ```js
 * class Forward {
 *   constructor(settings) { this.url = `${settings.endpoint}/v1/traces`; }
 *   async export(data) { await send(this.url, data, { "content-type": "application/x-protobuf" }); }
 * }
 * export const spanExporter = forwardSpans((settings) => new Forward(settings));
 * ```
 */
export const forwardSpans = (factory) => forwarder(factory, (_, encoding) => encoding);

/** The `metricExporter` of a forwarding exporter (see `forwardSpans`): `export(data)` receives
 * an OTLP `ExportMetricsServiceRequest`; the object's `temporality`, `"cumulative"` (the default)
 * or `"delta"`, is what the host aggregates counters in. */
export const forwardMetrics = (factory) =>
  forwarder(factory, (ex, encoding) => {
    const temporality = ex.temporality ?? "cumulative";
    if (temporality !== "cumulative" && temporality !== "delta") throw `the exporter's temporality is ${JSON.stringify(temporality)}: say "cumulative" or "delta"`;
    return { encoding, temporality };
  });

/** The `logExporter` of a forwarding exporter (see `forwardSpans`): `export(data)` receives an
 * OTLP `ExportLogsServiceRequest`. */
export const forwardLogs = (factory) => forwarder(factory, (_, encoding) => encoding);
