
/// One line per metric on stdout (setting `prefix`, default `metric`). Sums and histograms are
/// aggregated cumulatively; return another `Temporality` from `temporality` for deltas.
struct MetricLines {
    prefix: String,
}

impl lens_exporter_sdk::MetricExporter for MetricLines {
    fn new(config: Config) -> Result<Self, String> {
        Ok(MetricLines {
            prefix: config.setting("prefix").unwrap_or("metric").to_string(),
        })
    }

    fn export(&mut self, batch: lens_exporter_sdk::MetricBatch<'_>) -> ExportResult {
        use lens_exporter_sdk::metrics::MetricData;
        let lens_exporter_sdk::MetricBatch::Scopes(scopes) = batch else {
            return Ok(());
        };
        let mut out = String::new();
        for metric in scopes.iter().flat_map(|s| &s.metrics) {
            let (kind, points) = match &metric.data {
                MetricData::Gauge(g) => ("gauge", g.data_points.len()),
                MetricData::Sum(s) => ("sum", s.data_points.len()),
                MetricData::Histogram(h) => ("histogram", h.data_points.len()),
                MetricData::ExponentialHistogram(h) => {
                    ("exponential histogram", h.data_points.len())
                }
            };
            out.push_str(&format!(
                "{} {} {kind} {points} points\n",
                self.prefix, metric.name
            ));
        }
        write_out(&out)
    }
}
