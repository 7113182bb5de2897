
// Metrics (`MetricData`), by instrument name; an attribute is removed from each data point.
export const metricProcessor = processMetrics((settings) => {
  const rules = new Rules(settings);
  return {
    process(metrics, edits) {
      metrics.forEach((m, i) => {
        const keys = new Set(m.dataPoints.flatMap((p) => Object.keys(p.attributes)));
        rules.apply(edits, i, m.descriptor.name, [...keys]);
      });
    },
  };
});
