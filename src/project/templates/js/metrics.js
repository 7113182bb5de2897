
/** One line per data point on stdout (setting `prefix`, default `metric`). Sums and histograms
 * are aggregated cumulatively; return `AggregationTemporality.DELTA` from
 * `selectAggregationTemporality` for deltas. */
class MetricLines {
  constructor(settings) {
    this.prefix = settings.prefix ?? "metric";
  }

  export(resourceMetrics, resultCallback) {
    for (const sm of resourceMetrics.scopeMetrics) {
      for (const m of sm.metrics) {
        for (const p of m.dataPoints) {
          const v = typeof p.value === "object" ? `count=${p.value.count} sum=${p.value.sum}` : p.value;
          console.log(`${this.prefix} ${m.descriptor.name} ${v}`);
        }
      }
    }
    resultCallback({ code: ExportResultCode.SUCCESS });
  }

  forceFlush() {}

  shutdown() {}
}

export const metricExporter = exportMetrics((settings) => new MetricLines(settings));
