//! [`Chain`]: the processors one exporter's batches go through, replaceable while it runs.
//!
//! A batch takes the chain as it is when the batch starts ([`Chain::current`]) and keeps it to
//! its end, so a reload that adds, removes or reorders processors puts each batch through the
//! old chain or the new one, never a mix. The stages of a chain taken out are released (the
//! last user shuts a processor down) only once no batch still runs through them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How long a processor taken out by a reload gets to shut down once its last batch is through.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// A processor as a chain holds it: counted in by each chain using it, out when it is done.
pub trait Retained: Send + Sync {
    /// One more chain uses it.
    fn retain(&self);
    /// A chain using it is done (the last one shuts it down within `timeout`).
    fn release(&self, timeout: Duration);
}

impl<T: 'static> Retained for dyn super::ExportStage<T> {
    fn retain(&self) {
        super::ExportStage::retain(self);
    }

    fn release(&self, timeout: Duration) {
        super::ExportStage::release(self, timeout);
    }
}

/// One version of a chain: its stages in order, released once no batch uses them.
pub struct Stages<S: ?Sized + Retained> {
    list: Vec<Arc<S>>,
    released: AtomicBool,
}

impl<S: ?Sized + Retained> Stages<S> {
    /// The stages, in order.
    pub fn list(&self) -> &[Arc<S>] {
        &self.list
    }

    fn release(&self, timeout: Duration) {
        if !self.released.swap(true, Ordering::SeqCst) {
            self.list.iter().for_each(|s| s.release(timeout));
        }
    }
}

impl<S: ?Sized + Retained> Drop for Stages<S> {
    fn drop(&mut self) {
        self.release(RELEASE_TIMEOUT);
    }
}

/// The processors of one exporter, in order; shared by its queue and a reload.
pub struct Chain<S: ?Sized + Retained> {
    current: RwLock<Arc<Stages<S>>>,
}

impl<S: ?Sized + Retained> std::fmt::Debug for Chain<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("stages", &self.current().list.len())
            .finish()
    }
}

fn stages<S: ?Sized + Retained>(list: Vec<Arc<S>>) -> Arc<Stages<S>> {
    list.iter().for_each(|s| s.retain());
    Arc::new(Stages {
        list,
        released: AtomicBool::new(false),
    })
}

impl<S: ?Sized + Retained> Chain<S> {
    /// A chain of `list`, each retained.
    pub fn new(list: Vec<Arc<S>>) -> Self {
        Self {
            current: RwLock::new(stages(list)),
        }
    }

    /// The chain as it is now: one batch's, to its end.
    pub fn current(&self) -> Arc<Stages<S>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Batches starting from now go through `list`; the stages taken out are released once
    /// the batches running through them end.
    pub fn replace(&self, list: Vec<Arc<S>>) {
        let new = stages(list);
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|p| p.into_inner()),
            new,
        );
        drop(old);
    }

    /// The exporter shut down: its stages are released within `timeout` (those a batch still
    /// runs through, once it ends).
    pub fn shutdown(&self, timeout: Duration) {
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|p| p.into_inner()),
            stages(Vec::new()),
        );
        if let Some(old) = Arc::into_inner(old) {
            old.release(timeout);
        }
    }
}
