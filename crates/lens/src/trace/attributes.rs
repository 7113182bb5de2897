//! Safe span attributes: NeMo Lens's `safe_set_span_attributes` for values that come from
//! anywhere (a parsed config, a hyper-parameter dict, a request): JSON values become attributes
//! where OpenTelemetry has a type for them, the rest is skipped, nothing panics, and string
//! values under a redacted key are replaced by `[REDACTED]`.
//!
//! The rules are NeMo Lens's: `null` is skipped; a bool, number or string is set (a string
//! redacted when its key is in the redact list, compared exactly); a list whose items are all
//! scalars is set as an array (its strings are not redacted, as there); objects and lists
//! holding anything else are skipped. Two cases differ because Rust's OpenTelemetry has no type
//! for them: a list mixing types (NeMo Lens exports a mixed array; Lens sets integers mixed with
//! floats as floats and skips any other mix), and an integer beyond `i64` (skipped).

use opentelemetry::trace::Span;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use serde_json::Value as Json;

/// NeMo Lens's `DEFAULT_REDACT_KEYS`.
pub const DEFAULT_REDACT_KEYS: [&str; 8] = [
    "prompt",
    "input_text",
    "output_text",
    "text",
    "password",
    "token",
    "secret",
    "key",
];

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// The keys whose string values are redacted (exact matches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactKeys(Vec<String>);

impl Default for RedactKeys {
    /// NeMo Lens's default list.
    fn default() -> Self {
        Self(DEFAULT_REDACT_KEYS.iter().map(|k| k.to_string()).collect())
    }
}

impl RedactKeys {
    /// Exactly these keys (NeMo Lens's `redact_keys` argument).
    pub fn only(keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self(keys.into_iter().map(Into::into).collect())
    }

    /// The default list and these keys.
    pub fn with_keys(mut self, keys: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.0.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Whether `key` is redacted.
    pub fn contains(&self, key: &str) -> bool {
        self.0.iter().any(|k| k == key)
    }
}

/// The attributes NeMo Lens's `safe_set_span_attributes` would set for `attributes`, in order.
///
/// ```
/// use lens::trace::attributes::{RedactKeys, safe_attributes};
/// let attrs = serde_json::json!({"lr": 3e-4, "prompt": "secret words", "tags": ["a", "b"],
///                                "config": {"nested": true}, "none": null});
/// let kv = safe_attributes(attrs.as_object().unwrap(), &RedactKeys::default());
/// let keys: Vec<_> = kv.iter().map(|kv| kv.key.as_str()).collect();
/// assert_eq!(keys, ["lr", "prompt", "tags"]);
/// assert_eq!(kv[1].value.as_str(), "[REDACTED]");
/// ```
pub fn safe_attributes<'a>(
    attributes: impl IntoIterator<Item = (&'a String, &'a Json)>,
    redact: &RedactKeys,
) -> Vec<KeyValue> {
    attributes
        .into_iter()
        .filter_map(|(key, value)| {
            let value = match value {
                Json::String(s) if redact.contains(key) => Value::from(REDACTED),
                Json::Array(items) => Value::Array(array(items)?),
                other => scalar(other)?,
            };
            Some(KeyValue::new(key.clone(), value))
        })
        .collect()
}

/// Sets [`safe_attributes`] on `span`, if it is recording (as NeMo Lens does).
pub fn safe_set_span_attributes<'a>(
    span: &mut impl Span,
    attributes: impl IntoIterator<Item = (&'a String, &'a Json)>,
    redact: &RedactKeys,
) {
    if span.is_recording() {
        span.set_attributes(safe_attributes(attributes, redact));
    }
}

fn scalar(value: &Json) -> Option<Value> {
    Some(match value {
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::I64(i),
            // `u64` beyond `i64` has no OpenTelemetry type; a float is a float.
            None if n.is_f64() => Value::F64(n.as_f64()?),
            None => return None,
        },
        Json::String(s) => Value::String(StringValue::from(s.clone())),
        Json::Null | Json::Array(_) | Json::Object(_) => return None,
    })
}

/// A list of scalars of one type (integers and floats together as floats); `None` otherwise.
fn array(items: &[Json]) -> Option<Array> {
    let values: Vec<Value> = items.iter().map(scalar).collect::<Option<_>>()?;
    let same = |f: fn(&Value) -> bool| values.iter().all(f);
    Some(
        if values.is_empty() || same(|v| matches!(v, Value::String(_))) {
            Array::String(
                values
                    .into_iter()
                    .map(|v| StringValue::from(v.as_str().into_owned()))
                    .collect(),
            )
        } else if same(|v| matches!(v, Value::Bool(_))) {
            Array::Bool(
                values
                    .iter()
                    .map(|v| matches!(v, Value::Bool(true)))
                    .collect(),
            )
        } else if same(|v| matches!(v, Value::I64(_))) {
            Array::I64(
                values
                    .iter()
                    .filter_map(|v| match v {
                        Value::I64(i) => Some(*i),
                        _ => None,
                    })
                    .collect(),
            )
        } else if same(|v| matches!(v, Value::I64(_) | Value::F64(_))) {
            Array::F64(
                values
                    .iter()
                    .filter_map(|v| match v {
                        Value::I64(i) => Some(*i as f64),
                        Value::F64(f) => Some(*f),
                        _ => None,
                    })
                    .collect(),
            )
        } else {
            return None;
        },
    )
}
