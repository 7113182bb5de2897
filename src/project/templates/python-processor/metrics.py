

class MetricRules(Rules):
    """Metrics (the SDK's `Metric`s), by instrument name; an attribute is removed from
    each data point of the metric."""

    def process(self, metrics, edits):
        for i, metric in enumerate(metrics):
            points = metric.data.data_points
            keys = {k for point in points for k in (point.attributes or ())}
            self.apply(edits, i, metric.name, keys)
