//! Span groups: NeMo Lens's granularity switch. Instrumentation names the group a span belongs
//! to; the config's `span_groups` (a preset or group names, `NEMO_LENS_SPAN_GROUPS`) says which
//! groups an exporting rank records. A span of a disabled group is never created: the check is
//! a lookup in a handful of names.
//!
//! Presets, as in NeMo Lens's `SpanGroup`: `default` = job, checkpoint, evaluate; `per_step`
//! adds model_init, load_checkpoint, step, forward_backward, optimizer; `all` = every group.

use std::sync::{Arc, RwLock};

/// The names of NeMo Lens's span groups (its `SpanGroup` constants).
pub mod group {
    /// The whole job.
    pub const JOB: &str = "job";
    /// Saving a checkpoint.
    pub const CHECKPOINT: &str = "checkpoint";
    /// An evaluation pass.
    pub const EVALUATE: &str = "evaluate";
    /// Building the model.
    pub const MODEL_INIT: &str = "model_init";
    /// Loading a checkpoint.
    pub const LOAD_CHECKPOINT: &str = "load_checkpoint";
    /// One training step.
    pub const STEP: &str = "step";
    /// The forward and backward passes of a step.
    pub const FORWARD_BACKWARD: &str = "forward_backward";
    /// The optimizer's update of a step.
    pub const OPTIMIZER: &str = "optimizer";
}

const DEFAULT: [&str; 3] = [group::JOB, group::CHECKPOINT, group::EVALUATE];
const ALL: [&str; 8] = [
    group::JOB,
    group::CHECKPOINT,
    group::EVALUATE,
    group::MODEL_INIT,
    group::LOAD_CHECKPOINT,
    group::STEP,
    group::FORWARD_BACKWARD,
    group::OPTIMIZER,
];
const PRESETS: [(&str, &[&str]); 3] = [("default", &DEFAULT), ("per_step", &ALL), ("all", &ALL)];

/// A set of enabled span groups (cheap to clone).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpanGroups {
    /// Sorted, without duplicates.
    names: Arc<[&'static str]>,
}

impl SpanGroups {
    /// No group enabled: what a rank that does not export has.
    pub fn none() -> Self {
        Self::default()
    }

    /// Resolves a spec as NeMo Lens's `SpanGroup.resolve`: comma-separated presets and group
    /// names, case-insensitive, blanks ignored. `Err` names the unknown part and lists the valid
    /// ones, in NeMo Lens's words.
    ///
    /// ```
    /// let groups = lens::trace::SpanGroups::resolve("default, STEP").unwrap();
    /// assert!(groups.contains("step") && groups.contains("job") && !groups.contains("optimizer"));
    /// ```
    pub fn resolve(spec: &str) -> Result<Self, String> {
        let mut names: Vec<&'static str> = Vec::new();
        for part in spec.split(',').map(|p| p.trim().to_lowercase()) {
            if part.is_empty() {
                continue;
            }
            if let Some((_, members)) = PRESETS.iter().find(|(name, _)| *name == part) {
                names.extend_from_slice(members);
            } else if let Some(name) = ALL.iter().find(|name| **name == part) {
                names.push(name);
            } else {
                let mut valid: Vec<&str> = ALL
                    .iter()
                    .chain(PRESETS.iter().map(|(n, _)| n))
                    .copied()
                    .collect();
                valid.sort_unstable();
                valid.dedup();
                let valid: Vec<String> = valid.iter().map(|v| format!("'{v}'")).collect();
                return Err(format!(
                    "Unknown span group or preset: '{part}'. Valid options: [{}]",
                    valid.join(", ")
                ));
            }
        }
        names.sort_unstable();
        names.dedup();
        Ok(Self {
            names: names.into(),
        })
    }

    /// Whether `group` is enabled.
    pub fn contains(&self, group: &str) -> bool {
        self.names.contains(&group)
    }

    /// The enabled groups, sorted.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }
}

/// The groups of the process's global installation (NeMo Lens's module state).
static ENABLED: RwLock<Option<SpanGroups>> = RwLock::new(None);

/// Replaces the process's enabled span groups (setup does it for a global installation; tests
/// and notebooks may too), as NeMo Lens's `set_enabled_span_groups`.
pub fn set_enabled_span_groups(groups: SpanGroups) {
    *ENABLED.write().unwrap_or_else(|p| p.into_inner()) = Some(groups);
}

/// Whether `group` is enabled in the process's global installation; `false` before any setup,
/// as NeMo Lens's `is_span_group_enabled`.
pub fn is_span_group_enabled(group: &str) -> bool {
    ENABLED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .is_some_and(|g| g.contains(group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_names_resolve_as_in_nemo_lens() {
        assert_eq!(
            SpanGroups::resolve("default").unwrap().names(),
            ["checkpoint", "evaluate", "job"]
        );
        assert_eq!(SpanGroups::resolve("per_step").unwrap().names().len(), 8);
        assert_eq!(SpanGroups::resolve(" , ").unwrap(), SpanGroups::none());
        let e = SpanGroups::resolve("default,warmup").unwrap_err();
        assert_eq!(
            e,
            "Unknown span group or preset: 'warmup'. Valid options: ['all', 'checkpoint', \
             'default', 'evaluate', 'forward_backward', 'job', 'load_checkpoint', 'model_init', \
             'optimizer', 'per_step', 'step']"
        );
    }
}
