//! What a guest says, made safe to show: its error messages, its trap details and its
//! stdout/stderr lines reach logs and terminals only with control characters escaped (no ANSI
//! colours or window titles, no line that looks like one of Lens's own), cut to a bounded
//! length with the real number of bytes cut.
//!
//! Guest stdout goes to the log at `info`. Guest stderr is where a guest panics, so its first
//! lines from each instance go to the log at `warn` (visible at the default level), rate-limited
//! per exporter; the rest at `info`. Whether forwarded or not (`forward_stdio = false`), the
//! last lines of an instance's stderr are kept ([`StderrTail`]): when the instance traps, they
//! are part of the fault's message (a panic's location and text), logged at `warn` once, as the
//! trapped instance is discarded.
//!
//! Besides the log, a host may keep a copy of what a guest writes, byte for byte
//! ([`GuestOutputCopy`]): `lens demo` into each rank's run folder (files, [`GuestOutputFiles`]),
//! `lens check` under each case ([`GuestOutputBuffer`]). Both are bounded.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Default of `forward_stdio`: the guest's stdout/stderr lines go to the host's log (the
/// Python package's keyword has the same default).
pub const DEFAULT_FORWARD_STDIO: bool = true;

/// Longest line of guest output forwarded to the log, bytes.
pub const MAX_LOG_LINE: usize = 1000;
/// Guest output forwarded per instance before the rest is dropped, bytes.
pub const MAX_LOG_BYTES_PER_INSTANCE: u64 = 1 << 20;
/// Lines of each instance's stderr logged at `warn`; later ones go to `info`.
pub const STDERR_WARN_LINES: usize = 10;
/// At most this many `warn` lines of guest stderr per exporter per minute.
pub const STDERR_WARN_PER_MINUTE: usize = 20;
/// Lines of an instance's stderr kept for its fault message.
const TAIL_LINES: usize = 4;
/// Longest stderr excerpt in a fault message, bytes.
const TAIL_BYTES: usize = 400;

/// The last lines an instance wrote to stderr, for the message of its fault.
#[derive(Debug, Default)]
pub struct StderrTail(Mutex<std::collections::VecDeque<String>>);

impl StderrTail {
    fn push(&self, line: &str) {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line.to_string());
    }

    /// What the instance said last (escaped lines joined with ` | `, Rust's backtrace hint
    /// left out), if anything.
    pub fn said(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let said: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
            .collect();
        (!said.is_empty()).then(|| truncate(said.join(" | "), TAIL_BYTES))
    }
}

/// Whether `c` must not reach a terminal as itself: C0 and C1 controls and DEL (escape
/// sequences, carriage returns, newlines that would forge log lines), and the Unicode format
/// characters that reorder or hide text (bidirectional overrides and isolates).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character escaped (`\n`, `\r`, `\t`, else `\u{…}`); borrowed, and
/// so unchanged, when it has none. Only a text with something to escape has its backslashes
/// doubled too (so that it reads back unambiguously: a guest's own `\n` there is `\\n`): a
/// guest's JSON lines, which hold no raw control character, stay parseable as they are.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Cuts `s` to `max` bytes (on a character boundary), noting how many were cut.
pub fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let total = s.len();
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str(&format!("… [{} more bytes]", total - cut));
    }
    s
}

/// What the host shows of a guest's text: cut to `max` bytes, then escaped.
pub fn shown(text: String, max: usize) -> String {
    let cut = truncate(text, max);
    match escape(&cut) {
        Cow::Borrowed(_) => cut,
        Cow::Owned(escaped) => escaped,
    }
}

/// The `warn` lines of one exporter's guest stderr in the current minute.
#[derive(Debug)]
pub struct WarnBudget {
    window: Mutex<(Instant, usize)>,
}

impl Default for WarnBudget {
    fn default() -> Self {
        Self {
            window: Mutex::new((Instant::now(), 0)),
        }
    }
}

impl WarnBudget {
    /// Whether one more `warn` line fits in this minute.
    fn take(&self) -> bool {
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        if w.0.elapsed() >= Duration::from_secs(60) {
            *w = (Instant::now(), 0);
        }
        w.1 += 1;
        w.1 <= STDERR_WARN_PER_MINUTE
    }
}

/// Which of the guest's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// stdout: logged at `info`.
    Stdout,
    /// stderr: its first lines at `warn`.
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Longest copy of one exporter's stream in a file ([`GuestOutputFiles`]), bytes; later output
/// is dropped after a note saying so.
pub const MAX_COPY_FILE_BYTES: u64 = 64 << 20;
/// Longest copy of each stream [`GuestOutputBuffer`] keeps between two takes, bytes.
pub const MAX_COPY_BUFFER_BYTES: usize = 1 << 20;

/// Where a copy of the guests' stdout and stderr goes, besides the log (whatever
/// `forward_stdio` says): the bytes exactly as the guest wrote them.
pub trait GuestOutputSink: Send + Sync + std::fmt::Debug {
    /// `bytes` the guest of exporter `exporter` wrote to `stream`.
    fn write(&self, exporter: &str, stream: Stream, bytes: &[u8]);
}

/// Whether and where a host keeps a copy of its guests' output.
#[derive(Clone, Debug, Default)]
pub enum GuestOutputCopy {
    /// None (the default): the log only.
    #[default]
    None,
    /// Into a sink, shared by every exporter of the installation.
    Sink(Arc<dyn GuestOutputSink>),
}

impl GuestOutputCopy {
    /// Into `<dir>/<exporter>.stdout` and `<dir>/<exporter>.stderr` ([`GuestOutputFiles`]):
    /// one file per exporter name and stream, whichever signals its entries serve.
    pub fn dir(dir: impl Into<std::path::PathBuf>) -> Self {
        GuestOutputCopy::Sink(Arc::new(GuestOutputFiles::new(dir.into())))
    }

    /// The sink to copy into, if any.
    pub(crate) fn sink(&self) -> Option<Arc<dyn GuestOutputSink>> {
        match self {
            GuestOutputCopy::None => None,
            GuestOutputCopy::Sink(s) => Some(s.clone()),
        }
    }
}

/// Guest output into files, `<dir>/<exporter>.stdout` and `.stderr`, appended, each cut at
/// [`MAX_COPY_FILE_BYTES`] (with a last line saying so) across all the exporter's instances. The directory is made on the first
/// write; a file that cannot be written is reported once in the log and left.
#[derive(Debug)]
pub struct GuestOutputFiles {
    dir: std::path::PathBuf,
    files: Mutex<std::collections::HashMap<(String, Stream), CopyFile>>,
}

#[derive(Debug)]
struct CopyFile {
    file: Option<std::fs::File>,
    written: u64,
}

impl GuestOutputFiles {
    /// Files under `dir`.
    pub fn new(dir: std::path::PathBuf) -> Self {
        Self {
            dir,
            files: Mutex::default(),
        }
    }

    /// The file of `exporter`'s `stream`.
    pub fn path(&self, exporter: &str, stream: Stream) -> std::path::PathBuf {
        // The exporter's name is the config's, checked there; a file name must not leave `dir`.
        let safe: String = exporter
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!("{safe}.{}", stream.as_str()))
    }
}

impl GuestOutputSink for GuestOutputFiles {
    fn write(&self, exporter: &str, stream: Stream, bytes: &[u8]) {
        use std::io::Write as _;
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let entry = files
            .entry((exporter.to_string(), stream))
            .or_insert_with(|| {
                let path = self.path(exporter, stream);
                let file = std::fs::create_dir_all(&self.dir)
                    .and_then(|()| {
                        std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&path)
                    })
                    .map_err(|e| {
                        log::warn!(
                            "guest output of `{exporter}`: cannot write {}: {e}",
                            path.display()
                        )
                    })
                    .ok();
                CopyFile { file, written: 0 }
            });
        let Some(file) = entry.file.as_mut() else {
            return;
        };
        let room = MAX_COPY_FILE_BYTES.saturating_sub(entry.written);
        let take = (bytes.len() as u64).min(room) as usize;
        let mut ok = file.write_all(&bytes[..take]).is_ok();
        entry.written += take as u64;
        if take < bytes.len() {
            let _ = writeln!(
                file,
                "\n[lens: the copy of this stream stops at {MAX_COPY_FILE_BYTES} bytes]"
            );
            ok = false;
        }
        if !ok {
            entry.file = None;
        }
    }
}

/// Guest output kept in memory, per stream, until taken (`lens check` shows what each case
/// printed); at most [`MAX_COPY_BUFFER_BYTES`] per stream between takes, the rest counted.
#[derive(Debug, Default)]
pub struct GuestOutputBuffer {
    kept: Mutex<[CopyBuffer; 2]>,
}

/// What a [`GuestOutputBuffer`] held for one stream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CopyBuffer {
    /// The first bytes written.
    pub bytes: Vec<u8>,
    /// Bytes written beyond those.
    pub cut: u64,
}

impl GuestOutputBuffer {
    /// What was written since the last take: `[stdout, stderr]`.
    pub fn take(&self) -> [CopyBuffer; 2] {
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl GuestOutputSink for GuestOutputBuffer {
    fn write(&self, _exporter: &str, stream: Stream, bytes: &[u8]) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let b = &mut kept[stream as usize];
        let take = bytes.len().min(MAX_COPY_BUFFER_BYTES - b.bytes.len());
        b.bytes.extend_from_slice(&bytes[..take]);
        b.cut += (bytes.len() - take) as u64;
    }
}

/// Guest stdout or stderr as log lines: prefixed, escaped, each cut at [`MAX_LOG_LINE`] bytes
/// (with the real count of the rest), at most [`MAX_LOG_BYTES_PER_INSTANCE`] per instance.
#[derive(Clone)]
pub struct LogStream {
    prefix: Arc<str>,
    stream: Stream,
    /// Bytes this instance may still log (stdout and stderr together).
    budget: Arc<AtomicU64>,
    warn_budget: Arc<WarnBudget>,
    /// Lines of this stream logged so far (for the first lines of stderr at `warn`).
    lines: usize,
    /// Whether lines go to the log (`forward_stdio`); else they are only kept in `tail`.
    forward: bool,
    /// Where stderr's last lines are kept for the instance's fault message.
    tail: Option<Arc<StderrTail>>,
    /// Where a copy of the raw bytes goes, with the exporter's name.
    copy: Option<(Arc<str>, Arc<dyn GuestOutputSink>)>,
    /// The start of the current line (at most a line's worth is kept).
    line: Vec<u8>,
    /// Bytes of the current line, kept or not.
    line_len: usize,
}

impl LogStream {
    /// A stream logging under `prefix`, e.g. `wasm exporter `vendor` rank 3 stderr`.
    pub fn new(
        prefix: String,
        stream: Stream,
        budget: Arc<AtomicU64>,
        warn_budget: Arc<WarnBudget>,
    ) -> Self {
        Self {
            prefix: prefix.into(),
            stream,
            budget,
            warn_budget,
            lines: 0,
            forward: true,
            tail: None,
            copy: None,
            line: Vec::new(),
            line_len: 0,
        }
    }

    /// Keeps the last lines in `tail`; logs them only when `forward`.
    pub(crate) fn with_tail(mut self, tail: Arc<StderrTail>, forward: bool) -> Self {
        self.tail = Some(tail);
        self.forward = forward;
        self
    }

    /// Whether lines go to the log (`forward_stdio`).
    pub(crate) fn forwarding(mut self, forward: bool) -> Self {
        self.forward = forward;
        self
    }

    /// Copies every byte into `sink`, as written by exporter `exporter`.
    pub(crate) fn with_copy(mut self, copy: Option<(Arc<str>, Arc<dyn GuestOutputSink>)>) -> Self {
        self.copy = copy;
        self
    }

    fn emit(&mut self) {
        if self.line_len == 0 {
            return;
        }
        let len = std::mem::take(&mut self.line_len);
        let kept = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if let Some(tail) = &self.tail {
            tail.push(&escape(&kept));
        }
        if !self.forward {
            return;
        }
        let remaining = self.budget.fetch_sub(
            (len as u64).min(self.budget.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        if remaining == 0 {
            return;
        }
        let cut = len.saturating_sub(MAX_LOG_LINE);
        let text = escape(&kept);
        let more = if cut > 0 {
            format!("… [{cut} more bytes]")
        } else {
            String::new()
        };
        self.lines += 1;
        let warn = self.stream == Stream::Stderr
            && self.lines <= STDERR_WARN_LINES
            && self.warn_budget.take();
        if warn {
            log::warn!("[{}] {text}{more}", self.prefix);
        } else {
            log::info!("[{}] {text}{more}", self.prefix);
        }
        if remaining <= len as u64 {
            log::warn!(
                "[{}] output budget exhausted; further output is dropped",
                self.prefix
            );
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if let Some((exporter, sink)) = &self.copy {
            sink.write(exporter, self.stream, bytes);
        }
        if !self.forward && self.tail.is_none() {
            return;
        }
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            let newline = chunk.last() == Some(&b'\n');
            let body = if newline {
                &chunk[..chunk.len() - 1]
            } else {
                chunk
            };
            let room = MAX_LOG_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&body[..body.len().min(room)]);
            self.line_len += body.len();
            if newline {
                self.emit();
            }
        }
    }
}

impl Drop for LogStream {
    fn drop(&mut self) {
        self.emit();
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(tokio::io::sink())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        let mut stream = LogStream::new(
            self.prefix.to_string(),
            self.stream,
            self.budget.clone(),
            self.warn_budget.clone(),
        );
        stream.forward = self.forward;
        stream.tail = self.tail.clone();
        stream.copy = self.copy.clone();
        Box::new(stream)
    }
}

#[async_trait::async_trait]
impl Pollable for LogStream {
    async fn ready(&mut self) {}
}

impl OutputStream for LogStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_reordering_characters_are_escaped() {
        assert!(matches!(escape("plain ünïcødé ✓"), Cow::Borrowed(_)));
        assert_eq!(
            escape("\u{1b}[31mred\u{1b}[0m\u{1b}]0;title\u{7}"),
            "\\u{1b}[31mred\\u{1b}[0m\\u{1b}]0;title\\u{7}"
        );
        assert_eq!(
            escape("ok\n[2026-01-01T00:00:00Z WARN lens] forged\r\tx"),
            "ok\\n[2026-01-01T00:00:00Z WARN lens] forged\\r\\tx"
        );
        // Nothing to escape: as it is, backslashes included (a JSON line stays parseable).
        let json = r#"{"msg":"a \"quoted\" C:\\path\n"}"#;
        assert!(matches!(escape(json), Cow::Borrowed(_)));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&escape(json)).unwrap()["msg"],
            "a \"quoted\" C:\\path\n"
        );
        // Something to escape: backslashes doubled too, so the line reads back unambiguously.
        assert_eq!(escape("a\\nb\u{1b}"), r"a\\nb\u{1b}");
        assert_eq!(escape("a\nb"), r"a\nb");
        assert_eq!(
            escape("a\u{202e}b\u{7f}c\u{85}"),
            "a\\u{202e}b\\u{7f}c\\u{85}"
        );
    }

    #[test]
    fn copies_go_to_one_file_per_exporter_and_stream_named_safely() {
        let dir = tempfile::tempdir().unwrap();
        let copy = GuestOutputCopy::dir(dir.path());
        let sink = copy.sink().unwrap();
        // Two entries of one exporter (two signals), and a name that would leave the folder.
        copy.sink()
            .unwrap()
            .write("acme", Stream::Stdout, b"spans\n");
        sink.write("acme", Stream::Stdout, b"logs\n");
        sink.write("acme", Stream::Stderr, b"oops");
        sink.write("../up", Stream::Stdout, b"x");
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert_eq!(read("acme.stdout"), "spans\nlogs\n");
        assert_eq!(read("acme.stderr"), "oops");
        assert_eq!(read(".._up.stdout"), "x");
        let buffer = GuestOutputBuffer::default();
        buffer.write("b", Stream::Stderr, &vec![b'e'; MAX_COPY_BUFFER_BYTES + 10]);
        let [out, err] = buffer.take();
        assert_eq!(
            (out.bytes.len(), err.bytes.len(), err.cut),
            (0, MAX_COPY_BUFFER_BYTES, 10)
        );
        assert_eq!(
            buffer.take(),
            [CopyBuffer::default(), CopyBuffer::default()]
        );
    }

    #[test]
    fn a_long_line_reports_the_bytes_it_did_not_show() {
        let mut s = LogStream::new(
            "t".into(),
            Stream::Stdout,
            Arc::new(AtomicU64::new(u64::MAX)),
            Arc::default(),
        );
        s.push(&vec![b'x'; 5000]);
        s.push(&vec![b'y'; 100_000]);
        assert_eq!(s.line_len, 105_000);
        assert_eq!(s.line.len(), MAX_LOG_LINE);
    }
}
