//! A logger keeping every record, for tests that read what guests print.

use std::sync::Mutex;

/// A logger keeping every record (level and message), for tests that read what guests print.
pub struct CaptureLog(Mutex<Vec<(::log::Level, String)>>);

impl ::log::Log for CaptureLog {
    fn enabled(&self, _: &::log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &::log::Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static CAPTURE: CaptureLog = CaptureLog(Mutex::new(Vec::new()));

/// Installs the capturing logger (once per test binary) and returns it.
pub fn capture_log() -> &'static CaptureLog {
    if ::log::set_logger(&CAPTURE).is_ok() {
        ::log::set_max_level(::log::LevelFilter::Info);
    }
    &CAPTURE
}

impl CaptureLog {
    /// The messages containing `needle`.
    pub fn matching(&self, needle: &str) -> Vec<String> {
        self.matching_at(None, needle)
    }

    /// The messages logged at `level` (any level: `None`) containing `needle`.
    pub fn matching_at(&self, level: Option<::log::Level>, needle: &str) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(l, m)| level.is_none_or(|level| *l == level) && m.contains(needle))
            .map(|(_, m)| m.clone())
            .collect()
    }
}
