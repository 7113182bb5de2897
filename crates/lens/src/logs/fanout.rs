//! The one log processor Lens registers on the logger provider: it hands every record to the
//! per-exporter batch log processors, in order, which a reload can replace, add and remove
//! (the SDK cannot change the processors of a built provider).

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::logs::{LogProcessor, SdkLogRecord};

use super::BatchLogProcessor;
use crate::slots::{Change, Slots};

/// The batch log processors of one installation.
#[derive(Default)]
pub(crate) struct LogFanOut {
    processors: Slots<BatchLogProcessor>,
    resource: RwLock<Option<Resource>>,
}

impl LogFanOut {
    /// Adds the processor of the config entry `name` (`None`: an exporter injected in code).
    pub(crate) fn add(&self, name: Option<String>, processor: BatchLogProcessor) {
        self.processors.push(name, processor);
    }

    /// Applies a reload's changes at one instant: every record emitted before goes to the
    /// processors taken out, which are returned (to be shut down), every record after to the
    /// new ones. The new ones get the provider's resource first.
    pub(crate) fn apply(
        &self,
        changes: Vec<Change<BatchLogProcessor>>,
    ) -> Vec<(String, BatchLogProcessor)> {
        let resource = self
            .resource
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.processors.apply(changes, |p| {
            if let Some(r) = &resource {
                p.set_resource(r);
            }
        })
    }

    /// Runs `f` on every processor with what is left of `timeout`; the errors joined.
    fn each(
        &self,
        timeout: Duration,
        f: impl Fn(&BatchLogProcessor, Duration) -> OTelSdkResult,
    ) -> OTelSdkResult {
        let deadline = Instant::now().checked_add(timeout);
        let mut errors = Vec::new();
        for slot in self.processors.read().iter() {
            let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
            if let Err(e) = f(&slot.processor, left) {
                errors.push(format!("{}: {e}", slot.processor.stats().name()));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(OTelSdkError::InternalFailure(errors.join("; ")))
        }
    }
}

/// The provider-side handle of [`LogFanOut`].
#[derive(Clone)]
pub(crate) struct FanOutLogProcessor(pub(crate) Arc<LogFanOut>);

impl std::fmt::Debug for FanOutLogProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOutLogProcessor")
            .field("processors", &self.0.processors.read().len())
            .finish()
    }
}

impl LogProcessor for FanOutLogProcessor {
    fn emit(&self, record: &mut SdkLogRecord, scope: &InstrumentationScope) {
        for slot in self.0.processors.read().iter() {
            slot.processor.emit(record, scope);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.each(Duration::MAX, |p, _| p.force_flush())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0
            .each(timeout, |p, left| p.shutdown_with_timeout(left))
    }

    fn set_resource(&mut self, resource: &Resource) {
        *self.0.resource.write().unwrap_or_else(|p| p.into_inner()) = Some(resource.clone());
        for slot in self.0.processors.write().iter_mut() {
            slot.processor.set_resource(resource);
        }
    }
}
