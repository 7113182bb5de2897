//! A logger keeping every record, for tests that read what guests print.

use std::sync::Mutex;

/// A logger keeping every record, for tests that read what guests print.
pub struct CaptureLog(Mutex<Vec<String>>);

impl ::log::Log for CaptureLog {
    fn enabled(&self, _: &::log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &::log::Record<'_>) {
        self.0.lock().unwrap().push(record.args().to_string());
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
    /// The records containing `needle`.
    pub fn matching(&self, needle: &str) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .cloned()
            .collect()
    }
}
