//! [`Slots`]: the processors one signal fans out to, in order, some named after the config
//! entry they were built from; a reload replaces, adds and removes named ones while items
//! flow (the SDK's providers fix their processors when built, so Lens registers one fan-out
//! per signal and keeps the list here).

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::batch::{ExporterSnapshot, ExporterStats};

/// One processor, and the config entry it was built from (`None`: added in code).
pub(crate) struct Slot<P> {
    pub name: Option<String>,
    pub processor: P,
}

/// What a reload does to one signal's processors, applied at one instant.
pub(crate) enum Change<P> {
    /// The entry's processor is replaced (a new one with the same statistics).
    Replace(String, P),
    /// A new entry, after the others.
    Add(String, P),
    /// The entry is gone.
    Remove(String),
}

/// The processors of one signal.
pub(crate) struct Slots<P> {
    slots: RwLock<Vec<Slot<P>>>,
}

impl<P> Default for Slots<P> {
    fn default() -> Self {
        Self {
            slots: RwLock::new(Vec::new()),
        }
    }
}

impl<P> Slots<P> {
    /// Appends a processor.
    pub(crate) fn push(&self, name: Option<String>, processor: P) {
        self.write().push(Slot { name, processor });
    }

    /// The processors, for a pass over them (a reload waits until it ends).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Vec<Slot<P>>> {
        self.slots.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The processors, to change them (every pass over them waits).
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Vec<Slot<P>>> {
        self.slots.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies `changes` at one instant (no item sees half of them); returns the processors
    /// taken out with their entries' names, to be shut down by the caller. `prepare` runs on
    /// each new processor first (it gets the provider's resource).
    pub(crate) fn apply(
        &self,
        changes: Vec<Change<P>>,
        mut prepare: impl FnMut(&mut P),
    ) -> Vec<(String, P)> {
        let mut slots = self.write();
        let mut out = Vec::new();
        for change in changes {
            match change {
                Change::Replace(name, mut processor) | Change::Add(name, mut processor) => {
                    prepare(&mut processor);
                    match slots.iter_mut().find(|s| s.name.as_deref() == Some(&name)) {
                        Some(slot) => {
                            out.push((name, std::mem::replace(&mut slot.processor, processor)));
                        }
                        None => slots.push(Slot {
                            name: Some(name),
                            processor,
                        }),
                    }
                }
                Change::Remove(name) => {
                    if let Some(i) = slots.iter().position(|s| s.name.as_deref() == Some(&name)) {
                        out.push((name, slots.remove(i).processor));
                    }
                }
            }
        }
        out
    }
}

/// The statistics of one signal's exporters, in the order they were added; an entry a reload
/// removes stays listed (its counts are history), one added back under its name continues
/// them.
#[derive(Clone, Default)]
pub(crate) struct StatsList(Arc<RwLock<Vec<Arc<ExporterStats>>>>);

impl StatsList {
    /// Lists `stats`, once.
    pub(crate) fn add(&self, stats: Arc<ExporterStats>) {
        let mut all = self.0.write().unwrap_or_else(|p| p.into_inner());
        if !all.iter().any(|s| Arc::ptr_eq(s, &stats)) {
            all.push(stats);
        }
    }

    /// The statistics listed under `name`, else new ones (not yet listed).
    pub(crate) fn named_or_new(&self, name: &str) -> Arc<ExporterStats> {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|s| s.name() == name)
            .cloned()
            .unwrap_or_else(|| Arc::new(ExporterStats::new(name)))
    }

    /// Every exporter's statistics.
    pub(crate) fn all(&self) -> Vec<Arc<ExporterStats>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A copy of every exporter's counters.
    pub(crate) fn snapshots(&self) -> Vec<ExporterSnapshot> {
        self.all().iter().map(|s| s.snapshot()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(slots: &Slots<u32>) -> Vec<(Option<String>, u32)> {
        slots
            .read()
            .iter()
            .map(|s| (s.name.clone(), s.processor))
            .collect()
    }

    #[test]
    fn changes_keep_the_order_and_return_what_they_took_out() {
        let slots = Slots::default();
        slots.push(Some("a".into()), 1);
        slots.push(None, 2);
        slots.push(Some("b".into()), 3);
        let out = slots.apply(
            vec![
                Change::Replace("b".into(), 30),
                Change::Remove("a".into()),
                Change::Add("c".into(), 4),
                Change::Remove("missing".into()),
            ],
            |p| *p += 100,
        );
        assert_eq!(out, vec![("b".to_string(), 3), ("a".to_string(), 1)]);
        assert_eq!(
            names(&slots),
            vec![(None, 2), (Some("b".into()), 130), (Some("c".into()), 104)]
        );
    }
}
