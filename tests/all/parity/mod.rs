//! The differential suite: Lens against the real NeMo Lens (`nemo-lens[sdk]==0.1.0`, run by
//! `nemo_oracle.py`), given the same environment and the same inputs.
//!
//! - [`config`]: the effective configuration read from the environment (prefixes, stripping,
//!   Python's numbers and booleans, what is rejected) and the OTLP transport per signal;
//! - [`decisions`]: which ranks export, under every strategy, for world sizes 1…64, and which
//!   ranks the rank-aware sampler keeps;
//! - [`setup`]: whole setups — whether the rank exports, the full resource, what is recorded under
//!   the standard `OTEL_*` variables, and the one-setup rule;
//! - [`console`]: what `exporter = "console"` prints for spans, metrics and log records;
//! - [`surface`]: the helpers training code calls — span groups, safe attributes and redaction,
//!   the semantic-convention names, the inference, RL and Gym instruments.
//!
//! What is not compared, and why (none is a choice Lens makes): `process.pid` (a different
//! process; its type is compared), `telemetry.sdk.language`/`.version` (the SDK describing itself:
//! `python` vs `rust`), a run id drawn at random (its shape is compared), and Lens's documented
//! extras `dl.local_rank` and `lens.version`.

mod config;
mod console;
mod decisions;
mod oracle;
mod setup;
mod surface;
