

class MetricLines(OtelMetricExporter):
    """One line per data point on stdout (setting `prefix`, default `metric`). The host
    aggregates sums and histograms cumulatively; pass `preferred_temporality` to `__init__`
    (as any OpenTelemetry metric exporter does) for deltas."""

    def __init__(self, settings):
        super().__init__()
        self.prefix = settings.get("prefix", "metric")

    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        lines = []
        for rm in metrics_data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = type(m.data).__name__
                    for p in m.data.data_points:
                        value = getattr(p, "value", None)
                        if value is None:  # histograms
                            value = f"count={p.count} sum={p.sum}"
                        attrs = dict(p.attributes or {})
                        lines.append(f"{self.prefix} {m.name} {kind} {value} {attrs}\n")
        sys.stdout.write("".join(lines))
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis=10_000):
        sys.stdout.flush()
        return True

    def shutdown(self, timeout_millis=30_000, **kwargs):
        sys.stdout.flush()
