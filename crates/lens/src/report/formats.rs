//! The line formats the report reads, one JSON object per line:
//!
//! - Lens's JSON-lines (the built-in exporter, `guest-examples/*-jsonl`, the native JSON
//!   exporter): spans with `span_id`/`start_unix_nano`, metric points with `kind` and
//!   `time_unix_nano`, log records with `severity_number`;
//! - OpenTelemetry-Python's console JSON on one line (NeMo Lens's console exporters since
//!   0.2.0): spans with `context` and ISO times, `resource_metrics` objects, log records with
//!   `timestamp`.
//!
//! Each line becomes a [`Record`] or the reason it is not one.

use serde_json::{Map, Value};

use super::limits::{ATTRIBUTE_CHARS, ATTRIBUTES_PER_SPAN, BODY_CHARS, MAX_RANK};

/// Who wrote a line, when the line says it (its resource, or `dl.rank` among its attributes).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Origin {
    pub rank: Option<u32>,
    pub node: Option<String>,
}

#[derive(Debug)]
pub struct SpanLine {
    pub origin: Origin,
    pub name: String,
    pub span_id: u64,
    pub parent: u64,
    pub start: u64,
    pub end: u64,
    pub attributes: Map<String, Value>,
}

#[derive(Debug)]
pub struct MetricLine {
    pub origin: Origin,
    pub name: String,
    pub unit: String,
    pub kind: String,
    pub time: u64,
    pub value: f64,
}

#[derive(Debug)]
pub struct LogLine {
    pub origin: Origin,
    pub time: u64,
    pub severity_number: i64,
    pub severity_text: String,
    pub body: String,
    pub scope: String,
}

#[derive(Debug)]
pub enum Record {
    Span(SpanLine),
    /// One line may hold several points (OpenTelemetry-Python's `resource_metrics`).
    Metrics(Vec<MetricLine>),
    Log(LogLine),
}

/// A line that is JSON but not a record the report can use.
#[derive(Debug, PartialEq)]
pub enum NotARecord {
    /// No shape the report knows (a newer format, another tool's lines).
    Unknown,
    /// A known shape with a field missing or of the wrong type.
    Bad(&'static str),
    /// A span that ends before it starts.
    EndsBeforeStart,
}

/// The record a parsed line holds.
pub fn record(line: &Value) -> Result<Record, NotARecord> {
    let Some(obj) = line.as_object() else {
        return Err(NotARecord::Unknown);
    };
    if obj.contains_key("span_id") && obj.contains_key("start_unix_nano") {
        lens_span(obj).map(Record::Span)
    } else if obj.get("context").is_some_and(Value::is_object) && obj.contains_key("start_time") {
        python_span(obj).map(Record::Span)
    } else if let Some(list) = obj.get("resource_metrics") {
        python_metrics(list).map(Record::Metrics)
    } else if obj.contains_key("severity_number") || obj.contains_key("severity_text") {
        log(obj).map(Record::Log)
    } else if obj.contains_key("time_unix_nano") && obj.contains_key("kind") {
        lens_metric(obj).map(|m| Record::Metrics(vec![m]))
    } else {
        Err(NotARecord::Unknown)
    }
}

fn lens_span(obj: &Map<String, Value>) -> Result<SpanLine, NotARecord> {
    let start = nanos(obj.get("start_unix_nano")).ok_or(NotARecord::Bad("start_unix_nano"))?;
    let end = nanos(obj.get("end_unix_nano")).ok_or(NotARecord::Bad("end_unix_nano"))?;
    span(
        obj,
        hex_id(obj.get("span_id")).ok_or(NotARecord::Bad("span_id"))?,
        hex_id(obj.get("parent_span_id")).unwrap_or(0),
        start,
        end,
    )
}

fn python_span(obj: &Map<String, Value>) -> Result<SpanLine, NotARecord> {
    let context = obj.get("context").and_then(Value::as_object);
    let id = context.and_then(|c| hex_id(c.get("span_id")));
    let start = iso(obj.get("start_time")).ok_or(NotARecord::Bad("start_time"))?;
    let end = iso(obj.get("end_time")).ok_or(NotARecord::Bad("end_time"))?;
    span(
        obj,
        id.ok_or(NotARecord::Bad("context.span_id"))?,
        hex_id(obj.get("parent_id")).unwrap_or(0),
        start,
        end,
    )
}

fn span(
    obj: &Map<String, Value>,
    span_id: u64,
    parent: u64,
    start: u64,
    end: u64,
) -> Result<SpanLine, NotARecord> {
    if end < start {
        return Err(NotARecord::EndsBeforeStart);
    }
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .ok_or(NotARecord::Bad("name"))?;
    let attributes = obj
        .get("attributes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Ok(SpanLine {
        origin: origin(obj, Some(&attributes)),
        name: cut(name, ATTRIBUTE_CHARS),
        span_id,
        parent,
        start,
        end,
        attributes,
    })
}

fn lens_metric(obj: &Map<String, Value>) -> Result<MetricLine, NotARecord> {
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .ok_or(NotARecord::Bad("kind"))?;
    if !matches!(
        kind,
        "gauge" | "sum" | "histogram" | "exponential_histogram"
    ) {
        return Err(NotARecord::Unknown);
    }
    Ok(MetricLine {
        origin: origin(obj, obj.get("attributes").and_then(Value::as_object)),
        name: str_of(obj, "name").ok_or(NotARecord::Bad("name"))?,
        unit: str_of(obj, "unit").unwrap_or_default(),
        kind: kind.to_string(),
        time: nanos(obj.get("time_unix_nano")).ok_or(NotARecord::Bad("time_unix_nano"))?,
        value: point_value(obj).ok_or(NotARecord::Bad("value"))?,
    })
}

/// A point's value: `value`, or a histogram's mean (`sum / count`).
fn point_value(p: &Map<String, Value>) -> Option<f64> {
    if let Some(v) = p.get("value") {
        return v.as_f64();
    }
    let count = p.get("count")?.as_f64()?;
    let sum = p.get("sum")?.as_f64()?;
    Some(if count > 0.0 { sum / count } else { 0.0 })
}

fn python_metrics(list: &Value) -> Result<Vec<MetricLine>, NotARecord> {
    let bad = NotARecord::Bad("resource_metrics");
    let mut out = Vec::new();
    for rm in list.as_array().ok_or(bad)? {
        let resource = rm.get("resource").and_then(Value::as_object);
        let origin = resource.map(resource_origin).unwrap_or_default();
        let scopes = rm.get("scope_metrics").and_then(Value::as_array);
        for metric in scopes.into_iter().flatten().flat_map(|s| {
            s.get("metrics")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        }) {
            let Some(data) = metric.get("data").and_then(Value::as_object) else {
                continue;
            };
            let points = data.get("data_points").and_then(Value::as_array);
            for p in points.into_iter().flatten().filter_map(Value::as_object) {
                let kind = if p.contains_key("bucket_counts") {
                    "histogram"
                } else if data.contains_key("is_monotonic") {
                    "sum"
                } else {
                    "gauge"
                };
                let (Some(time), Some(value)) = (nanos(p.get("time_unix_nano")), point_value(p))
                else {
                    continue;
                };
                out.push(MetricLine {
                    origin: origin.clone(),
                    name: metric
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    unit: metric
                        .get("unit")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    kind: kind.into(),
                    time,
                    value,
                });
            }
        }
    }
    Ok(out)
}

fn log(obj: &Map<String, Value>) -> Result<LogLine, NotARecord> {
    let time = nanos(obj.get("time_unix_nano"))
        .or_else(|| nanos(obj.get("observed_unix_nano")))
        .or_else(|| iso(obj.get("timestamp")))
        .or_else(|| iso(obj.get("observed_timestamp")))
        .ok_or(NotARecord::Bad("time_unix_nano"))?;
    let severity_number = match obj.get("severity_number") {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        // `SeverityNumber.WARN` (an older OpenTelemetry-Python) → by its text.
        _ => 0,
    };
    let body = match obj.get("body") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let scope = match obj.get("scope") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    };
    Ok(LogLine {
        origin: origin(obj, obj.get("attributes").and_then(Value::as_object)),
        time,
        severity_number,
        severity_text: str_of(obj, "severity_text").unwrap_or_default(),
        body: cut(&body, BODY_CHARS),
        scope: cut(&scope, ATTRIBUTE_CHARS),
    })
}

/// Who wrote a line: its resource (`dl.rank`, `host.name`), else its attributes' `dl.rank`.
fn origin(obj: &Map<String, Value>, attributes: Option<&Map<String, Value>>) -> Origin {
    let mut o = obj
        .get("resource")
        .and_then(Value::as_object)
        .map(resource_origin)
        .unwrap_or_default();
    if o.rank.is_none() {
        o.rank = attributes.and_then(|a| rank_of(a.get("dl.rank")));
    }
    o
}

/// A resource as Lens's lines write it (flat) or OpenTelemetry-Python's (`{"attributes": …}`).
fn resource_origin(resource: &Map<String, Value>) -> Origin {
    let attrs = resource
        .get("attributes")
        .and_then(Value::as_object)
        .unwrap_or(resource);
    Origin {
        rank: rank_of(attrs.get("dl.rank")).or_else(|| rank_of(attrs.get("rank"))),
        node: attrs
            .get("host.name")
            .and_then(Value::as_str)
            .map(|n| cut(n, ATTRIBUTE_CHARS)),
    }
}

fn rank_of(v: Option<&Value>) -> Option<u32> {
    let n = match v? {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.parse().ok()?,
        _ => return None,
    };
    (n < MAX_RANK).then_some(n as u32)
}

fn str_of(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key)
        .and_then(Value::as_str)
        .map(|s| cut(s, ATTRIBUTE_CHARS))
}

/// Nanoseconds as a JSON number (or a string of digits: OTLP/JSON's 64-bit integers).
fn nanos(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A span id: 16 hex digits, with or without `0x`; all zeros is none.
fn hex_id(v: Option<&Value>) -> Option<u64> {
    let s = v?.as_str()?;
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok().filter(|&id| id != 0)
}

/// An ISO 8601 UTC time (`2026-12-07T20:01:20.123456Z`, or with `+00:00`) in Unix nanoseconds.
pub fn iso(v: Option<&Value>) -> Option<u64> {
    iso_nanos(v?.as_str()?)
}

/// [`iso`] on a string.
pub fn iso_nanos(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac_ns = 0i64;
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let kept = &f[..digits.min(9)];
        frac_ns = kept.parse::<i64>().ok()? * 10i64.pow(9 - kept.len() as u32);
        rest = &f[digits..];
    }
    let offset_s = match rest {
        "Z" | "" => 0,
        tz if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) => {
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            sign * (num(s.len() - 5..s.len() - 3)? * 3600 + num(s.len() - 2..s.len())? * 60)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y2, m2) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    u64::try_from(secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)?).ok()
}

/// `s` cut to `max` characters (an ellipsis says so).
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

/// Attributes as the compact JSON object the report keeps: at most [`ATTRIBUTES_PER_SPAN`],
/// strings cut, arrays and objects longer than a value's budget rendered as cut text.
pub fn compact_attributes(attrs: &Map<String, Value>) -> Option<String> {
    if attrs.is_empty() {
        return None;
    }
    let mut out = Map::new();
    for (k, v) in attrs.iter().take(ATTRIBUTES_PER_SPAN) {
        let v = match v {
            Value::String(s) => Value::String(cut(s, ATTRIBUTE_CHARS)),
            Value::Array(_) | Value::Object(_) => {
                let text = v.to_string();
                if text.chars().count() > ATTRIBUTE_CHARS {
                    Value::String(cut(&text, ATTRIBUTE_CHARS))
                } else {
                    v.clone()
                }
            }
            other => other.clone(),
        };
        out.insert(cut(k, ATTRIBUTE_CHARS), v);
    }
    if attrs.len() > ATTRIBUTES_PER_SPAN {
        out.insert(
            "…".into(),
            Value::String(format!("{} more", attrs.len() - ATTRIBUTES_PER_SPAN)),
        );
    }
    Some(Value::Object(out).to_string())
}
