//! What a reload does with each entry, or why it cannot be made.

use std::collections::BTreeSet;

use std::sync::Arc;

use super::{Registry, Running};
use crate::config::{ExporterSpec, LensConfig, WasmExporterSpec};
use crate::error::LensError;
use crate::signal::Signal;
use crate::wasm::processors::component_of;
use crate::wasm::reload::Reloadable;

/// What happens to one entry.
pub(super) enum Step {
    Keep,
    Swap(WasmExporterSpec),
    /// A processor's new component, swapped into its running instances.
    SwapProcessor(Arc<Reloadable>, WasmExporterSpec),
    Replace(ExporterSpec),
    Add(ExporterSpec),
    Remove,
    /// The signal's processors were added, removed, reordered, renamed or re-aimed: every
    /// exporter of the signal gets the new chain (processors whose entry did not change are
    /// kept as they run).
    Rechain,
}

pub(super) struct Planned {
    pub(super) signal: Signal,
    pub(super) name: String,
    pub(super) step: Step,
}

/// The top-level keys a reload applies (through the exporters they describe).
const APPLIED_KEYS: &[&str] = &[
    "traces",
    "metrics",
    "logs",
    "exporter",
    "otlp",
    "batch",
    "log_batch",
    "wasm_cache",
    "reload",
];

/// What to do with each entry, or why the reload cannot be made (nothing changed then).
pub(super) fn plan(registry: &Registry, new: &LensConfig) -> Result<Vec<Planned>, LensError> {
    let refuse = |name: &str, message: String| LensError::ReloadUnsupported {
        exporter: name.to_string(),
        message,
    };
    let otlp_changed = new.otlp != registry.config.otlp;
    let mut planned = Vec::new();
    for signal in Signal::ALL {
        let (old, now) = (
            &registry.config.signal(signal).processors,
            &new.signal(signal).processors,
        );
        let same_places =
            old.len() == now.len() && old.iter().zip(now).all(|(a, b)| a.same_place_as(b));
        if !same_places {
            let running = registry.processors.iter().any(|p| p.signal == signal);
            if !registry.signals.contains(&signal) && running {
                let name = now.first().or(old.first()).map(|p| p.display_name());
                return Err(refuse(
                    &name.unwrap_or_default(),
                    format!(
                        "[[{signal}.processors]] changed for exporters injected in code: their \
                         processors can swap a file and settings in place, and change otherwise \
                         at the next start"
                    ),
                ));
            }
            if registry.signals.contains(&signal) {
                planned.push(Planned {
                    signal,
                    name: format!("[[{signal}.processors]]"),
                    step: Step::Rechain,
                });
            }
            continue;
        }
        for spec in now {
            let name = spec.display_name();
            let running = registry
                .processors
                .iter()
                .find(|p| p.signal == signal && p.name == name);
            let Some(running) = running else { continue };
            if running.processor.runs(spec) {
                continue;
            }
            let Some(reloadable) = running.processor.reloadable() else {
                return Err(refuse(
                    &name,
                    "the processor was disabled at setup (its guest failed): restart the rank \
                     to start it again"
                        .to_string(),
                ));
            };
            planned.push(Planned {
                signal,
                name,
                step: Step::SwapProcessor(reloadable, component_of(spec)),
            });
        }
    }
    for &signal in &registry.signals {
        let wanted = new.exporters_of(signal);
        let mut seen = BTreeSet::new();
        for spec in &wanted {
            let name = spec.display_name();
            if !seen.insert(name.clone()) {
                return Err(refuse(
                    &name,
                    format!(
                        "two [[{signal}.exporters]] entries are named `{name}`: give each a \
                         `name` so a reload can tell them apart"
                    ),
                ));
            }
        }
        let running: Vec<&Running> = registry
            .entries
            .iter()
            .filter(|e| e.signal == signal)
            .collect();
        for spec in wanted {
            let name = spec.display_name();
            let batch = spec.batch_config(new.batch_for(signal));
            let old = running.iter().find(|e| e.name == name);
            let step = match (old, &spec) {
                (None, _) => Step::Add(spec),
                (Some(old), ExporterSpec::Wasm(w)) if old.batch == batch => {
                    match (&old.wasm, &old.spec) {
                        (Some(r), _) if r.unchanged(w) => Step::Keep,
                        (Some(_), ExporterSpec::Wasm(_)) => Step::Swap(w.clone()),
                        _ => Step::Replace(spec),
                    }
                }
                (Some(old), _)
                    if old.spec == spec
                        && old.batch == batch
                        && !(otlp_changed && matches!(spec, ExporterSpec::Otlp(_))) =>
                {
                    Step::Keep
                }
                (Some(_), _) => Step::Replace(spec),
            };
            planned.push(Planned { signal, name, step });
        }
        for old in running {
            if !seen.contains(&old.name) {
                planned.push(Planned {
                    signal,
                    name: old.name.clone(),
                    step: Step::Remove,
                });
            }
        }
    }
    for p in &planned {
        let what = match p.step {
            Step::Replace(_) => {
                "rebuilt (its kind or batch settings changed, or it was disabled at setup)"
            }
            Step::Add(_) => "added",
            Step::Remove => "removed",
            Step::Keep | Step::Swap(_) | Step::SwapProcessor(..) | Step::Rechain => continue,
        };
        if p.signal == Signal::Metrics {
            return Err(refuse(
                &p.name,
                format!(
                    "a metric entry cannot be {what} in a running installation: the SDK fixes a \
                     meter provider's readers when it is built; restart the rank to apply it \
                     (a wasm metric entry can change its file and settings in place)"
                ),
            ));
        }
    }
    Ok(planned)
}

/// The top-level keys of `new` that differ from `old` and that a reload does not apply.
pub(super) fn not_applied(old: &LensConfig, new: &LensConfig) -> Vec<String> {
    let (Ok(serde_json::Value::Object(old)), Ok(serde_json::Value::Object(new))) =
        (serde_json::to_value(old), serde_json::to_value(new))
    else {
        return Vec::new();
    };
    let mut keys: Vec<String> = new
        .iter()
        .filter(|(k, v)| !APPLIED_KEYS.contains(&k.as_str()) && old.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort();
    keys
}
