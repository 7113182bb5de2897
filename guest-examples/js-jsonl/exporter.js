// JSON lines exporter in JavaScript (componentize-js): the same objects as the Rust example,
// one per line on stdout, which the host forwards to its log (prefixed with exporter and rank).
//
// u64/s64 values arrive as BigInt: they are written as exact integers, which JSON.stringify
// cannot do, hence the small serializer below. Errors are thrown as strings: a thrown Error
// object is not a `result` error for the component and traps.

function json(v) {
  if (typeof v === "bigint") return v.toString();
  // Lists of numbers arrive as typed arrays (Uint8Array, BigInt64Array, Float64Array).
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return "[" + Array.from(v, json).join(",") + "]";
  if (v !== null && typeof v === "object") {
    return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + json(x)).join(",") + "}";
  }
  // A float stays a float (`2.0`, as serde_json writes it), so lines compare by value.
  if (typeof v === "number" && Number.isInteger(v) && Number.isFinite(v)) return v.toFixed(1);
  return JSON.stringify(v);
}

const hex = (n, width) => n.toString(16).padStart(width, "0");
const traceId = ([hi, lo]) => hex(hi, 16) + hex(lo, 16);
const attributes = (kvs) => Object.fromEntries(kvs.map((kv) => [kv.key, kv.value.val]));

function status(s) {
  if (s.tag === "error") return { code: "error", message: s.val };
  return { code: s.tag };
}

let open = false;

export const spanExporter = {
  init(settings, resource) {
    open = true;
    return "typed";
  },

  export(batch) {
    if (!open) throw "export after shutdown";
    if (batch.tag !== "typed") throw "this exporter asked for typed batches";
    const lines = [];
    for (const group of batch.val) {
      for (const s of group.spans) {
        const cx = s.spanContext;
        lines.push(json({
          name: s.name,
          trace_id: traceId(cx.traceId),
          span_id: hex(cx.spanId, 16),
          parent_span_id: hex(s.parentSpanId ?? 0n, 16),
          kind: s.spanKind,
          start_unix_nano: s.startTime,
          end_unix_nano: s.endTime,
          duration_ns: s.endTime > s.startTime ? s.endTime - s.startTime : 0n,
          status: status(s.status),
          attributes: attributes(s.attributes),
          events: s.events.map((e) => ({ name: e.name, time_unix_nano: e.time, attributes: attributes(e.attributes) })),
          links: s.links.map((l) => ({
            trace_id: traceId(l.spanContext.traceId),
            span_id: hex(l.spanContext.spanId, 16),
            attributes: attributes(l.attributes),
          })),
          scope: group.scope.name,
        }));
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
