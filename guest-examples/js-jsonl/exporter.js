// JSON lines exporter in JavaScript (componentize-js): the same objects as the Rust example,
// one per line on stdout, which the host forwards to its log (prefixed with exporter and rank).
//
// It asks for `otlp-json` batches. 64-bit integers (decimal strings there) become BigInt and are
// written as exact integers, which JSON.stringify cannot do, hence the small serializer below. Errors are thrown as strings: a thrown Error
// object is not a `result` error for the component and traps.

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
const ZERO_ID = "0000000000000000";

// OTLP/JSON `AnyValue`: one member; 64-bit integers arrive as decimal strings (kept exact
// as BigInt), doubles as numbers or "NaN"/"Infinity".
function value(v) {
  if ("stringValue" in v) return v.stringValue;
  if ("intValue" in v) return BigInt(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("boolValue" in v) return v.boolValue;
  if ("arrayValue" in v) return (v.arrayValue.values ?? []).map(value);
  return null;
}

const attributes = (kvs) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, value(kv.value)]));

function status(s) {
  const code = STATUS[s?.code ?? 0] ?? "unset";
  return code === "error" ? { code, message: s.message ?? "" } : { code };
}

let open = false;

export const spanExporter = {
  init(settings, resource) {
    open = true;
    // OTLP/JSON: one string per batch for the engine's native JSON.parse, far cheaper than
    // building typed records.
    return "otlp-json";
  },

  export(batch) {
    if (!open) throw "export after shutdown";
    if (batch.tag !== "otlp-json") throw "this exporter asked for otlp-json batches";
    const lines = [];
    for (const rs of JSON.parse(batch.val).resourceSpans) {
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

  forceFlush() {},

  shutdown() {
    if (!open) throw "already shut down";
    open = false;
  },
};
