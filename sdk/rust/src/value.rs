//! Attribute values and attribute lists, borrowed from the batch whichever encoding it came in.

use std::fmt;

use crate::bindings::spans::lens::exporter::types;
use crate::wire::{Field, Fields, Repeated};

/// An attribute value, borrowed: OpenTelemetry's `Value` (and OTLP's `AnyValue`, whose maps and
/// empty value only occur in OTLP batches).
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    /// A string.
    Str(&'a str),
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    I64(i64),
    /// A float.
    F64(f64),
    /// Raw bytes.
    Bytes(&'a [u8]),
    /// A homogeneous array (OpenTelemetry's arrays; OTLP's may mix).
    Array(Array<'a>),
    /// A map (OTLP's `kvlistValue`).
    Map(Attributes<'a>),
    /// No value (OTLP's empty `AnyValue`).
    Empty,
}

impl<'a> Value<'a> {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A view of a WIT `value`.
    pub fn from_wit(v: &'a types::Value) -> Self {
        match v {
            types::Value::String(s) => Value::Str(s),
            types::Value::Bool(b) => Value::Bool(*b),
            types::Value::S64(i) => Value::I64(*i),
            types::Value::F64(f) => Value::F64(*f),
            types::Value::Bytes(b) => Value::Bytes(b),
            types::Value::StringArray(a) => Value::Array(Array(ArrayRepr::Str(a))),
            types::Value::BoolArray(a) => Value::Array(Array(ArrayRepr::Bool(a))),
            types::Value::S64Array(a) => Value::Array(Array(ArrayRepr::I64(a))),
            types::Value::F64Array(a) => Value::Array(Array(ArrayRepr::F64(a))),
        }
    }

    /// An OTLP `AnyValue` message.
    pub(crate) fn from_proto(msg: &'a [u8]) -> Self {
        let mut value = Value::Empty;
        for (number, field) in Fields::new(msg) {
            value = match (number, field) {
                (1, f) => Value::Str(f.str()),
                (2, f) => Value::Bool(f.varint() != 0),
                (3, f) => Value::I64(f.varint() as i64),
                (4, f) => Value::F64(f64::from_bits(f.fixed64())),
                (5, f) => Value::Array(Array(ArrayRepr::Proto(Fields::new(f.bytes()).repeated(1)))),
                (6, f) => Value::Map(Attributes(AttrRepr::Proto(
                    Fields::new(f.bytes()).repeated(1),
                ))),
                (7, f) => Value::Bytes(f.bytes()),
                _ => value,
            };
        }
        value
    }
}

/// Strings as they are; everything else as OpenTelemetry's `Value` displays it: arrays as
/// `[1,2]`, `[true,false]`, `["a","b"]` (elements of a string array quoted), maps as
/// `{"k":v}`, bytes as `[1,2]`, nothing for an empty value.
impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Bool(b) => write!(f, "{b}"),
            Value::I64(i) => write!(f, "{i}"),
            Value::F64(x) => write!(f, "{x}"),
            Value::Bytes(b) => {
                f.write_str("[")?;
                for (i, byte) in b.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{byte}")?;
                }
                f.write_str("]")
            }
            Value::Array(a) => {
                f.write_str("[")?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    v.fmt_element(f)?;
                }
                f.write_str("]")
            }
            Value::Map(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.into_iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{k:?}:")?;
                    v.fmt_element(f)?;
                }
                f.write_str("}")
            }
            Value::Empty => Ok(()),
        }
    }
}

impl Value<'_> {
    /// An element of an array or map: strings quoted, the rest as displayed.
    fn fmt_element(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => write!(f, "{s:?}"),
            other => write!(f, "{other}"),
        }
    }
}

/// An array value; [`Array::iter`] yields its elements.
#[derive(Clone, Copy, Debug)]
pub struct Array<'a>(ArrayRepr<'a>);

#[derive(Clone, Copy, Debug)]
enum ArrayRepr<'a> {
    Str(&'a [String]),
    Bool(&'a [bool]),
    I64(&'a [i64]),
    F64(&'a [f64]),
    Proto(Repeated<'a>),
}

impl<'a> Array<'a> {
    /// The elements, in order.
    pub fn iter(&self) -> impl Iterator<Item = Value<'a>> + use<'a> {
        let repr = self.0;
        let mut index = 0;
        let mut proto = match repr {
            ArrayRepr::Proto(r) => Some(r),
            _ => None,
        };
        std::iter::from_fn(move || {
            let i = index;
            index += 1;
            match repr {
                ArrayRepr::Str(a) => a.get(i).map(|s| Value::Str(s)),
                ArrayRepr::Bool(a) => a.get(i).map(|b| Value::Bool(*b)),
                ArrayRepr::I64(a) => a.get(i).map(|x| Value::I64(*x)),
                ArrayRepr::F64(a) => a.get(i).map(|x| Value::F64(*x)),
                ArrayRepr::Proto(_) => proto.as_mut()?.next().map(Value::from_proto),
            }
        })
    }
}

/// Attributes: `(key, value)` pairs in the order the span (event, link, scope, resource) has
/// them. Iterating is free of allocation; [`Attributes::get`] finds one key.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a>(AttrRepr<'a>);

#[derive(Clone, Copy, Debug)]
enum AttrRepr<'a> {
    Typed(&'a [types::KeyValue]),
    Proto(Repeated<'a>),
}

impl<'a> Attributes<'a> {
    /// A view of WIT `key-value` records (as in metric points and log records).
    pub fn from_wit(kvs: &'a [types::KeyValue]) -> Self {
        Attributes(AttrRepr::Typed(kvs))
    }

    /// The `KeyValue` messages numbered `number` in `msg`.
    pub(crate) fn proto(msg: &'a [u8], number: u32) -> Self {
        Attributes(AttrRepr::Proto(Fields::new(msg).repeated(number)))
    }

    /// The value of `key`, if present.
    pub fn get(self, key: &str) -> Option<Value<'a>> {
        self.into_iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

impl<'a> Iterator for Attributes<'a> {
    type Item = (&'a str, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            AttrRepr::Typed(kvs) => {
                let (kv, rest) = kvs.split_first()?;
                *kvs = rest;
                Some((kv.key.as_str(), Value::from_wit(&kv.value)))
            }
            AttrRepr::Proto(iter) => iter.next().map(|msg| {
                let (mut key, mut value) = ("", Value::Empty);
                for (number, field) in Fields::new(msg) {
                    match (number, field) {
                        (1, f) => key = f.str(),
                        (2, Field::Bytes(b)) => value = Value::from_proto(b),
                        _ => {}
                    }
                }
                (key, value)
            }),
        }
    }
}
