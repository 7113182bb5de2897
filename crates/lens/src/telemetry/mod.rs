//! Installing telemetry for one rank: `builder` (the configuration and the decision),
//! `providers` (the tracer, meter and logger providers, assembled through `pipeline`) and
//! `handle` (what the application holds afterwards).

mod builder;
mod handle;
mod providers;

use std::sync::atomic::AtomicBool;

pub use builder::{Telemetry, TelemetryBuilder, setup_telemetry};
pub use handle::TelemetryHandle;

/// Whether a Lens installation currently owns the global providers.
static INSTALLED: AtomicBool = AtomicBool::new(false);
