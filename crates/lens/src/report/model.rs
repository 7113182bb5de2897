//! What a run folder holds once read: per rank its spans, metric points, log records and the
//! launcher's summary, and what was skipped (by reason, counted, with the first file).

use std::collections::{BTreeMap, HashMap};

/// One span as the report keeps it: times in Unix nanoseconds, its name interned, its
/// attributes as a compact JSON object (values cut to [`super::limits::ATTRIBUTE_CHARS`]).
#[derive(Debug, Clone)]
pub struct SpanRec {
    pub name: u32,
    pub span_id: u64,
    /// 0: a root, or a parent on another process (the launcher's span).
    pub parent: u64,
    pub start: u64,
    pub end: u64,
    pub attrs: Option<Box<str>>,
    /// Whether the span is a training step (by name or `dl.iteration`, see [`super::analysis`]).
    pub step: bool,
}

/// One metric data point.
#[derive(Debug, Clone)]
pub struct MetricPoint {
    pub time: u64,
    pub value: f64,
}

/// One metric's points on one rank.
#[derive(Debug, Clone, Default)]
pub struct MetricSeries {
    pub unit: String,
    pub kind: String,
    pub points: Vec<MetricPoint>,
}

/// One log record.
#[derive(Debug, Clone)]
pub struct LogRec {
    pub time: u64,
    pub severity_number: i64,
    pub severity_text: String,
    pub body: String,
    pub scope: String,
}

/// A fault of a rank's exporters, from its log (`rank-N.log`): a host warning or error.
#[derive(Debug, Clone)]
pub struct Fault {
    /// None: the line has no time (a crash message): placed at the rank's last record.
    pub time: Option<u64>,
    pub text: String,
}

/// Everything read of one rank.
#[derive(Debug, Default)]
pub struct RankData {
    pub node: Option<String>,
    pub spans: Vec<SpanRec>,
    pub metrics: BTreeMap<String, MetricSeries>,
    pub logs: Vec<LogRec>,
    pub faults: Vec<Fault>,
}

/// How one rank ended, from `summary.json`.
#[derive(Debug, Clone, Default)]
pub struct RankHealth {
    /// The rank's summary object as written (exported, dropped, retries…).
    pub summary: Option<serde_json::Map<String, serde_json::Value>>,
    /// Why the rank has no summary (crashed, setup failed).
    pub failed: Option<String>,
    pub node: Option<u32>,
}

/// The launcher's `summary.json`.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub run_id: Option<String>,
    pub world_size: Option<u32>,
    pub nodes: Option<u32>,
    pub ranks: BTreeMap<u32, RankHealth>,
}

/// Lines and files the report could not use, by reason.
#[derive(Debug, Default)]
pub struct Skipped {
    /// reason → (count, the first file it was seen in)
    pub reasons: BTreeMap<String, (u64, String)>,
}

impl Skipped {
    pub fn add(&mut self, reason: impl Into<String>, file: &str) {
        let entry = self
            .reasons
            .entry(reason.into())
            .or_insert_with(|| (0, file.to_string()));
        entry.0 += 1;
    }

    pub fn total(&self) -> u64 {
        self.reasons.values().map(|(n, _)| n).sum()
    }
}

/// A run folder, read.
#[derive(Debug, Default)]
pub struct RunData {
    pub names: Vec<String>,
    name_index: HashMap<String, u32>,
    pub ranks: BTreeMap<u32, RankData>,
    pub summary: Option<RunSummary>,
    /// The run's configuration (TOML), secrets redacted.
    pub config: Option<String>,
    /// Why the configuration is not shown, when it is not.
    pub config_note: Option<String>,
    pub skipped: Skipped,
    /// What the reading left out on purpose (budgets), one sentence each.
    pub notes: Vec<String>,
    /// Files read, lines read.
    pub files: u64,
    pub lines: u64,
    /// Bytes of attributes kept so far (bounded by [`super::limits::ATTRIBUTE_BYTES`]).
    pub attr_bytes: usize,
}

impl RunData {
    /// The index of a span name (names repeat: interned once).
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.name_index.insert(name.to_string(), i);
        i
    }

    pub fn span_count(&self) -> usize {
        self.ranks.values().map(|r| r.spans.len()).sum()
    }

    /// The rank's health from the summary, if there is one.
    pub fn health(&self, rank: u32) -> Option<&RankHealth> {
        self.summary.as_ref()?.ranks.get(&rank)
    }
}
