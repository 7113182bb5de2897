//! `Serialize` for the views (feature `serde`), so an exporter can put them in its own
//! `#[derive(Serialize)]` records: a value as the plain value (`7`, `"a"`, `[1,2]`, a map as an
//! object, no value as `null`), attributes as a map, ids as lowercase hex strings.

use serde::{Serialize, Serializer};

use crate::context::{SpanId, TraceId};
use crate::value::{Attributes, Value};

impl Serialize for Value<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Value::Str(v) => s.serialize_str(v),
            Value::Bool(v) => s.serialize_bool(v),
            Value::I64(v) => s.serialize_i64(v),
            Value::F64(v) => s.serialize_f64(v),
            Value::Bytes(v) => s.collect_seq(v),
            Value::Array(a) => s.collect_seq(a.iter()),
            Value::Map(m) => m.serialize(s),
            Value::Empty => s.serialize_unit(),
        }
    }
}

impl Serialize for Attributes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(*self)
    }
}

impl Serialize for TraceId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.to_hex().as_str())
    }
}

impl Serialize for SpanId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.to_hex().as_str())
    }
}
