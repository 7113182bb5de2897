//! The three telemetry signals, and the WIT interfaces exporting them: one type and one version
//! constant for every place that names a signal (config sections, errors, statistics, health
//! metrics, the wasm host). A leaf.

/// The WIT package exporters implement (`wit/`).
pub const WIT_PACKAGE: &str = "lens:exporter";
/// The version of the WIT package in `wit/` this host implements.
pub const WIT_VERSION: &str = "0.3.0";
/// The older version whose span exporters still load.
pub const LEGACY_WIT_VERSION: &str = "0.2.0";

/// A telemetry signal, as the config's sections name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    /// Spans (`[traces]`).
    Traces,
    /// Metrics (`[metrics]`).
    Metrics,
    /// Log records (`[logs]`).
    Logs,
}

impl Signal {
    /// Every signal, in the order Lens lists them.
    pub const ALL: [Signal; 3] = [Signal::Traces, Signal::Metrics, Signal::Logs];

    /// `traces`, `metrics` or `logs`: the config section and the `signal` attribute of the
    /// health metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
            Signal::Logs => "logs",
        }
    }

    /// What one item is called in counts and messages.
    pub fn items(self) -> &'static str {
        match self {
            Signal::Traces => "spans",
            Signal::Metrics => "data points",
            Signal::Logs => "log records",
        }
    }

    /// The WIT interface exporting this signal, without package or version.
    pub fn interface(self) -> &'static str {
        match self {
            Signal::Traces => "span-exporter",
            Signal::Metrics => "metric-exporter",
            Signal::Logs => "log-exporter",
        }
    }

    /// The WIT world exporting this signal's interface alone.
    pub fn world(self) -> &'static str {
        match self {
            Signal::Traces => "exporter",
            Signal::Metrics => "metrics",
            Signal::Logs => "logs",
        }
    }

    /// The full name of this signal's interface in `version` of the package, e.g.
    /// `lens:exporter/metric-exporter@0.3.0`.
    pub fn interface_name(self, version: &str) -> String {
        format!("{WIT_PACKAGE}/{}@{version}", self.interface())
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_follow_the_package_and_version() {
        assert_eq!(
            Signal::Metrics.interface_name(WIT_VERSION),
            "lens:exporter/metric-exporter@0.3.0"
        );
        assert_eq!(
            Signal::Traces.interface_name(LEGACY_WIT_VERSION),
            "lens:exporter/span-exporter@0.2.0"
        );
        // The WIT files say the same version.
        let wit = include_str!("../../../wit/exporter.wit");
        assert!(wit.contains(&format!("package {WIT_PACKAGE}@{WIT_VERSION};")));
    }
}
