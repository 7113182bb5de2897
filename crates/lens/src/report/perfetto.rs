//! The run's spans as a Chrome trace-event file (`traceEvents`), which ui.perfetto.dev and
//! `chrome://tracing` open: one complete event (`ph: "X"`, `ts`/`dur` in microseconds since the
//! run's first span) per span, a process per rank (`pid` = rank, named by `process_name`
//! metadata, sorted by rank) and threads (`tid`) laid out so that the events of one thread
//! nest by time, as the format requires: a span goes on its parent's thread when it fits there,
//! else on the first thread where it fits, else on a new one (concurrent spans, e.g. an
//! export beside a step).

use std::io::Write;

use serde_json::json;

use super::model::{RunData, SpanRec};

/// One thread's open spans (their ends), innermost last.
#[derive(Default)]
struct Thread {
    open: Vec<u64>,
}

impl Thread {
    /// Whether `s` nests here (after closing what ended before it starts).
    fn fits(&mut self, s: &SpanRec) -> bool {
        while self.open.last().is_some_and(|&end| end <= s.start) {
            self.open.pop();
        }
        self.open.last().is_none_or(|&end| s.end <= end)
    }
}

/// Each span's thread on its rank (spans sorted by start, longest first).
fn threads(spans: &[SpanRec]) -> Vec<u32> {
    let mut threads: Vec<Thread> = Vec::new();
    let mut of_span: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(spans.len());
    for s in spans {
        let preferred = of_span.get(&s.parent).copied();
        let tid = match preferred {
            Some(t) if threads[t as usize].fits(s) => t,
            _ => match (0..threads.len()).find(|&t| threads[t].fits(s)) {
                Some(t) => t as u32,
                None => {
                    threads.push(Thread::default());
                    (threads.len() - 1) as u32
                }
            },
        };
        threads[tid as usize].open.push(s.end);
        of_span.insert(s.span_id, tid);
        out.push(tid);
    }
    out
}

/// Writes the trace-event file (the spans must be sorted, as [`super::analysis::analyse`]
/// leaves them); returns the number of span events written.
pub fn write(
    run: &RunData,
    t0: u64,
    node_of: &dyn Fn(u32) -> String,
    out: &mut impl Write,
) -> std::io::Result<u64> {
    // Microseconds with the nanoseconds as 3 decimals, exactly.
    let us = |ns: u64| format!("{}.{:03}", ns / 1000, ns % 1000);
    out.write_all(b"{\"displayTimeUnit\":\"ms\",\"otherData\":")?;
    serde_json::to_writer(
        &mut *out,
        &json!({"start_unix_nano": t0, "written_by": "lens report"}),
    )?;
    out.write_all(b",\"traceEvents\":[\n")?;
    let mut first = true;
    let mut sep = |out: &mut dyn Write| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",\n")?;
        }
        Ok(())
    };
    let mut written = 0u64;
    for (&rank, data) in &run.ranks {
        let tids = threads(&data.spans);
        sep(out)?;
        serde_json::to_writer(
            &mut *out,
            &json!({"ph": "M", "name": "process_name", "pid": rank,
            "args": {"name": format!("rank {rank} ({})", node_of(rank))}}),
        )?;
        sep(out)?;
        serde_json::to_writer(
            &mut *out,
            &json!({"ph": "M", "name": "process_sort_index", "pid": rank, "args": {"sort_index": rank}}),
        )?;
        let used = tids.iter().copied().max().map_or(0, |m| m + 1);
        for tid in 0..used {
            sep(out)?;
            let name = if tid == 0 {
                "spans".to_string()
            } else {
                format!("spans (concurrent {tid})")
            };
            serde_json::to_writer(
                &mut *out,
                &json!({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": name}}),
            )?;
        }
        for (s, tid) in data.spans.iter().zip(tids) {
            sep(out)?;
            write!(
                out,
                "{{\"ph\":\"X\",\"pid\":{rank},\"tid\":{tid},\"ts\":{},\"dur\":{},\"name\":",
                us(s.start.saturating_sub(t0)),
                us(s.end - s.start)
            )?;
            serde_json::to_writer(&mut *out, &run.names[s.name as usize])?;
            write!(
                out,
                ",\"cat\":\"{}\",\"args\":",
                if s.step { "step" } else { "span" }
            )?;
            match &s.attrs {
                // Kept as the compact JSON object it was read as (bounded, valid JSON).
                Some(a) => out.write_all(a.as_bytes())?,
                None => out.write_all(b"{}")?,
            }
            out.write_all(b"}")?;
            written += 1;
        }
    }
    out.write_all(b"\n]}\n")?;
    Ok(written)
}
