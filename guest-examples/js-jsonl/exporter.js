// JSON lines exporter in JavaScript (componentize-js): the same objects as the Rust example,
// one per line on stdout, which the host forwards to its log (prefixed with exporter and rank),
// for spans, metrics and log records (world `all-signals`; one instance per signal).
//
// It asks for `otlp-json` batches. 64-bit integers (decimal strings there) become BigInt and are
// written as exact integers, which JSON.stringify cannot do, hence the small serializer below.
// Errors are thrown as the WIT error value (a string, or `{ tag: "rejected", val }` for an
// `export-error`): a thrown Error object is not a `result` error for the component and traps.

function json(v) {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return "[" + Array.from(v, json).join(",") + "]";
  if (v !== null && typeof v === "object") {
    return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + json(x)).join(",") + "}";
  }
  // A float stays a float (`2.0`, as serde_json writes it), so lines compare by value.
  if (typeof v === "number" && Number.isInteger(v) && Number.isFinite(v)) return v.toFixed(1);
  return JSON.stringify(v);
}

// OTLP `Span.SpanKind` and `Status.code` numbers.
const KINDS = { 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer" };
const STATUS = { 1: "ok", 2: "error" };
// OTLP `AggregationTemporality` numbers.
const TEMPORALITY = { 1: "delta", 2: "cumulative" };
const ZERO_ID = "0000000000000000";

// OTLP/JSON `AnyValue`: one member; 64-bit integers arrive as decimal strings (kept exact
// as BigInt), doubles as numbers or "NaN"/"Infinity".
function value(v) {
  if ("stringValue" in v) return v.stringValue;
  if ("intValue" in v) return BigInt(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("boolValue" in v) return v.boolValue;
  if ("arrayValue" in v) return (v.arrayValue.values ?? []).map(value);
  if ("kvlistValue" in v) return attributes(v.kvlistValue.values);
  if ("bytesValue" in v) return Array.from(atob(v.bytesValue), (c) => BigInt(c.charCodeAt(0)));
  return null;
}

const attributes = (kvs) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, value(kv.value)]));

function status(s) {
  const code = STATUS[s?.code ?? 0] ?? "unset";
  return code === "error" ? { code, message: s.message ?? "" } : { code };
}

let open = false;

const rejected = (val) => ({ tag: "rejected", val });

// The batch's OTLP/JSON request, or the error to throw.
function request(batch) {
  if (!open) throw rejected("export after shutdown");
  if (batch.tag !== "otlp-json") throw rejected("this exporter asked for otlp-json batches");
  return JSON.parse(batch.val);
}

const lifecycle = {
  forceFlush() {},

  shutdown() {
    if (!open) throw "already shut down";
    open = false;
  },
};

export const spanExporter = {
  init(settings, resource) {
    open = true;
    // OTLP/JSON: one string per batch for the engine's native JSON.parse, far cheaper than
    // building typed records.
    return "otlp-json";
  },

  export(batch) {
    const lines = [];
    for (const rs of request(batch).resourceSpans ?? []) {
      for (const group of rs.scopeSpans ?? []) {
        const scope = group.scope.name ?? "";
        for (const s of group.spans ?? []) {
          const start = BigInt(s.startTimeUnixNano ?? 0);
          const end = BigInt(s.endTimeUnixNano ?? 0);
          lines.push(json({
            name: s.name ?? "",
            trace_id: s.traceId,
            span_id: s.spanId,
            parent_span_id: s.parentSpanId ?? ZERO_ID,
            kind: KINDS[s.kind] ?? "internal",
            start_unix_nano: start,
            end_unix_nano: end,
            duration_ns: end > start ? end - start : 0n,
            status: status(s.status),
            attributes: attributes(s.attributes),
            events: (s.events ?? []).map((e) => ({
              name: e.name ?? "",
              time_unix_nano: BigInt(e.timeUnixNano ?? 0),
              attributes: attributes(e.attributes),
            })),
            links: (s.links ?? []).map((l) => ({
              trace_id: l.traceId,
              span_id: l.spanId,
              attributes: attributes(l.attributes),
            })),
            scope,
          }));
        }
      }
    }
    for (const line of lines) console.log(line);
  },
  ...lifecycle,
};

const number = (p) => ("asDouble" in p ? Number(p.asDouble) : BigInt(p.asInt ?? 0));
const nanos = (t) => (t === undefined || t === "0" || t === 0 ? null : BigInt(t));

function point(m, kind, p, scope) {
  return {
    name: m.name ?? "",
    description: m.description ?? "",
    unit: m.unit ?? "",
    kind,
    attributes: attributes(p.attributes),
    start_unix_nano: nanos(p.startTimeUnixNano),
    time_unix_nano: BigInt(p.timeUnixNano ?? 0),
    scope,
  };
}

// One line per data point, as the Rust example writes them.
function* metricLines(m, scope) {
  const t = (d) => TEMPORALITY[d.aggregationTemporality] ?? "unspecified";
  if (m.gauge) {
    for (const p of m.gauge.dataPoints ?? []) yield { ...point(m, "gauge", p, scope), value: number(p) };
  } else if (m.sum) {
    for (const p of m.sum.dataPoints ?? []) {
      yield { ...point(m, "sum", p, scope), value: number(p), monotonic: !!m.sum.isMonotonic, temporality: t(m.sum) };
    }
  } else if (m.histogram) {
    for (const p of m.histogram.dataPoints ?? []) {
      yield {
        ...point(m, "histogram", p, scope),
        count: BigInt(p.count ?? 0), sum: p.sum ?? null, min: p.min ?? null, max: p.max ?? null,
        bounds: p.explicitBounds ?? [], bucket_counts: (p.bucketCounts ?? []).map(BigInt),
        temporality: t(m.histogram),
      };
    }
  } else if (m.exponentialHistogram) {
    const side = (b) => ({ offset: BigInt(b?.offset ?? 0), counts: (b?.bucketCounts ?? []).map(BigInt) });
    for (const p of m.exponentialHistogram.dataPoints ?? []) {
      yield {
        ...point(m, "exponential_histogram", p, scope),
        count: BigInt(p.count ?? 0), sum: p.sum ?? null, min: p.min ?? null, max: p.max ?? null,
        scale: BigInt(p.scale ?? 0),
        zero_count: BigInt(p.zeroCount ?? 0), positive: side(p.positive), negative: side(p.negative),
        temporality: t(m.exponentialHistogram),
      };
    }
  }
}

export const metricExporter = {
  init(settings, resource) {
    const wanted = new Map(settings).get("temporality") ?? "cumulative";
    if (wanted !== "cumulative" && wanted !== "delta") {
      throw `\`temporality\` must be cumulative or delta, not \`${wanted}\``;
    }
    open = true;
    return { encoding: "otlp-json", temporality: wanted };
  },

  export(batch) {
    for (const rm of request(batch).resourceMetrics ?? []) {
      for (const group of rm.scopeMetrics ?? []) {
        const scope = group.scope?.name ?? "";
        for (const m of group.metrics ?? []) {
          for (const line of metricLines(m, scope)) console.log(json(line));
        }
      }
    }
  },
  ...lifecycle,
};

export const logExporter = {
  init(settings, resource) {
    open = true;
    return "otlp-json";
  },

  export(batch) {
    for (const rl of request(batch).resourceLogs ?? []) {
      for (const group of rl.scopeLogs ?? []) {
        const scope = group.scope?.name ?? "";
        for (const r of group.logRecords ?? []) {
          console.log(json({
            time_unix_nano: nanos(r.timeUnixNano),
            observed_unix_nano: nanos(r.observedTimeUnixNano),
            severity_text: r.severityText || null,
            severity_number: r.severityNumber ? BigInt(r.severityNumber) : null,
            body: r.body ? value(r.body) : null,
            attributes: attributes(r.attributes),
            event_name: r.eventName || null,
            trace_id: r.traceId || null,
            span_id: r.spanId || null,
            scope,
          }));
        }
      }
    }
  },
  ...lifecycle,
};
