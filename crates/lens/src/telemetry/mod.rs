//! Installing telemetry for one rank: `builder` (the configuration and the decision),
//! `providers` (the tracer, meter and logger providers, assembled through `pipeline`),
//! `handle` (what the application holds afterwards) and `reload` (its exporters replaced
//! while it runs, and what triggers that).

mod builder;
mod handle;
mod providers;
mod reload;

use std::sync::atomic::AtomicBool;

pub use builder::{Telemetry, TelemetryBuilder, setup_telemetry};
pub use handle::TelemetryHandle;

/// Whether a Lens installation currently owns the global providers.
static INSTALLED: AtomicBool = AtomicBool::new(false);
