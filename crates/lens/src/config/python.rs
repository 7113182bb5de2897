//! Values read the way NeMo Lens reads them with Python: `str.strip()`, `int()`, `float()` and
//! its boolean words, so that every environment value NeMo Lens accepts means the same here and
//! every value it rejects is an error (checked against the real package in `tests/all/parity`).

/// Characters `str.strip()` removes: Rust's whitespace and the four ASCII information
/// separators (U+001C–U+001F), which Python also counts as whitespace.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `value.strip()`.
pub fn strip(value: &str) -> &str {
    value.trim_matches(python_space)
}

/// The zero of every run of Unicode decimal digits (category Nd) Python's `int()` and `float()`
/// accept, as of Unicode 15.1 (Python 3.13); each run is the ten digits from its zero.
const DECIMAL_ZEROS: [u32; 68] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x11f50, 0x16a60, 0x16ac0,
    0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e4f0, 0x1e950,
    0x1fbf0,
];

/// The value of a decimal digit in any script, as Python reads it.
fn decimal(c: char) -> Option<u32> {
    let c = c as u32;
    let zero = match DECIMAL_ZEROS.binary_search(&c) {
        Ok(i) => DECIMAL_ZEROS[i],
        Err(0) => return None,
        Err(i) => DECIMAL_ZEROS[i - 1],
    };
    (c - zero < 10).then_some(c - zero)
}

/// `s` with its digits in ASCII and the underscores Python allows between two digits removed;
/// `None` when an underscore is anywhere else.
fn ascii_digits(s: &str) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            let between = i > 0
                && decimal(chars[i - 1]).is_some()
                && chars.get(i + 1).is_some_and(|n| decimal(*n).is_some());
            if !between {
                return None;
            }
            continue;
        }
        match decimal(c) {
            Some(d) => out.push(char::from_digit(d, 10)?),
            None => out.push(c),
        }
    }
    Some(out)
}

/// `int(value)` for a base-10 string (surrounding whitespace allowed). Python's integers have no
/// bound; beyond `i64` the value saturates, which changes no comparison Lens makes with it (a
/// rank, a count, a duration).
pub fn int(value: &str) -> Option<i64> {
    let s = ascii_digits(strip(value))?;
    let digits = s.strip_prefix(['+', '-']).unwrap_or(&s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.parse().unwrap_or(if s.starts_with('-') {
        i64::MIN
    } else {
        i64::MAX
    }))
}

/// `float(value)`: decimal and exponent forms, `inf`, `infinity` and `nan` in any case.
pub fn float(value: &str) -> Option<f64> {
    let s = ascii_digits(strip(value))?;
    let body = s.strip_prefix(['+', '-']).unwrap_or(&s);
    let lower = body.to_ascii_lowercase();
    let special = matches!(lower.as_str(), "inf" | "infinity" | "nan");
    // What Rust accepts beyond Python: nothing for these characters; the check keeps out any
    // other spelling Rust's parser might take.
    let plain = body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !special && !plain {
        return None;
    }
    s.parse().ok()
}

/// NeMo Lens's booleans, after `strip().lower()`: `1/true/yes/on` and `0/false/no/off`.
pub fn bool(value: &str) -> Option<bool> {
    match strip(value).to_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_as_python_reads_them() {
        for (s, v) in [
            ("7", Some(7)),
            (" -1 ", Some(-1)),
            ("+3", Some(3)),
            ("1_000", Some(1000)),
            ("٣", Some(3)),
            ("\u{1c}5\u{1f}", Some(5)),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("0x10", None),
            ("1.0", None),
            ("", None),
            ("-", None),
            ("99999999999999999999", Some(i64::MAX)),
            ("-99999999999999999999", Some(i64::MIN)),
        ] {
            assert_eq!(int(s), v, "{s:?}");
        }
    }

    #[test]
    fn floats_as_python_reads_them() {
        for (s, v) in [
            ("0.5", Some(0.5)),
            (".25", Some(0.25)),
            ("1.", Some(1.0)),
            ("1e-1", Some(0.1)),
            ("1_0.5", Some(10.5)),
            ("INF", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("١.٥", Some(1.5)),
            ("0x1p3", None),
            ("1,5", None),
            ("e5", None),
            ("", None),
        ] {
            assert_eq!(float(s), v, "{s:?}");
        }
        assert!(float("nan").unwrap().is_nan());
    }
}
