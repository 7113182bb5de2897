//! Reading a run folder: its JSON-lines files (any depth up to [`MAX_DEPTH`], rank from the
//! line's resource or the path, `rank-3.jsonl` or `rank3/spans.jsonl`), `summary.json`, the
//! configuration and each rank's log. Every line is bounded ([`MAX_LINE_BYTES`]) and every
//! line not used is counted by reason.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ReportError;
use super::formats::{self, NotARecord, Record};
use super::limits::{ATTRIBUTE_BYTES, MAX_DEPTH, MAX_LINE_BYTES, MAX_RANK, MAX_SUMMARY_BYTES};
use super::model::{
    Fault, LogRec, MetricPoint, RankData, RankHealth, RunData, RunSummary, SpanRec,
};

/// The `summary.json` format this Lens writes and reads (`lens demo`'s launcher).
pub const SUMMARY_FORMAT: &str = "lens-run-summary/1";

/// Reads `dir`; `config` is the run's configuration file when it is not `dir/config.toml`.
pub fn read_run(dir: &Path, config: Option<&Path>) -> Result<RunData, ReportError> {
    let meta = std::fs::metadata(dir).map_err(|source| ReportError::Folder {
        dir: dir.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(ReportError::NotAFolder(dir.to_path_buf()));
    }
    let mut run = RunData::default();
    let mut files = Vec::new();
    collect(dir, 0, &mut files);
    files.sort();
    for file in &files {
        read_lines(&mut run, dir, file);
    }
    read_summary(&mut run, dir);
    read_rank_logs(&mut run, dir);
    read_config(
        &mut run,
        config
            .map(Path::to_path_buf)
            .unwrap_or(dir.join("config.toml")),
    );
    if run
        .ranks
        .values()
        .all(|r| r.spans.is_empty() && r.metrics.is_empty() && r.logs.is_empty())
        && run.summary.is_none()
    {
        return Err(ReportError::Empty {
            dir: dir.to_path_buf(),
            files: files.len(),
            skipped: run.skipped.total(),
        });
    }
    if run.attr_bytes >= ATTRIBUTE_BYTES {
        run.notes.push(format!(
            "span attributes past the first {} MiB were not kept (those spans show name and times only)",
            ATTRIBUTE_BYTES >> 20
        ));
    }
    Ok(run)
}

/// The JSON-lines files under `dir` (`.jsonl`, `.ndjson`), symlinks not followed.
fn collect(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() && depth < MAX_DEPTH {
            collect(&path, depth + 1, out);
        } else if kind.is_file()
            && path
                .extension()
                .is_some_and(|e| e == "jsonl" || e == "ndjson")
        {
            out.push(path);
        }
    }
}

/// The rank a path names: `rank-3`, `rank_3`, `rank3` in its file name, else in a folder's.
pub fn rank_in_path(path: &Path) -> Option<u32> {
    path.iter().rev().find_map(|part| {
        let s = part.to_str()?.to_ascii_lowercase();
        let at = s.find("rank")? + 4;
        let rest = s[at..].trim_start_matches(['-', '_', '.']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let n: u64 = digits.parse().ok()?;
        (n < MAX_RANK).then_some(n as u32)
    })
}

/// What a bounded line reader returns.
enum Line {
    Text(Vec<u8>),
    TooLong,
    End,
}

/// The next line of `r`, at most [`MAX_LINE_BYTES`] held (a longer one is read past).
fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if buf.is_empty() {
                Line::End
            } else {
                Line::Text(std::mem::take(buf))
            });
        }
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long {
            if buf.len() + part.len() > MAX_LINE_BYTES {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Text(std::mem::take(buf))
            });
        }
    }
}

fn read_lines(run: &mut RunData, dir: &Path, file: &Path) {
    let shown = file.strip_prefix(dir).unwrap_or(file).display().to_string();
    let Ok(f) = File::open(file) else {
        run.skipped.add("a file that cannot be opened", &shown);
        return;
    };
    run.files += 1;
    let path_rank = rank_in_path(file.strip_prefix(dir).unwrap_or(file));
    let mut reader = BufReader::with_capacity(1 << 16, f);
    let mut buf = Vec::new();
    loop {
        let line = match next_line(&mut reader, &mut buf) {
            Ok(Line::End) => break,
            Ok(Line::TooLong) => {
                run.skipped
                    .add(format!("a line over {} MiB", MAX_LINE_BYTES >> 20), &shown);
                continue;
            }
            Ok(Line::Text(t)) => t,
            Err(_) => {
                run.skipped
                    .add("a read error (the rest of the file)", &shown);
                break;
            }
        };
        run.lines += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(_) => {
                run.skipped
                    .add("a line that is not JSON (or cut short)", &shown);
                continue;
            }
        };
        match formats::record(&value) {
            Ok(record) => add(run, record, path_rank),
            Err(NotARecord::Unknown) => run.skipped.add(
                "a line of no format Lens reads (a newer format, or another tool's)",
                &shown,
            ),
            Err(NotARecord::Bad(field)) => run
                .skipped
                .add(format!("a record without a valid `{field}`"), &shown),
            Err(NotARecord::EndsBeforeStart) => {
                run.skipped.add("a span that ends before it starts", &shown)
            }
        }
    }
}

fn rank_data(run: &mut RunData, rank: u32) -> &mut RankData {
    run.ranks.entry(rank).or_default()
}

fn add(run: &mut RunData, record: Record, path_rank: Option<u32>) {
    match record {
        Record::Span(s) => {
            let rank = s.origin.rank.or(path_rank).unwrap_or(0);
            let attrs = if run.attr_bytes < ATTRIBUTE_BYTES {
                formats::compact_attributes(&s.attributes).map(|a| {
                    run.attr_bytes += a.len();
                    a.into_boxed_str()
                })
            } else {
                None
            };
            let step = super::analysis::is_step(&s.name, &s.attributes);
            let name = run.intern(&s.name);
            let data = rank_data(run, rank);
            if data.node.is_none() {
                data.node = s.origin.node;
            }
            data.spans.push(SpanRec {
                name,
                span_id: s.span_id,
                parent: s.parent,
                start: s.start,
                end: s.end,
                attrs,
                step,
            });
        }
        Record::Metrics(points) => {
            for m in points {
                let rank = m.origin.rank.or(path_rank).unwrap_or(0);
                let series = rank_data(run, rank).metrics.entry(m.name).or_default();
                series.unit = m.unit;
                series.kind = m.kind;
                if m.value.is_finite() {
                    series.points.push(MetricPoint {
                        time: m.time,
                        value: m.value,
                    });
                }
            }
        }
        Record::Log(l) => {
            let rank = l.origin.rank.or(path_rank).unwrap_or(0);
            rank_data(run, rank).logs.push(LogRec {
                time: l.time,
                severity_number: l.severity_number,
                severity_text: l.severity_text,
                body: l.body,
                scope: l.scope,
            });
        }
    }
}

/// A file of at most [`MAX_SUMMARY_BYTES`] as text; `None` when absent.
fn read_small(run: &mut RunData, path: &Path, shown: &str) -> Option<String> {
    let file = File::open(path).ok()?;
    let mut text = String::new();
    match file.take(MAX_SUMMARY_BYTES + 1).read_to_string(&mut text) {
        Ok(n) if n as u64 > MAX_SUMMARY_BYTES => {
            run.skipped.add(
                format!("a file over {} MiB", MAX_SUMMARY_BYTES >> 20),
                shown,
            );
            None
        }
        Ok(_) => Some(text),
        Err(_) => {
            run.skipped.add("a file that is not UTF-8 text", shown);
            None
        }
    }
}

/// `summary.json`: this Lens's object (`format`, `ranks`, `failed`), or an earlier demo's
/// array of rank summaries.
fn read_summary(run: &mut RunData, dir: &Path) {
    let Some(text) = read_small(run, &dir.join("summary.json"), "summary.json") else {
        return;
    };
    let Ok(value) = serde_json::from_str::<Value>(&text) else {
        run.skipped
            .add("a summary that is not JSON", "summary.json");
        return;
    };
    let mut summary = RunSummary::default();
    let (ranks, failed) = match &value {
        Value::Array(list) => (list.as_slice(), &[][..]),
        Value::Object(obj) => {
            let format = obj.get("format").and_then(Value::as_str).unwrap_or("");
            if format != SUMMARY_FORMAT {
                run.skipped.add(
                    format!("a summary of format `{format}` (this Lens reads `{SUMMARY_FORMAT}`)"),
                    "summary.json",
                );
                return;
            }
            summary.run_id = obj.get("run_id").and_then(Value::as_str).map(String::from);
            summary.world_size = obj
                .get("world_size")
                .and_then(Value::as_u64)
                .map(|n| n as u32);
            summary.nodes = obj.get("nodes").and_then(Value::as_u64).map(|n| n as u32);
            let list = |key| {
                obj.get(key)
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
            };
            (list("ranks"), list("failed"))
        }
        _ => {
            run.skipped
                .add("a summary of no format Lens reads", "summary.json");
            return;
        }
    };
    let rank_of = |v: &Value| {
        v.get("rank")
            .and_then(Value::as_u64)
            .filter(|&n| n < MAX_RANK)
            .map(|n| n as u32)
    };
    let node_of = |v: &Value| v.get("node").and_then(Value::as_u64).map(|n| n as u32);
    for entry in ranks {
        let (Some(rank), Some(obj)) = (rank_of(entry), entry.as_object()) else {
            run.skipped
                .add("a rank summary without its `rank`", "summary.json");
            continue;
        };
        let health = summary.ranks.entry(rank).or_default();
        health.node = node_of(entry);
        health.summary = Some(obj.clone());
    }
    for entry in failed {
        let Some(rank) = rank_of(entry) else {
            run.skipped
                .add("a failed rank without its `rank`", "summary.json");
            continue;
        };
        let health: &mut RankHealth = summary.ranks.entry(rank).or_default();
        health.node = node_of(entry);
        health.failed = Some(
            entry
                .get("error")
                .and_then(Value::as_str)
                .map(|e| formats::cut(e, 512))
                .unwrap_or_else(|| "failed".into()),
        );
    }
    run.summary = Some(summary);
}

/// Each rank's log (`rank-N.log`: host warnings and errors, forwarded guest output): its
/// warnings and errors become fault markers (`[2026-12-07T20:01:20.123Z WARN  target] text`);
/// an untimed `error:` or crash line is placed at the rank's end.
fn read_rank_logs(run: &mut RunData, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rank) = name
            .strip_prefix("rank-")
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|&n| u64::from(n) < MAX_RANK)
        else {
            continue;
        };
        let Some(text) = read_small(run, &path, &name) else {
            continue;
        };
        let faults: Vec<Fault> = text.lines().filter_map(fault_of).collect();
        if !faults.is_empty() {
            rank_data(run, rank).faults.extend(faults);
        }
    }
}

/// A fault from one log line, when the line is a warning or an error.
pub fn fault_of(line: &str) -> Option<Fault> {
    let text = formats::cut(line, 512);
    if let Some(rest) = line.strip_prefix('[') {
        let (stamp, rest) = rest.split_once(' ')?;
        let level = rest.split_whitespace().next()?;
        if !matches!(level, "WARN" | "ERROR") {
            return None;
        }
        return Some(Fault {
            time: formats::iso_nanos(stamp),
            text,
        });
    }
    let lower = line.to_ascii_lowercase();
    (lower.starts_with("error") || lower.contains("crash") || lower.contains("panicked"))
        .then_some(Fault { time: None, text })
}

/// The configuration, redacted: parsed as a Lens config and printed again (secrets as
/// `<redacted>`); anything else is not shown (its secrets could not be found).
fn read_config(run: &mut RunData, path: PathBuf) {
    if !path.exists() {
        run.config_note = Some(format!(
            "no configuration: {} is absent (`lens report --config FILE` names one)",
            path.display()
        ));
        return;
    }
    let shown = path.display().to_string();
    let Some(text) = read_small(run, &path, &shown) else {
        run.config_note = Some(format!("{shown} could not be read"));
        return;
    };
    match crate::LensConfig::from_toml_str(&text, &crate::config::ConfigSource::File(path.clone()))
    {
        Ok(cfg) => run.config = Some(cfg.to_toml()),
        // Not the error's text: a TOML error quotes the line, which may hold a secret.
        Err(_) => {
            run.config_note = Some(format!(
                "{shown}: not shown (not a Lens configuration, so its secrets cannot be told \
                 apart; `lens config validate {shown}` says why)"
            ))
        }
    }
}
