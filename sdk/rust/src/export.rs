//! What every exporter shares: its configuration, the encoding it asks for, and how an export
//! fails.

use std::time::Duration;

use crate::bindings::spans::lens::exporter::types;
use crate::value::{Attributes, Value};

/// What an exporter is constructed with: the `settings` table of its config entry and the
/// resource of the rank.
#[derive(Debug)]
pub struct Config {
    settings: Vec<(String, String)>,
    resource: types::Resource,
}

impl Config {
    /// A configuration as the host passes it (also for tests of an exporter).
    pub fn new(settings: Vec<(String, String)>, resource: types::Resource) -> Self {
        Config { settings, resource }
    }

    /// The value of setting `key`, e.g. `path`.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every setting, in the config's order.
    pub fn settings(&self) -> &[(String, String)] {
        &self.settings
    }

    /// The resource's attributes (`service.name`, `dl.rank`, …).
    pub fn resource(&self) -> Attributes<'_> {
        Attributes::from_wit(&self.resource.attributes)
    }

    /// One resource attribute, e.g. `dl.rank`.
    pub fn resource_attribute(&self, key: &str) -> Option<Value<'_>> {
        self.resource().get(key)
    }

    /// The resource as the WIT record.
    pub fn raw_resource(&self) -> &types::Resource {
        &self.resource
    }
}

/// How the host hands batches to the exporter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// WIT records, copied into the guest's memory by the canonical ABI.
    #[default]
    Typed,
    /// OTLP protobuf bytes: the cheapest to cross, read in place by the span views, or
    /// forwarded as they are.
    OtlpProtobuf,
}

impl Encoding {
    pub(crate) fn wit(self) -> types::Encoding {
        match self {
            Encoding::OtlpProtobuf => types::Encoding::OtlpProtobuf,
            Encoding::Typed => types::Encoding::Typed,
        }
    }
}

/// Why an export did not fully succeed. The host owns retries: answer
/// [`ExportError::retryable`] and it sends the same batch again; never wait in the exporter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportError {
    /// Permanent: the batch is dropped and counted.
    Rejected(String),
    /// Transient: the host retries after a backoff, or after `delay` if given.
    Retryable {
        /// Why, e.g. `HTTP 503`.
        message: String,
        /// At least this long before the next attempt (e.g. `Retry-After`).
        delay: Option<Duration>,
    },
    /// `rejected` items refused, the rest accepted.
    Partial {
        /// How many items were refused.
        rejected: u64,
        /// Why.
        message: String,
    },
}

impl ExportError {
    /// A permanent failure.
    pub fn rejected(message: impl Into<String>) -> Self {
        ExportError::Rejected(message.into())
    }

    /// A transient failure; the host picks the delay.
    pub fn retryable(message: impl Into<String>) -> Self {
        ExportError::Retryable {
            message: message.into(),
            delay: None,
        }
    }

    /// A transient failure with the earliest time to retry.
    pub fn retry_after(message: impl Into<String>, delay: Duration) -> Self {
        ExportError::Retryable {
            message: message.into(),
            delay: Some(delay),
        }
    }

    /// Some items refused.
    pub fn partial(rejected: u64, message: impl Into<String>) -> Self {
        ExportError::Partial {
            rejected,
            message: message.into(),
        }
    }

    pub(crate) fn wit(self) -> types::ExportError {
        match self {
            ExportError::Rejected(m) => types::ExportError::Rejected(m),
            ExportError::Retryable { message, delay } => {
                types::ExportError::Retryable(types::RetryHint {
                    message,
                    delay_ms: delay.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                })
            }
            ExportError::Partial { rejected, message } => {
                types::ExportError::Partial(types::PartialSuccess { rejected, message })
            }
        }
    }
}

/// Any message is a rejection: `?` on a `Result<_, String>` or an I/O error rejects the batch.
impl<E: std::fmt::Display> From<E> for ExportError {
    fn from(e: E) -> Self {
        ExportError::Rejected(e.to_string())
    }
}

/// The result of an export.
pub type ExportResult = Result<(), ExportError>;
