//! The differential suite: Lens against the real NeMo Lens (`nemo-lens[sdk]==0.1.0`, run by
//! `nemo_oracle.py`), given the same environment and the same inputs.
//!
//! - [`config`]: the effective configuration read from the environment (prefixes, stripping,
//!   Python's numbers and booleans, what is rejected) and the OTLP transport per signal;
//! - [`decisions`]: which ranks export, under every strategy, for world sizes 1…64, and which
//!   ranks the rank-aware sampler keeps;
//! - [`setup`]: whole setups — whether the rank exports, the full resource, what is recorded under
//!   the standard `OTEL_*` variables, where `OTEL_METRIC_EXPORT_INTERVAL` is read, and the
//!   one-setup rule;
//! - [`propagation`]: the `traceparent`/`tracestate` written for root and child spans (trace
//!   flags included);
//! - [`console`]: what `exporter = "console"` prints for spans, metrics and log records, byte
//!   for byte (NeMo Lens 0.2.0's one-line format), the resource's key order included;
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
mod propagation;
mod setup;
mod surface;
