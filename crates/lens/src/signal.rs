//! The three telemetry signals, and the WIT interfaces exporting and processing them: one type
//! and one version constant for every place that names a signal (config sections, errors,
//! statistics, health metrics, the wasm host). A leaf.

/// The WIT package exporters implement (`wit/`).
pub const WIT_PACKAGE: &str = "lens:exporter";
/// The version of the WIT package in `wit/` this host implements.
pub const WIT_VERSION: &str = "0.4.0";
/// The older versions whose exporters still load, newest first: 0.3.0 (every signal; its
/// exporter interfaces are those of 0.4.0) and 0.2.0 (spans).
pub const OLDER_WIT_VERSIONS: [&str; 2] = ["0.3.0", LEGACY_WIT_VERSION];
/// The oldest version whose span exporters still load (its `export` error is a string).
pub const LEGACY_WIT_VERSION: &str = "0.2.0";

/// What a component does with a signal's batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Sends them somewhere (`span-exporter`, …), at the end of the pipeline.
    Exporter,
    /// Keeps, drops or edits their items before the exporters see them (`span-processor`, …;
    /// since 0.4.0).
    Processor,
}

impl Role {
    /// `exporter` or `processor`, as messages and statistics say.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Exporter => "exporter",
            Role::Processor => "processor",
        }
    }

    /// The config key listing them: `exporters`, `processors`.
    pub fn key(self) -> &'static str {
        match self {
            Role::Exporter => "exporters",
            Role::Processor => "processors",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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

    /// The WIT interface processing this signal, without package or version.
    pub fn processor_interface(self) -> &'static str {
        match self {
            Signal::Traces => "span-processor",
            Signal::Metrics => "metric-processor",
            Signal::Logs => "log-processor",
        }
    }

    /// The WIT interface of `role` for this signal, without package or version.
    pub fn interface_of(self, role: Role) -> &'static str {
        match role {
            Role::Exporter => self.interface(),
            Role::Processor => self.processor_interface(),
        }
    }

    /// The WIT world exporting this signal's exporter interface alone.
    pub fn world(self) -> &'static str {
        match self {
            Signal::Traces => "exporter",
            Signal::Metrics => "metrics",
            Signal::Logs => "logs",
        }
    }

    /// The WIT world exporting this signal's processor interface alone.
    pub fn processor_world(self) -> &'static str {
        match self {
            Signal::Traces => "span-processors",
            Signal::Metrics => "metric-processors",
            Signal::Logs => "log-processors",
        }
    }

    /// The full name of this signal's exporter interface in `version` of the package, e.g.
    /// `lens:exporter/metric-exporter@0.4.0`.
    pub fn interface_name(self, version: &str) -> String {
        self.interface_name_of(Role::Exporter, version)
    }

    /// The full name of this signal's interface of `role` in `version`, e.g.
    /// `lens:exporter/span-processor@0.4.0`.
    pub fn interface_name_of(self, role: Role, version: &str) -> String {
        format!("{WIT_PACKAGE}/{}@{version}", self.interface_of(role))
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
            "lens:exporter/metric-exporter@0.4.0"
        );
        assert_eq!(Signal::Logs.interface_of(Role::Processor), "log-processor");
        assert_eq!(
            Signal::Traces.interface_name(LEGACY_WIT_VERSION),
            "lens:exporter/span-exporter@0.2.0"
        );
        // The WIT files say the same version.
        for wit in [
            include_str!("../../../wit/exporter.wit"),
            include_str!("../../../wit/metrics.wit"),
            include_str!("../../../wit/logs.wit"),
            include_str!("../../../wit/processors.wit"),
        ] {
            assert!(wit.contains(&format!("package {WIT_PACKAGE}@{WIT_VERSION};")));
        }
        let processors = include_str!("../../../wit/processors.wit");
        for signal in Signal::ALL {
            assert!(processors.contains(&format!("interface {} {{", signal.processor_interface())));
            assert!(processors.contains(&format!("world {} {{", signal.processor_world())));
        }
    }
}
