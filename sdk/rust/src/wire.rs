//! The protobuf wire format, read in place: a message is a byte slice, its fields are found by
//! walking it, and strings and bytes are borrowed from it. Nothing is decoded until a view asks.
//!
//! Bytes come from the host, but a view never panics on bad input: a malformed message ends the
//! walk and marks the batch (see [`malformed`]), which the SDK turns into a rejected export.

use std::cell::Cell;

thread_local! {
    static MALFORMED: Cell<bool> = const { Cell::new(false) };
}

/// Records that a message could not be read.
fn mark_malformed() {
    MALFORMED.with(|m| m.set(true));
}

/// Clears the mark before a batch; [`malformed`] reads it after.
pub(crate) fn reset_malformed() {
    MALFORMED.with(|m| m.set(false));
}

/// Whether anything read since the last reset was malformed.
pub(crate) fn malformed() -> bool {
    MALFORMED.with(Cell::get)
}

/// One field's payload, by wire type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl<'a> Field<'a> {
    #[inline]
    pub(crate) fn varint(self) -> u64 {
        match self {
            Field::Varint(v) => v,
            _ => wrong_type(0),
        }
    }

    #[inline]
    pub(crate) fn fixed64(self) -> u64 {
        match self {
            Field::Fixed64(v) => v,
            _ => wrong_type(0),
        }
    }

    #[inline]
    pub(crate) fn fixed32(self) -> u32 {
        match self {
            Field::Fixed32(v) => v,
            _ => wrong_type(0),
        }
    }

    #[inline]
    pub(crate) fn bytes(self) -> &'a [u8] {
        match self {
            Field::Bytes(b) => b,
            _ => wrong_type(&[]),
        }
    }

    /// A `string` field; invalid UTF-8 marks the batch malformed and reads as "".
    #[inline]
    pub(crate) fn str(self) -> &'a str {
        std::str::from_utf8(self.bytes()).unwrap_or_else(|_| {
            mark_malformed();
            ""
        })
    }
}

fn wrong_type<T>(fallback: T) -> T {
    mark_malformed();
    fallback
}

/// The fields of one message, in order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Fields { buf }
    }

    /// The bytes left to read.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Only the fields numbered `number` (a repeated field), as messages.
    pub(crate) fn repeated(self, number: u32) -> Repeated<'a> {
        Repeated {
            fields: self,
            number,
        }
    }

    #[inline]
    fn varint(&mut self) -> Option<u64> {
        // Most varints (field keys, lengths under 128) are one byte.
        if let Some((&byte, rest)) = self.buf.split_first()
            && byte < 0x80
        {
            self.buf = rest;
            return Some(u64::from(byte));
        }
        let mut value = 0u64;
        for (i, &byte) in self.buf.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.buf = &self.buf[i + 1..];
                return Some(value);
            }
        }
        None
    }

    #[inline]
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Some(head)
    }

    #[inline]
    fn next_field(&mut self) -> Option<(u32, Field<'a>)> {
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).ok()?;
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => Field::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().ok()?)),
            2 => {
                let len = usize::try_from(self.varint()?).ok()?;
                Field::Bytes(self.take(len)?)
            }
            5 => Field::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().ok()?)),
            _ => return None,
        };
        Some((number, field))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, Field<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let field = self.next_field();
        if field.is_none() {
            mark_malformed();
            self.buf = &[];
        }
        field
    }
}

/// The messages of one repeated field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Repeated<'a> {
    fields: Fields<'a>,
    number: u32,
}

impl<'a> Iterator for Repeated<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let number = self.number;
        self.fields
            .find(|(n, _)| *n == number)
            .map(|(_, field)| field.bytes())
    }
}

/// A 16-byte id field as a big-endian integer (0 when absent or of another length).
pub(crate) fn id128(bytes: &[u8]) -> u128 {
    <[u8; 16]>::try_from(bytes).map_or(0, u128::from_be_bytes)
}

/// An 8-byte id field as a big-endian integer; `None` when empty.
pub(crate) fn id64(bytes: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}
