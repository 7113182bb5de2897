//! A bounded disk spool of one exporter's export requests: where batches go when the exporter
//! is down or its queue is full, kept across processes, replayed oldest first.
//!
//! A spool is a directory of its own (mode 0700, this user's, never a symlink) holding
//! segments (`segment`: checksummed records of OTLP protobuf requests), a `lock` file that
//! one live process holds (`flock`; a second one is refused, naming the holder's pid) and, per
//! segment being replayed, `seg-N.ack`: how far it was replayed. Segments are written once, in
//! order; a process always starts a new one, so what a killed predecessor left is only read.
//!
//! Bounded: the segments' bytes stay within `max_bytes`. When an append would pass it, either
//! the oldest segments are removed ([`WhenFull::DropOldest`], their items counted) or the new
//! batch is refused ([`WhenFull::DropNewest`]). Delivery is at least once: a process killed
//! between an export and its acknowledgement replays that one batch again.
//!
//! Owns: the directory, its lock and segments. The batch queue decides what to spool and
//! replays through its exporter.

mod files;
pub mod otlp;
mod segment;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use files::{ack_path, checked_dir, read_ack, read_segment, segment_files, take_lock, write_ack};
pub use segment::{FORMAT_VERSION, MAX_RECORD_BYTES};
use segment::{HEADER_BYTES, RecordMeta};

use crate::signal::Signal;

/// What happens to a batch that does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// The oldest segments are removed (their items counted as dropped, spool full): the
    /// newest data is kept, as a monitoring system wants it.
    #[default]
    DropOldest,
    /// The new batch is refused (counted): what was spooled first is kept.
    DropNewest,
}

/// A spool's bounds.
#[derive(Debug, Clone, Copy)]
pub struct SpoolLimits {
    /// The most bytes of segments kept.
    pub max_bytes: u64,
    /// A segment is closed and a new one started past this many bytes.
    pub segment_bytes: u64,
    /// What a batch that does not fit does.
    pub when_full: WhenFull,
}

impl SpoolLimits {
    /// Limits of `max_bytes`, segments of an eighth of it (between 64 KiB and 8 MiB).
    pub fn new(max_bytes: u64, when_full: WhenFull) -> Self {
        Self {
            max_bytes,
            segment_bytes: (max_bytes / 8).clamp(64 << 10, 8 << 20),
            when_full,
        }
    }
}

/// Why a spool cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The directory is not one a spool may live in.
    #[error("spool directory {dir}: {why}")]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Another live process holds it.
    #[error(
        "spool directory {dir} is in use by another process ({holder}): two processes never \
         share a spool; give each rank its own `dir`"
    )]
    Busy {
        /// The directory.
        dir: PathBuf,
        /// `pid N`, as the holder wrote it.
        holder: String,
    },
    /// A segment this Lens does not read.
    #[error("spool segment {file}: {why}")]
    Segment {
        /// The segment.
        file: PathBuf,
        /// Why.
        why: String,
    },
    /// Reading or writing failed (a full disk among others).
    #[error("spool {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

/// What opening a spool found of its predecessors' records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Opened {
    /// Items of damaged records, skipped (counted as dropped, spool corrupt).
    pub corrupt_items: u64,
    /// One line per damaged file: its name and what was skipped.
    pub warnings: Vec<String>,
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Spooled; `evicted` items of the oldest segments were removed to make room.
    Spooled {
        /// Items removed (dropped, spool full).
        evicted: u64,
    },
    /// Refused: it does not fit (`DropNewest`, or larger than the whole spool).
    Full,
}

/// What a spool holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SpoolStatus {
    /// Records (batches) not yet replayed.
    pub records: u64,
    /// Items in them.
    pub items: u64,
    /// Bytes of segments on disk.
    pub bytes: u64,
    /// Segment files.
    pub segments: u64,
}

/// One record to replay: hand its payload to the exporter, then [`Spool::ack`] it.
#[derive(Debug)]
pub struct Replay {
    /// The OTLP protobuf request.
    pub payload: Vec<u8>,
    /// Items in it.
    pub items: u64,
    seq: u64,
    index: usize,
}

struct Segment {
    seq: u64,
    path: PathBuf,
    bytes: u64,
    records: Vec<RecordMeta>,
    /// Records before this one are replayed.
    acked: usize,
    /// Items of the records from `acked` on, kept as records are added and acknowledged (a
    /// status is asked for at every append and replay, over segments of thousands of records).
    pending: u64,
}

impl Segment {
    /// A segment read back, `acked` of its records replayed.
    fn read(seq: u64, path: PathBuf, bytes: u64, records: Vec<RecordMeta>, acked: usize) -> Self {
        let pending = items_of(&records[acked..]);
        Self {
            seq,
            path,
            bytes,
            records,
            acked,
            pending,
        }
    }

    fn pending_items(&self) -> u64 {
        self.pending
    }

    /// Marks the records before `upto` replayed.
    fn ack_upto(&mut self, upto: usize) {
        let upto = upto.min(self.records.len());
        if upto > self.acked {
            self.pending -= items_of(&self.records[self.acked..upto]);
            self.acked = upto;
        }
    }
}

fn items_of(records: &[RecordMeta]) -> u64 {
    records.iter().map(|r| u64::from(r.items)).sum()
}

/// An open spool, held by this process.
pub struct Spool {
    dir: PathBuf,
    signal: Signal,
    limits: SpoolLimits,
    /// Oldest first; the last one is being written when `writer` is set.
    segments: VecDeque<Segment>,
    writer: Option<File>,
    next_seq: u64,
    /// Held while open; dropped by [`Spool::release`].
    lock: Option<File>,
}

impl Spool {
    /// Opens (creating it if needed) the spool at `dir` for `signal`'s batches: takes its
    /// lock and reads what earlier processes left.
    pub fn open(
        dir: &Path,
        signal: Signal,
        limits: SpoolLimits,
    ) -> Result<(Self, Opened), SpoolError> {
        checked_dir(dir)?;
        let lock = take_lock(dir)?;
        let mut opened = Opened::default();
        let mut segments = VecDeque::new();
        for (seq, path) in segment_files(dir)? {
            let (_, scanned) = read_segment(&path, Some(signal), &limits)?;
            if scanned.corrupt_items > 0 || scanned.corrupt_bytes > 0 {
                opened.corrupt_items += scanned.corrupt_items;
                opened.warnings.push(format!(
                    "spool segment {}: skipped {} damaged record item(s) and {} unreadable byte(s); \
                     the rest is replayed",
                    path.display(),
                    scanned.corrupt_items,
                    scanned.corrupt_bytes
                ));
            }
            let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let acked = read_ack(&ack_path(&path)).min(scanned.records.len());
            segments.push_back(Segment::read(seq, path, bytes, scanned.records, acked));
        }
        let next_seq = segments.back().map_or(0, |s| s.seq + 1);
        let mut spool = Self {
            dir: dir.to_path_buf(),
            signal,
            limits,
            segments,
            writer: None,
            next_seq,
            lock: Some(lock),
        };
        spool.remove_replayed();
        Ok((spool, opened))
    }

    /// What the spool at `dir` holds, read without its lock and without writing (`lens spool
    /// status`): the signal of its segments, what they hold, and what is damaged.
    pub fn inspect(dir: &Path) -> Result<(Option<Signal>, SpoolStatus, Opened), SpoolError> {
        let limits = SpoolLimits::new(u64::MAX, WhenFull::DropOldest);
        let mut status = SpoolStatus::default();
        let mut opened = Opened::default();
        let mut signal = None;
        for (_, path) in segment_files(dir)? {
            let (of, scanned) = read_segment(&path, signal, &limits)?;
            signal = signal.or(of);
            let acked = read_ack(&ack_path(&path)).min(scanned.records.len());
            status.segments += 1;
            status.bytes += fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            status.records += (scanned.records.len() - acked) as u64;
            status.items += items_of(&scanned.records[acked..]);
            opened.corrupt_items += scanned.corrupt_items;
            if scanned.corrupt_items > 0 || scanned.corrupt_bytes > 0 {
                opened.warnings.push(format!(
                    "{}: {} damaged record item(s), {} unreadable byte(s)",
                    path.display(),
                    scanned.corrupt_items,
                    scanned.corrupt_bytes
                ));
            }
        }
        Ok((signal, status, opened))
    }

    /// Closes the spool and gives up its lock (the exporter shut down): another process, or
    /// another installation in this one, may open it; nothing is written to it after this.
    pub fn release(&mut self) {
        self.writer = None;
        self.lock = None;
    }

    /// Bounds it by `limits` from now on (a reload changed them); what is held past a smaller
    /// budget goes at the next append, as `when_full` says.
    pub fn set_limits(&mut self, limits: SpoolLimits) {
        self.limits = limits;
    }

    /// Whether [`release`](Self::release) gave it up.
    pub fn is_released(&self) -> bool {
        self.lock.is_none()
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What it holds now.
    pub fn status(&self) -> SpoolStatus {
        SpoolStatus {
            records: self
                .segments
                .iter()
                .map(|s| (s.records.len() - s.acked) as u64)
                .sum(),
            items: self.segments.iter().map(Segment::pending_items).sum(),
            bytes: self.segments.iter().map(|s| s.bytes).sum(),
            segments: self.segments.len() as u64,
        }
    }

    /// Spools one request of `items` items.
    pub fn append(&mut self, items: u64, payload: &[u8]) -> Result<Appended, SpoolError> {
        if self.lock.is_none() {
            return Err(SpoolError::Dir {
                dir: self.dir.clone(),
                why: "released: the exporter has shut down".into(),
            });
        }
        let record = (segment::RECORD_HEADER_BYTES + payload.len()) as u64;
        let items = u32::try_from(items)
            .map_err(|_| self.io(io::Error::other("too many items in one batch")))?;
        if record + HEADER_BYTES as u64 > self.limits.max_bytes
            || payload.len() > MAX_RECORD_BYTES as usize
        {
            return Ok(Appended::Full);
        }
        let mut evicted = 0;
        while self.status().bytes + record > self.limits.max_bytes {
            if self.limits.when_full == WhenFull::DropNewest {
                return Ok(Appended::Full);
            }
            match self.evict_oldest() {
                Some(items) => evicted += items,
                None => return Ok(Appended::Full),
            }
        }
        let rolled = self
            .segments
            .back()
            .is_none_or(|s| self.writer.is_none() || s.bytes + record > self.limits.segment_bytes);
        if rolled {
            self.start_segment()?;
        }
        let writer = self.writer.as_mut().expect("a segment is open");
        let segment = self.segments.back_mut().expect("a segment is open");
        let offset = segment.bytes;
        let path = segment.path.clone();
        let written =
            segment::write_record(writer, items, payload).map_err(|source| SpoolError::Io {
                path: path.clone(),
                source,
            });
        match written {
            Ok(n) => {
                segment.bytes += n;
                segment.records.push(RecordMeta {
                    offset,
                    len: payload.len() as u32,
                    items,
                });
                segment.pending += u64::from(items);
                Ok(Appended::Spooled { evicted })
            }
            Err(e) => {
                // A failed write (a full disk) may leave part of a record: that segment is
                // closed there (its tail is skipped when read), and the next append starts
                // another.
                segment.bytes = fs::metadata(&path)
                    .map(|m| m.len())
                    .unwrap_or(segment.bytes);
                self.writer = None;
                Err(e)
            }
        }
    }

    /// The oldest record not yet replayed, read back and checked.
    pub fn oldest(&mut self) -> Result<Option<Replay>, SpoolError> {
        loop {
            let Some(segment) = self.segments.iter().find(|s| s.acked < s.records.len()) else {
                return Ok(None);
            };
            let (seq, index, meta, path) = (
                segment.seq,
                segment.acked,
                segment.records[segment.acked],
                segment.path.clone(),
            );
            let read = File::open(&path).and_then(|mut f| segment::read_payload(&mut f, meta));
            match read {
                Ok(payload) => {
                    return Ok(Some(Replay {
                        payload,
                        items: u64::from(meta.items),
                        seq,
                        index,
                    }));
                }
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    log::warn!(
                        "spool segment {}: a record changed on disk since it was read: skipped",
                        path.display()
                    );
                    self.ack_at(seq, index)?;
                }
                Err(source) => return Err(SpoolError::Io { path, source }),
            }
        }
    }

    /// Marks `replay` as delivered (or given up): it is not replayed again.
    pub fn ack(&mut self, replay: &Replay) -> Result<(), SpoolError> {
        self.ack_at(replay.seq, replay.index)
    }

    fn ack_at(&mut self, seq: u64, index: usize) -> Result<(), SpoolError> {
        let Some(segment) = self.segments.iter_mut().find(|s| s.seq == seq) else {
            return Ok(()); // evicted meanwhile
        };
        segment.ack_upto(index + 1);
        let path = ack_path(&segment.path);
        write_ack(&path, segment.acked).map_err(|source| SpoolError::Io { path, source })?;
        self.remove_replayed();
        Ok(())
    }

    /// Removes the segments (not the one being written) whose records are all replayed.
    fn remove_replayed(&mut self) {
        let writing = self
            .writer
            .as_ref()
            .and(self.segments.back().map(|s| s.seq));
        self.segments.retain(|s| {
            let done = s.acked >= s.records.len() && Some(s.seq) != writing;
            if done {
                let _ = fs::remove_file(&s.path);
                let _ = fs::remove_file(ack_path(&s.path));
            }
            !done
        });
    }

    /// Removes the oldest segment; its items not yet replayed.
    fn evict_oldest(&mut self) -> Option<u64> {
        if self.segments.len() == 1 && self.writer.is_some() {
            // The only segment is the one being written: closed, then removed.
            self.writer = None;
        }
        let oldest = self.segments.pop_front()?;
        let _ = fs::remove_file(&oldest.path);
        let _ = fs::remove_file(ack_path(&oldest.path));
        Some(oldest.pending_items())
    }

    fn start_segment(&mut self) -> Result<(), SpoolError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.dir.join(format!("seg-{:020}.spool", self.next_seq));
        let mut file = File::options()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| SpoolError::Io {
                path: path.clone(),
                source,
            })?;
        file.write_all(&segment::header(self.signal))
            .map_err(|source| SpoolError::Io {
                path: path.clone(),
                source,
            })?;
        self.segments.push_back(Segment::read(
            self.next_seq,
            path,
            HEADER_BYTES as u64,
            Vec::new(),
            0,
        ));
        self.next_seq += 1;
        self.writer = Some(file);
        // The segment written before is complete now: removed if all of it was replayed.
        self.remove_replayed();
        Ok(())
    }

    fn io(&self, source: io::Error) -> SpoolError {
        SpoolError::Io {
            path: self.dir.clone(),
            source,
        }
    }
}
