// A span processor in JavaScript: drops noisy spans by name before any exporter sees them, as
// `rust-filter` does: those named exactly in the `names` setting, or starting with one of
// `prefixes` (both comma-separated). The spans it keeps are not named in its answer.
//
//   [[traces.processors]]
//   kind = "wasm"
//   path = "guest-examples/dist/js-filter.wasm"
//   settings = { names = "data_loader", prefixes = "prefetch." }

import { processSpans } from "../../sdk/js/lens-exporter-sdk.js";

const list = (s) => (s ?? "").split(",").map((x) => x.trim()).filter((x) => x.length > 0);

class Filter {
  constructor(settings) {
    this.names = new Set(list(settings.names));
    this.prefixes = list(settings.prefixes);
    if (this.names.size === 0 && this.prefixes.length === 0) {
      throw new Error("set `names` or `prefixes`: this filter would drop nothing");
    }
  }

  process(spans, edits) {
    spans.forEach((span, i) => {
      if (this.names.has(span.name) || this.prefixes.some((p) => span.name.startsWith(p))) edits.drop(i);
    });
  }
}

// The registration: componentize-js looks for this export.
export const spanProcessor = processSpans((settings) => new Filter(settings));
