//! The Python SDK's `MetricsData` (what a `MetricExporter` gets) read, under the GIL, into an
//! OTLP `ExportMetricsServiceRequest`: the Rust SDK's own `ResourceMetrics` cannot be built
//! outside it, and the host encodes every guest encoding from the request
//! (`WasmMetricExporter::export_otlp`). Field for field what the Python SDK's OTLP encoder
//! (`opentelemetry-exporter-otlp-proto-common`) writes: a gauge has no start time, a histogram
//! always a sum, minimum and maximum, an exponential histogram's empty bucket range none
//! (`python/tests/test_signals.py` compares the two).

use lens::opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use lens::opentelemetry_proto::tonic::common::v1 as common;
use lens::opentelemetry_proto::tonic::metrics::v1 as otlp;
use lens::opentelemetry_proto::tonic::resource::v1::Resource as OtlpResource;
use lens::opentelemetry_proto::transform::common::tonic::Attributes;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt};

use super::{attribute_map, instrumentation_scope, text};

/// A collection as the OTLP request, and the Python object of its first resource (whose
/// attributes the guest's `init` gets).
pub struct Collection<'py> {
    pub request: ExportMetricsServiceRequest,
    pub resource: Option<Bound<'py, PyAny>>,
}

/// Reads a `MetricsData`.
pub fn collection<'py>(data: &Bound<'py, PyAny>) -> PyResult<Collection<'py>> {
    let py = data.py();
    let mut resource_metrics = Vec::new();
    let mut first = None;
    for rm in data.getattr(intern!(py, "resource_metrics"))?.try_iter()? {
        let rm = rm?;
        let resource = rm.getattr(intern!(py, "resource"))?;
        let mut scope_metrics = Vec::new();
        for sm in rm.getattr(intern!(py, "scope_metrics"))?.try_iter()? {
            scope_metrics.push(scope_metrics_of(&sm?)?);
        }
        resource_metrics.push(otlp::ResourceMetrics {
            resource: Some(otlp_resource(&resource)?),
            scope_metrics,
            schema_url: optional_text(&resource.getattr(intern!(py, "schema_url"))?)?,
        });
        first.get_or_insert(resource);
    }
    Ok(Collection {
        request: ExportMetricsServiceRequest { resource_metrics },
        resource: first,
    })
}

/// A resource's attributes as OTLP's (the Python encoder writes no dropped count).
pub(crate) fn otlp_resource(resource: &Bound<'_, PyAny>) -> PyResult<OtlpResource> {
    let (attrs, _) = super::attributes_of(resource)?;
    Ok(OtlpResource {
        attributes: Attributes::from(attrs).0,
        ..Default::default()
    })
}

/// A scope as OTLP's (name, version, attributes), and its schema URL.
pub(crate) fn otlp_scope(
    scope: &Bound<'_, PyAny>,
) -> PyResult<(common::InstrumentationScope, String)> {
    let s = instrumentation_scope(scope)?;
    Ok((
        common::InstrumentationScope {
            name: s.name().to_string(),
            version: s.version().unwrap_or_default().to_string(),
            attributes: Attributes::from(s.attributes().cloned()).0,
            dropped_attributes_count: 0,
        },
        s.schema_url().unwrap_or_default().to_string(),
    ))
}

fn scope_metrics_of(sm: &Bound<'_, PyAny>) -> PyResult<otlp::ScopeMetrics> {
    let py = sm.py();
    let (scope, schema_url) = otlp_scope(&sm.getattr(intern!(py, "scope"))?)?;
    let mut metrics = Vec::new();
    for m in sm.getattr(intern!(py, "metrics"))?.try_iter()? {
        let m = m?;
        metrics.push(otlp::Metric {
            name: text(&m.getattr(intern!(py, "name"))?)?,
            description: optional_text(&m.getattr(intern!(py, "description"))?)?,
            unit: optional_text(&m.getattr(intern!(py, "unit"))?)?,
            metadata: Vec::new(),
            data: data(&m.getattr(intern!(py, "data"))?)?,
        });
    }
    Ok(otlp::ScopeMetrics {
        scope: Some(scope),
        metrics,
        schema_url,
    })
}

fn optional_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_none() {
        Ok(String::new())
    } else {
        text(v)
    }
}

/// The metric's points by the class of its data (as the Python encoder's `isinstance`); an
/// unknown class carries none.
fn data(d: &Bound<'_, PyAny>) -> PyResult<Option<otlp::metric::Data>> {
    use otlp::metric::Data;
    let py = d.py();
    let class = d.get_type().name()?.to_cow()?.into_owned();
    let points = d.getattr(intern!(py, "data_points"))?;
    let temporality = |d: &Bound<'_, PyAny>| {
        d.getattr(intern!(py, "aggregation_temporality"))?
            .extract::<i32>()
    };
    Ok(Some(match class.as_str() {
        "Gauge" => Data::Gauge(otlp::Gauge {
            data_points: number_points(&points, false)?,
        }),
        "Sum" => Data::Sum(otlp::Sum {
            data_points: number_points(&points, true)?,
            aggregation_temporality: temporality(d)?,
            is_monotonic: d.getattr(intern!(py, "is_monotonic"))?.extract()?,
        }),
        "Histogram" => Data::Histogram(otlp::Histogram {
            data_points: histogram_points(&points)?,
            aggregation_temporality: temporality(d)?,
        }),
        "ExponentialHistogram" => Data::ExponentialHistogram(otlp::ExponentialHistogram {
            data_points: exponential_points(&points)?,
            aggregation_temporality: temporality(d)?,
        }),
        _ => return Ok(None),
    }))
}

fn attributes(
    p: &Bound<'_, PyAny>,
    name: &Bound<'_, pyo3::types::PyString>,
) -> PyResult<Vec<common::KeyValue>> {
    Ok(Attributes::from(attribute_map(&p.getattr(name)?)?.0).0)
}

/// A number as OTLP's `as_int` (an `int` within `i64`) or `as_double`.
fn number(v: &Bound<'_, PyAny>) -> PyResult<Result<i64, f64>> {
    if v.is_instance_of::<PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            return Ok(Ok(i));
        }
    } else if !v.is_instance_of::<PyFloat>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "a metric value must be an int or a float, not {}",
            v.get_type().name()?
        )));
    }
    Ok(Err(v.extract()?))
}

fn exemplars(p: &Bound<'_, PyAny>) -> PyResult<Vec<otlp::Exemplar>> {
    let py = p.py();
    let mut out = Vec::new();
    for e in p.getattr(intern!(py, "exemplars"))?.try_iter()? {
        let e = e?;
        let span_id = e.getattr(intern!(py, "span_id"))?;
        let trace_id = e.getattr(intern!(py, "trace_id"))?;
        let (span_id, trace_id) = if span_id.is_none() || trace_id.is_none() {
            (Vec::new(), Vec::new())
        } else {
            (
                span_id.extract::<u64>()?.to_be_bytes().to_vec(),
                trace_id.extract::<u128>()?.to_be_bytes().to_vec(),
            )
        };
        out.push(otlp::Exemplar {
            filtered_attributes: attributes(&e, intern!(py, "filtered_attributes"))?,
            time_unix_nano: e.getattr(intern!(py, "time_unix_nano"))?.extract()?,
            span_id,
            trace_id,
            value: Some(match number(&e.getattr(intern!(py, "value"))?)? {
                Ok(i) => otlp::exemplar::Value::AsInt(i),
                Err(f) => otlp::exemplar::Value::AsDouble(f),
            }),
        });
    }
    Ok(out)
}

fn times(p: &Bound<'_, PyAny>, start: bool) -> PyResult<(u64, u64)> {
    let py = p.py();
    let start = if start {
        p.getattr(intern!(py, "start_time_unix_nano"))?
            .extract::<Option<u64>>()?
            .unwrap_or(0)
    } else {
        0
    };
    Ok((start, p.getattr(intern!(py, "time_unix_nano"))?.extract()?))
}

fn number_points(points: &Bound<'_, PyAny>, start: bool) -> PyResult<Vec<otlp::NumberDataPoint>> {
    let py = points.py();
    let mut out = Vec::new();
    for p in points.try_iter()? {
        let p = p?;
        let (start_time_unix_nano, time_unix_nano) = times(&p, start)?;
        out.push(otlp::NumberDataPoint {
            attributes: attributes(&p, intern!(py, "attributes"))?,
            start_time_unix_nano,
            time_unix_nano,
            exemplars: exemplars(&p)?,
            flags: 0,
            value: Some(match number(&p.getattr(intern!(py, "value"))?)? {
                Ok(i) => otlp::number_data_point::Value::AsInt(i),
                Err(f) => otlp::number_data_point::Value::AsDouble(f),
            }),
        });
    }
    Ok(out)
}

fn float(p: &Bound<'_, PyAny>, name: &Bound<'_, pyo3::types::PyString>) -> PyResult<Option<f64>> {
    p.getattr(name)?.extract()
}

fn histogram_points(points: &Bound<'_, PyAny>) -> PyResult<Vec<otlp::HistogramDataPoint>> {
    let py = points.py();
    let mut out = Vec::new();
    for p in points.try_iter()? {
        let p = p?;
        let (start_time_unix_nano, time_unix_nano) = times(&p, true)?;
        out.push(otlp::HistogramDataPoint {
            attributes: attributes(&p, intern!(py, "attributes"))?,
            start_time_unix_nano,
            time_unix_nano,
            count: p.getattr(intern!(py, "count"))?.extract()?,
            sum: float(&p, intern!(py, "sum"))?,
            bucket_counts: p.getattr(intern!(py, "bucket_counts"))?.extract()?,
            explicit_bounds: p.getattr(intern!(py, "explicit_bounds"))?.extract()?,
            exemplars: exemplars(&p)?,
            flags: 0,
            min: float(&p, intern!(py, "min"))?,
            max: float(&p, intern!(py, "max"))?,
        });
    }
    Ok(out)
}

fn buckets(
    b: &Bound<'_, PyAny>,
) -> PyResult<Option<otlp::exponential_histogram_data_point::Buckets>> {
    let py = b.py();
    let bucket_counts: Vec<u64> = b.getattr(intern!(py, "bucket_counts"))?.extract()?;
    if bucket_counts.is_empty() {
        return Ok(None);
    }
    Ok(Some(otlp::exponential_histogram_data_point::Buckets {
        offset: b.getattr(intern!(py, "offset"))?.extract()?,
        bucket_counts,
    }))
}

fn exponential_points(
    points: &Bound<'_, PyAny>,
) -> PyResult<Vec<otlp::ExponentialHistogramDataPoint>> {
    let py = points.py();
    let mut out = Vec::new();
    for p in points.try_iter()? {
        let p = p?;
        let (start_time_unix_nano, time_unix_nano) = times(&p, true)?;
        out.push(otlp::ExponentialHistogramDataPoint {
            attributes: attributes(&p, intern!(py, "attributes"))?,
            start_time_unix_nano,
            time_unix_nano,
            count: p.getattr(intern!(py, "count"))?.extract()?,
            sum: float(&p, intern!(py, "sum"))?,
            scale: p.getattr(intern!(py, "scale"))?.extract()?,
            zero_count: p.getattr(intern!(py, "zero_count"))?.extract()?,
            positive: buckets(&p.getattr(intern!(py, "positive"))?)?,
            negative: buckets(&p.getattr(intern!(py, "negative"))?)?,
            flags: p.getattr(intern!(py, "flags"))?.extract()?,
            exemplars: exemplars(&p)?,
            min: float(&p, intern!(py, "min"))?,
            max: float(&p, intern!(py, "max"))?,
            zero_threshold: 0.0,
        });
    }
    Ok(out)
}
