//! Every bound the report puts on what it reads and draws (docs/report.md lists them): a run
//! folder is outside input, and the page must open in a browser whatever the run was.

/// A line longer than this is skipped and counted (a 50 MB attribute value, a binary file).
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// `summary.json` and the configuration file are read up to this size.
pub const MAX_SUMMARY_BYTES: u64 = 64 << 20;
/// Folders below the run folder searched for JSON-lines files (`RUN_DIR/rank-0/spans.jsonl`).
pub const MAX_DEPTH: usize = 2;
/// An attribute value is cut to this many characters in the page (hover) and the Perfetto file.
pub const ATTRIBUTE_CHARS: usize = 256;
/// At most this many attributes of a span are kept.
pub const ATTRIBUTES_PER_SPAN: usize = 32;
/// Attributes kept over the whole run; past it spans keep their name and times only (said).
pub const ATTRIBUTE_BYTES: usize = 64 << 20;
/// A log record's body is cut to this many characters.
pub const BODY_CHARS: usize = 1024;
/// Ranks above this number (or below 0) are not a rank: such lines are skipped.
pub const MAX_RANK: u64 = 1 << 20;

/// Lanes drawn one per rank; past it ranks are aggregated into at most this many lanes (by
/// node, else by consecutive ranks), the flagged ranks keeping their own lanes.
pub const LANE_BUDGET: usize = 64;
/// Flagged ranks (stragglers, crashed) drawn in their own lane beside the aggregate lanes.
pub const FLAGGED_LANES: usize = 16;
/// Spans drawn in the timeline over all lanes, shallowest first (a step before its children).
pub const SPAN_BUDGET: usize = 200_000;
/// Bytes of span attributes embedded in the page (for hovering); past it, name and times only.
pub const PAGE_ATTRIBUTE_BYTES: usize = 16 << 20;
/// Log records listed in the page (the first ones in time; the counts cover all).
pub const LOG_BUDGET: usize = 5_000;
/// Metric charts drawn (by name order); the rest are named.
pub const METRIC_BUDGET: usize = 24;
/// Points per chart (time bins).
pub const CHART_BINS: usize = 120;
/// Rows of the step-time distribution and the health table drawn one per rank; past it the
/// slowest, the flagged and a sample are drawn and the table says how many it left out.
pub const ROW_BUDGET: usize = 256;
/// Fault markers per lane.
pub const FAULTS_PER_LANE: usize = 200;
