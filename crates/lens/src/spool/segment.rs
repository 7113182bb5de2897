//! The on-disk format of a spool: segment files of checksummed records.
//!
//! A segment (`seg-<sequence, 20 digits>.spool`) starts with a 16-byte header: the magic
//! `LENSPOOL`, the format version (u16, little-endian), the signal (u8: 0 traces, 1 metrics,
//! 2 logs) and five zero bytes. Records follow, each:
//!
//! | bytes | field |
//! |---|---|
//! | 4 | `LSR1`, the record magic (a reader that lost its place finds the next record by it) |
//! | 4 | payload length (u32 LE), at most [`MAX_RECORD_BYTES`] |
//! | 4 | items in the payload (u32 LE: spans, data points, log records) |
//! | 4 | CRC-32 of the 12 bytes above |
//! | 4 | CRC-32 of the payload |
//! | n | the payload: one OTLP export request, protobuf |
//!
//! A record is read only if both checksums hold: a torn write (a process killed mid-record),
//! flipped bytes or a cut tail are skipped and counted, never half-read. A damaged payload
//! whose header is intact is skipped by its length, its items counted as corrupt; a damaged
//! header is skipped by scanning for the next record magic whose header checksum holds (its
//! items cannot be known: the bytes are reported).

use std::io::{self, Read, Write};

use crate::signal::Signal;

/// The first bytes of a segment.
pub const MAGIC: &[u8; 8] = b"LENSPOOL";
/// The format this Lens writes and reads; a segment of another version is refused, not read.
pub const FORMAT_VERSION: u16 = 1;
/// The segment header's size.
pub const HEADER_BYTES: usize = 16;
/// The first bytes of a record.
const RECORD_MAGIC: &[u8; 4] = b"LSR1";
/// A record's header size.
pub const RECORD_HEADER_BYTES: usize = 20;
/// The largest payload a record may announce: a larger length is damage, not an allocation.
pub const MAX_RECORD_BYTES: u32 = 64 << 20;

/// The segment header for `signal`.
pub fn header(signal: Signal) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[10] = signal_byte(signal);
    h
}

fn signal_byte(signal: Signal) -> u8 {
    match signal {
        Signal::Traces => 0,
        Signal::Metrics => 1,
        Signal::Logs => 2,
    }
}

/// The signal of a segment's header, if it is one this Lens reads and of `signal` (any, if
/// `None`); else why not.
pub fn check_header(bytes: &[u8], signal: Option<Signal>) -> Result<Signal, String> {
    if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
        return Err("it is not a Lens spool segment (no `LENSPOOL` header)".into());
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != FORMAT_VERSION {
        let whose = if version > FORMAT_VERSION {
            "a newer"
        } else {
            "an older"
        };
        return Err(format!(
            "it was written by {whose} Lens (spool format {version}; this Lens reads format \
             {FORMAT_VERSION}): replay it with that Lens, or move it away"
        ));
    }
    let found = Signal::ALL
        .into_iter()
        .find(|s| signal_byte(*s) == bytes[10])
        .ok_or_else(|| format!("its signal byte {} names no signal", bytes[10]))?;
    match signal {
        Some(wanted) if wanted != found => Err(format!(
            "it holds {} batches, not {}",
            found.as_str(),
            wanted.as_str()
        )),
        _ => Ok(found),
    }
}

/// Writes one record of `items` items to `out` in one `write_all`.
pub fn write_record(out: &mut impl Write, items: u32, payload: &[u8]) -> io::Result<u64> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|n| *n <= MAX_RECORD_BYTES)
        .ok_or_else(|| io::Error::other("a batch over the spool's record limit"))?;
    let mut buf = Vec::with_capacity(RECORD_HEADER_BYTES + payload.len());
    buf.extend_from_slice(RECORD_MAGIC);
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(&items.to_le_bytes());
    let header_crc = crc32fast::hash(&buf);
    buf.extend_from_slice(&header_crc.to_le_bytes());
    buf.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    buf.extend_from_slice(payload);
    out.write_all(&buf)?;
    Ok(buf.len() as u64)
}

/// A record found in a segment: where its payload is, how long, how many items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMeta {
    /// The record's offset in the segment (its magic).
    pub offset: u64,
    /// The payload's length.
    pub len: u32,
    /// Items in it.
    pub items: u32,
}

impl RecordMeta {
    /// The offset just past the record.
    pub fn end(&self) -> u64 {
        self.offset + RECORD_HEADER_BYTES as u64 + u64::from(self.len)
    }
}

/// What scanning a segment found.
#[derive(Debug, Default)]
pub struct Scanned {
    /// The records whose checksums hold, in order.
    pub records: Vec<RecordMeta>,
    /// Items of records whose header held but whose payload did not (or was cut short).
    pub corrupt_items: u64,
    /// Bytes skipped that were no record (a damaged header, a torn tail).
    pub corrupt_bytes: u64,
}

/// Scans the records of a segment's bytes after its header.
pub fn scan(bytes: &[u8]) -> Scanned {
    let mut found = Scanned::default();
    let mut at = HEADER_BYTES;
    while at < bytes.len() {
        match record_at(bytes, at) {
            Some(Ok(meta)) => {
                found.records.push(meta);
                at = meta.end() as usize;
            }
            Some(Err(meta)) => {
                // The header holds, the payload does not (flipped or cut): skip it whole.
                found.corrupt_items += u64::from(meta.items);
                at = (meta.end() as usize).min(bytes.len());
            }
            None => {
                // No record here: find the next one whose header holds.
                let next = (at + 1..bytes.len())
                    .find(|&i| {
                        bytes[i..].starts_with(RECORD_MAGIC) && record_at(bytes, i).is_some()
                    })
                    .unwrap_or(bytes.len());
                found.corrupt_bytes += (next - at) as u64;
                at = next;
            }
        }
    }
    found
}

/// The record at `at`: `Ok` if both checksums hold, `Err` if only its header does, `None` if
/// there is no record header here.
fn record_at(bytes: &[u8], at: usize) -> Option<Result<RecordMeta, RecordMeta>> {
    let head = bytes.get(at..at + RECORD_HEADER_BYTES)?;
    if &head[..4] != RECORD_MAGIC {
        return None;
    }
    let word = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    let (len, items, header_crc, payload_crc) = (word(4), word(8), word(12), word(16));
    if crc32fast::hash(&head[..12]) != header_crc || len > MAX_RECORD_BYTES {
        return None;
    }
    let meta = RecordMeta {
        offset: at as u64,
        len,
        items,
    };
    let start = at + RECORD_HEADER_BYTES;
    match bytes.get(start..start + len as usize) {
        Some(payload) if crc32fast::hash(payload) == payload_crc => Some(Ok(meta)),
        _ => Some(Err(meta)),
    }
}

/// The payload of `meta` read from `file` (positioned anywhere), checked again: the file may
/// have changed since it was scanned.
pub fn read_payload(file: &mut std::fs::File, meta: RecordMeta) -> io::Result<Vec<u8>> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(meta.offset))?;
    let mut record = vec![0u8; RECORD_HEADER_BYTES + meta.len as usize];
    file.read_exact(&mut record)?;
    match record_at(&record, 0) {
        Some(Ok(_)) => Ok(record.split_off(RECORD_HEADER_BYTES)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the record changed on disk since it was scanned",
        )),
    }
}
