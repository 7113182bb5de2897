//! An exporter's last failure in one line, for a table, a summary and the Python stats:
//! `rejected: 401 Unauthorized from 127.0.0.1:18401`, not the SDK's nested debug output.
//!
//! The exporter that knows most says it: a sandboxed exporter records what the guest answered
//! (and the HTTP answer the host saw during the call, which names the status and the server);
//! for any other exporter (OTLP, one injected in code) the batch queue or the metric pipeline
//! records the export's error, unless the exporter recorded one during that export.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use opentelemetry_sdk::error::OTelSdkError;

/// The longest line kept, in characters: enough for a status, a server and a reason.
pub const MAX_ERROR_LINE: usize = 240;

/// The last failure of one exporter, and how many were recorded.
#[derive(Debug, Default)]
pub(crate) struct LastError {
    line: Mutex<Option<String>>,
    recorded: AtomicU64,
}

impl LastError {
    /// `line` is now the last failure (made one line and cut).
    pub(crate) fn record(&self, line: &str) {
        *self.line.lock().unwrap_or_else(|p| p.into_inner()) = Some(one_line(line));
        self.recorded.fetch_add(1, Relaxed);
    }

    /// How many failures were recorded so far: taken before an export, so that after it fails
    /// the caller knows whether the exporter said anything itself.
    pub(crate) fn recorded(&self) -> u64 {
        self.recorded.load(Relaxed)
    }

    /// An export failed with `e`: recorded unless the exporter recorded its own line since
    /// `since` (a [`recorded`](Self::recorded) count).
    pub(crate) fn record_failure(&self, e: &OTelSdkError, since: u64) {
        if self.recorded() == since {
            self.record(&e.to_string());
        }
    }

    /// The last failure, if any.
    pub(crate) fn get(&self) -> Option<String> {
        self.line.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// `text` as one line: without the SDK's `Operation failed: ` wrappers, line breaks and
/// control characters turned into spaces, cut at [`MAX_ERROR_LINE`] characters with `…`.
pub fn one_line(text: &str) -> String {
    let text = text.replace("Operation failed: ", "");
    let mut line = String::with_capacity(text.len().min(MAX_ERROR_LINE + 4));
    let mut last_space = false;
    for (n, c) in text.trim().chars().enumerate() {
        if n == MAX_ERROR_LINE {
            line.push('…');
            break;
        }
        let c = if c.is_control() { ' ' } else { c };
        if c == ' ' && last_space {
            continue;
        }
        last_space = c == ' ';
        line.push(c);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_loses_the_sdk_wrappers_and_breaks_and_is_cut() {
        assert_eq!(
            one_line(
                "Operation failed: export failed after 4 attempts: Operation failed: HTTP 503"
            ),
            "export failed after 4 attempts: HTTP 503"
        );
        assert_eq!(one_line("a\nb\r\n\tc\u{1b}[2J"), "a b c [2J");
        let long = "x".repeat(1000);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), MAX_ERROR_LINE + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn the_exporters_own_line_wins_over_the_export_error() {
        let last = LastError::default();
        let since = last.recorded();
        last.record("rejected: 401 Unauthorized from 127.0.0.1:18401");
        last.record_failure(
            &OTelSdkError::InternalFailure("wasm exporter …".into()),
            since,
        );
        assert_eq!(
            last.get().as_deref(),
            Some("rejected: 401 Unauthorized from 127.0.0.1:18401")
        );
        let since = last.recorded();
        last.record_failure(&OTelSdkError::InternalFailure("HTTP 503".into()), since);
        assert_eq!(last.get().as_deref(), Some("HTTP 503"));
    }
}
