// JSON lines exporter in JavaScript: the same objects as the Rust example, one per line on
// stdout, which the host forwards to its log (prefixed with exporter and rank), for spans,
// metrics and log records. Written as OpenTelemetry JS exporters (classes with
// `export(items, resultCallback)`) on the Lens JavaScript SDK, which hands them `ReadableSpan`s,
// `ResourceMetrics` and `ReadableLogRecord`s.
//
// 64-bit integers are BigInt (exact); the small serializer below writes them as integers and
// numbers as floats, as the other exporters do.

import {
  AggregationTemporality,
  DataPointType,
  ExportResultCode,
  exportLogs,
  exportMetrics,
  exportSpans,
  hrTimeToNanos,
} from "../../sdk/js/lens-exporter-sdk.js";

function json(v) {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return "[" + Array.from(v, json).join(",") + "]";
  if (v !== null && typeof v === "object") {
    return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + json(x)).join(",") + "}";
  }
  // A float stays a float (`2.0`, as serde_json writes it), so lines compare by value.
  if (typeof v === "number" && Number.isInteger(v) && Number.isFinite(v)) return v.toFixed(1);
  return JSON.stringify(v ?? null);
}

const KINDS = ["internal", "server", "client", "producer", "consumer"];
const STATUS = ["unset", "ok", "error"];
const ZERO_ID = "0000000000000000";
const SUCCESS = { code: ExportResultCode.SUCCESS };
const nanos = (hr) => (hr === undefined ? null : hrTimeToNanos(hr));
// Bytes as a list of integers.
const plain = (attrs) =>
  Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, v instanceof Uint8Array ? Array.from(v, BigInt) : v]));

class SpanLines {
  export(spans, done) {
    for (const s of spans) {
      const cx = s.spanContext();
      const status = STATUS[s.status.code];
      console.log(json({
        name: s.name,
        trace_id: cx.traceId,
        span_id: cx.spanId,
        parent_span_id: s.parentSpanContext?.spanId ?? ZERO_ID,
        kind: KINDS[s.kind],
        start_unix_nano: nanos(s.startTime),
        end_unix_nano: nanos(s.endTime),
        duration_ns: nanos(s.duration),
        status: status === "error" ? { code: status, message: s.status.message ?? "" } : { code: status },
        attributes: plain(s.attributes),
        events: s.events.map((e) => ({ name: e.name, time_unix_nano: nanos(e.time), attributes: plain(e.attributes) })),
        links: s.links.map((l) => ({ trace_id: l.context.traceId, span_id: l.context.spanId, attributes: plain(l.attributes) })),
        scope: s.instrumentationScope.name,
      }));
    }
    done(SUCCESS);
  }

  shutdown() {}
}

const KIND_NAMES = {
  [DataPointType.GAUGE]: "gauge",
  [DataPointType.SUM]: "sum",
  [DataPointType.HISTOGRAM]: "histogram",
  [DataPointType.EXPONENTIAL_HISTOGRAM]: "exponential_histogram",
};
const optional = (x) => (x === undefined ? null : x);
const int = (x) => BigInt(x);

// One line per data point, as the Rust example writes them.
function* pointLines(m, scope) {
  const kind = KIND_NAMES[m.dataPointType];
  const temporality = m.aggregationTemporality === AggregationTemporality.DELTA ? "delta" : "cumulative";
  for (const p of m.dataPoints) {
    const line = {
      name: m.descriptor.name,
      description: m.descriptor.description,
      unit: m.descriptor.unit,
      kind,
      attributes: plain(p.attributes),
      start_unix_nano: nanos(p.startTime),
      time_unix_nano: nanos(p.endTime),
      scope,
    };
    const v = p.value;
    if (kind === "gauge") yield { ...line, value: v };
    else if (kind === "sum") yield { ...line, value: v, monotonic: m.isMonotonic, temporality };
    else {
      const common = { count: int(v.count), sum: optional(v.sum), min: optional(v.min), max: optional(v.max) };
      if (kind === "histogram") {
        yield { ...line, ...common, bounds: v.buckets.boundaries, bucket_counts: v.buckets.counts.map(int), temporality };
      } else {
        const side = (b) => ({ offset: int(b.offset), counts: b.bucketCounts.map(int) });
        yield {
          ...line, ...common, scale: int(v.scale), zero_count: int(v.zeroCount),
          positive: side(v.positive), negative: side(v.negative), temporality,
        };
      }
    }
  }
}

class MetricLines {
  constructor(settings) {
    const wanted = settings.temporality ?? "cumulative";
    if (wanted !== "cumulative" && wanted !== "delta") {
      throw new Error(`\`temporality\` must be cumulative or delta, not \`${wanted}\``);
    }
    this.temporality = wanted === "delta" ? AggregationTemporality.DELTA : AggregationTemporality.CUMULATIVE;
  }

  selectAggregationTemporality() {
    return this.temporality;
  }

  export(metrics, done) {
    for (const sm of metrics.scopeMetrics) {
      for (const m of sm.metrics) {
        for (const line of pointLines(m, sm.scope.name)) console.log(json(line));
      }
    }
    done(SUCCESS);
  }

  shutdown() {}
}

class LogLines {
  export(records, done) {
    for (const r of records) {
      console.log(json({
        time_unix_nano: nanos(r.hrTime),
        observed_unix_nano: nanos(r.hrTimeObserved),
        severity_text: optional(r.severityText),
        severity_number: r.severityNumber === undefined ? null : int(r.severityNumber),
        body: r.body instanceof Uint8Array ? Array.from(r.body, BigInt) : optional(r.body),
        attributes: plain(r.attributes),
        event_name: optional(r.eventName),
        trace_id: r.spanContext?.traceId ?? null,
        span_id: r.spanContext?.spanId ?? null,
        scope: r.instrumentationScope.name,
      }));
    }
    done(SUCCESS);
  }

  shutdown() {}
}

// The registration: componentize-js looks for these three exports.
export const spanExporter = exportSpans(() => new SpanLines());
export const metricExporter = exportMetrics((settings) => new MetricLines(settings));
export const logExporter = exportLogs(() => new LogLines());
