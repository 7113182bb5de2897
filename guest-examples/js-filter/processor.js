// A processor in JavaScript for spans, metrics and log records: drops noise by name before any
// exporter sees it, as `rust-filter` does: spans, metrics and log records (by event name)
// named exactly in the `names` setting, or starting with one of `prefixes` (both
// comma-separated). What it keeps is not named in its answer.
//
//   [[traces.processors]]
//   kind = "wasm"
//   path = "guest-examples/dist/js-filter.wasm"
//   settings = { names = "data_loader", prefixes = "prefetch." }

import { processLogs, processMetrics, processSpans } from "../../sdk/js/lens-exporter-sdk.js";

const list = (s) => (s ?? "").split(",").map((x) => x.trim()).filter((x) => x.length > 0);

class Filter {
  constructor(settings, name) {
    this.names = new Set(list(settings.names));
    this.prefixes = list(settings.prefixes);
    this.name = name;
    if (this.names.size === 0 && this.prefixes.length === 0) {
      throw new Error("set `names` or `prefixes`: this filter would drop nothing");
    }
  }

  matches(name) {
    return name !== undefined && (this.names.has(name) || this.prefixes.some((p) => name.startsWith(p)));
  }

  process(items, edits) {
    items.forEach((item, i) => {
      if (this.matches(this.name(item))) edits.drop(i);
    });
  }
}

// The registrations: componentize-js looks for these exports.
export const spanProcessor = processSpans((settings) => new Filter(settings, (s) => s.name));
export const metricProcessor = processMetrics((settings) => new Filter(settings, (m) => m.descriptor.name));
export const logProcessor = processLogs((settings) => new Filter(settings, (r) => r.eventName));
