//! The report page: one self-contained HTML file (no network, no CDN: it opens from `file://`
//! on an air-gapped node). The data goes in a `<script type="application/json">` block, drawn by
//! the page's own script (`page/report.js`, hand-written canvas and SVG: docs/report.md says
//! why no charting library).

use serde_json::{Value, json};

use super::analysis::{self, Analysis};
use super::lanes;
use super::model::RunData;
use super::sections;

const TEMPLATE: &str = include_str!("page/report.html");
const STYLE: &str = include_str!("page/report.css");
const SCRIPT: &str = include_str!("page/report.js");

/// The page's data.
pub fn data(run: &RunData, a: &Analysis, title: &str) -> Value {
    let mut notes = run.notes.clone();
    let (lanes, attrs, lane_notes) = lanes::lanes(run, a);
    notes.extend(lane_notes);
    let distribution = sections::distribution(a, &mut notes);
    let health = sections::health(run, a, &mut notes);
    let metrics = sections::metrics(run, a, &mut notes);
    let logs = sections::logs(run, a, &mut notes);
    let skipped: Vec<Value> = run
        .skipped
        .reasons
        .iter()
        .map(|(reason, (n, file))| json!({"reason": reason, "count": n, "first_file": file}))
        .collect();
    let summary = run.summary.as_ref();
    let nodes: std::collections::BTreeSet<&str> = a.ranks.iter().map(|r| r.node.as_str()).collect();
    json!({
        "meta": {
            "title": title,
            "run_id": summary.and_then(|s| s.run_id.clone()),
            "ranks": a.ranks.len(),
            "nodes": nodes.len(),
            "spans": run.span_count(),
            "files": run.files,
            "lines": run.lines,
            "start_unix_nano": a.t0,
            "duration_ms": analysis::ms(a.t1, a.t0),
            "lens_version": env!("CARGO_PKG_VERSION"),
            "crashed": a.ranks.iter().filter(|r| r.crashed.is_some()).map(|r| r.rank).collect::<Vec<_>>(),
        },
        "names": run.names,
        "attrs": attrs,
        "lanes": lanes,
        "distribution": distribution,
        "throughput": sections::throughput(run, a),
        "health": health,
        "metrics": metrics,
        "logs": logs,
        "config": run.config,
        "config_note": run.config_note,
        "skipped": skipped,
        "notes": notes,
    })
}

/// JSON safe inside a `<script>` element: `<` (only ever inside a string) as `\u003c`, so no
/// value can close the element.
fn script_json(v: &Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

/// Text safe as HTML element content.
pub fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The whole page.
pub fn render(data: &Value) -> String {
    let title = data["meta"]["title"].as_str().unwrap_or("Lens run");
    TEMPLATE
        .replace("{{title}}", &html_text(title))
        .replace("{{style}}", STYLE)
        .replace("{{script}}", SCRIPT)
        .replacen("{{data}}", &script_json(data), 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_cannot_close_the_data_element() {
        let v = json!({"a": "</script><script>alert(1)</script>"});
        let text = script_json(&v);
        assert!(!text.contains("</"), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
