//! JSON text as Python's `json.dumps` writes it (what OpenTelemetry-Python's `to_json(indent=None)`
//! and so NeMo Lens's console exporters print): `", "` and `": "` between items, keys in the
//! order they were inserted, floats as `repr(float)` (`1e-05`, `1e+16`, `100.0`), and every
//! character outside printable ASCII escaped (`ensure_ascii`: `\u00fc`, a surrogate pair for
//! `🚀`, `\u007f`). The values come from `serde_json` (its `preserve_order` keeps insertion order).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::{CharEscape, Formatter, Serializer};

/// `value` as `json.dumps(value)` writes it.
pub fn dumps(value: &Value) -> String {
    let mut out = Vec::new();
    let mut serializer = Serializer::with_formatter(&mut out, PythonFormatter);
    // Writing into memory cannot fail, and a `Value` always serializes.
    value
        .serialize(&mut serializer)
        .expect("a JSON value serializes");
    String::from_utf8(out).expect("the formatter writes ASCII")
}

/// `repr(x)` of a finite float, the shortest text that reads back as `x`: positional when its
/// decimal exponent is in `-4..16`, else scientific with a signed exponent of two digits or more.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` is the shortest round-trip form too: `d.ddde±n`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exponent: i32 = exponent.parse().expect("a decimal exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if x.is_sign_negative() { "-" } else { "" };
    // Where the decimal point goes, counted from the first digit.
    let point = exponent + 1;
    let n = digits.len() as i32;
    let body = if !(-3..=16).contains(&point) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let e = point - 1;
        let e_sign = if e < 0 { '-' } else { '+' };
        format!("{first}{fraction}e{e_sign}{:02}", e.abs())
    } else if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point >= n {
        format!("{digits}{}.0", "0".repeat((point - n) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(float_repr(value).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, f64::from(value))
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut units = [0u16; 2];
        for c in fragment.chars() {
            if (' '..='~').contains(&c) {
                w.write_all(&[c as u8])?;
            } else {
                for unit in c.encode_utf16(&mut units) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        // serde_json's own escapes are Python's: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and
        // `\u00XX` (lowercase) for the other control characters.
        serde_json::ser::CompactFormatter.write_char_escape(w, escape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_are_python_s_repr() {
        // What `json.dumps` of the same floats printed (Python 3.11).
        let values = [
            0.0,
            -0.0,
            0.5,
            1.0,
            12.5,
            0.0003,
            1e-4,
            1e-5,
            1.5e-7,
            123456789.123,
            1e15,
            1e16,
            1.2345e20,
            -2.5e-10,
            9007199254740993.0,
            1.0 / 3.0,
            5e-324,
            f64::MAX,
            100.0,
            1e22,
        ];
        assert_eq!(
            dumps(&json!(values)),
            "[0.0, -0.0, 0.5, 1.0, 12.5, 0.0003, 0.0001, 1e-05, 1.5e-07, 123456789.123, \
             1000000000000000.0, 1e+16, 1.2345e+20, -2.5e-10, 9007199254740992.0, \
             0.3333333333333333, 5e-324, 1.7976931348623157e+308, 100.0, 1e+22]"
        );
    }

    #[test]
    fn text_is_python_s_with_ensure_ascii() {
        let value =
            json!({"a": "ünï 🚀 \u{7f} \u{1f} \n\t\"\\ /", "b": [1, 2, {"c": null, "d": true}]});
        assert_eq!(
            dumps(&value),
            r#"{"a": "\u00fcn\u00ef \ud83d\ude80 \u007f \u001f \n\t\"\\ /", "b": [1, 2, {"c": null, "d": true}]}"#
        );
    }
}
