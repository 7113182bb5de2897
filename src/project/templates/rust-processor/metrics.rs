
/// Metrics, by instrument name; an attribute is removed from each data point of the metric.
struct MetricRules(Rules);

impl lens_exporter_sdk::MetricProcessor for MetricRules {
    fn new(config: Config) -> Result<Self, String> {
        Ok(MetricRules(Rules::new(&config)))
    }

    fn process(
        &mut self,
        batch: lens_exporter_sdk::MetricBatch<'_>,
        edits: &mut Edits,
    ) -> Result<(), String> {
        let lens_exporter_sdk::MetricBatch::Scopes(scopes) = batch else {
            return Err("this processor reads typed collections".into());
        };
        for (i, metric) in scopes.iter().flat_map(|s| &s.metrics).enumerate() {
            let mut keys: Vec<&str> = metric
                .data_point_attributes()
                .into_iter()
                .flatten()
                .map(|kv| kv.key.as_str())
                .collect();
            keys.sort_unstable();
            keys.dedup();
            self.0.apply(i, &metric.name, keys.into_iter(), edits);
        }
        Ok(())
    }
}
