
/** One line per span on stdout (setting `prefix`, default `span`). */
class SpanLines {
  constructor(settings, resource) {
    this.prefix = settings.prefix ?? "span";
    this.rank = resource.attributes["dl.rank"] ?? 0n;
  }

  export(spans, resultCallback) {
    for (const s of spans) {
      const ms = Number(hrTimeToNanos(s.duration)) / 1e6;
      console.log(`${this.prefix} rank=${this.rank} ${s.name} ${ms.toFixed(3)}ms trace=${s.spanContext().traceId}`);
    }
    resultCallback({ code: ExportResultCode.SUCCESS });
  }

  forceFlush() {}

  shutdown() {}
}

export const spanExporter = exportSpans((settings, resource) => new SpanLines(settings, resource));
