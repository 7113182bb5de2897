//! Writing `docs/benchmarks.md` (keeping its hand-written part) and the throughput chart.

use std::fmt::Write as _;
use std::path::Path;

use crate::Row;

/// The first heading of the hand-written part of `docs/benchmarks.md`.
const HAND_WRITTEN: &str = "## Scale:";

pub fn write_report(rows: &[Row], quick: bool, dropped: u64) {
    let mut md = String::new();
    writeln!(md, "# Lens benchmarks\n").unwrap();
    writeln!(
        md,
        "Produced by `cargo bench --bench pipeline{}` on this project's 2-core machine; every ratio \
         is against a baseline measured in the same run. The machine is noisy: compare ratios, \
         not absolute figures. Regenerate with the same command.\n",
        if quick { " -- --quick" } else { "" }
    )
    .unwrap();
    let mut group = "";
    for r in rows {
        if r.group != group {
            group = r.group;
            writeln!(
                md,
                "\n## {group}\n\n| configuration | value | ratio |\n|---|---:|---:|"
            )
            .unwrap();
        }
        let value = match r.unit {
            "spans/s" => format!("{:.0} {}", r.value, r.unit),
            _ => format!("{:.2} {}", r.value, r.unit),
        };
        let ratio = r
            .ratio
            .map(|(x, what)| format!("{x:.2} {what}"))
            .unwrap_or_else(|| "—".into());
        writeln!(md, "| {} | {value} | {ratio} |", r.name).unwrap();
    }
    writeln!(
        md,
        "\nThe application-thread figure for the wasm exporter includes its queue: the producer \
         ran at full speed and the queue (16384) dropped {dropped} spans, each counted. \
         ![throughput](benchmarks.svg)"
    )
    .unwrap();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    // Everything from the hand-written scale run on (not produced by this binary) is kept.
    let previous = std::fs::read_to_string(docs.join("benchmarks.md")).unwrap_or_default();
    if let Some(at) = previous.find(HAND_WRITTEN) {
        md.push('\n');
        md.push_str(&previous[at..]);
    }
    std::fs::write(docs.join("benchmarks.md"), md).unwrap();
    std::fs::write(docs.join("benchmarks.svg"), svg(rows)).unwrap();
    println!(
        "{}",
        std::fs::read_to_string(docs.join("benchmarks.md")).unwrap()
    );
}

/// A horizontal bar chart of the export throughputs (log scale).
fn svg(rows: &[Row]) -> String {
    let bars: Vec<&Row> = rows
        .iter()
        .filter(|r| r.unit == "spans/s" && r.group.starts_with("Export"))
        .collect();
    let max = bars.iter().map(|r| r.value).fold(1.0_f64, f64::max).log10();
    let (w, row_h, left) = (900.0, 28.0, 330.0);
    let h = 50.0 + row_h * bars.len() as f64;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='12'>\
         <text x='10' y='20' font-size='14'>Export throughput, spans/s (log scale, batches of 512)</text>"
    );
    for (i, r) in bars.iter().enumerate() {
        let y = 35.0 + row_h * i as f64;
        let len = (r.value.max(1.0).log10() / max) * (w - left - 120.0);
        write!(
            s,
            "<text x='10' y='{}'>{}</text><rect x='{left}' y='{y}' width='{len:.1}' height='18' fill='#4a7fb5'/>\
             <text x='{}' y='{}'>{:.0}</text>",
            y + 13.0,
            r.name.replace('&', "&amp;").replace('<', "&lt;"),
            left + len + 6.0,
            y + 13.0,
            r.value
        )
        .unwrap();
    }
    s.push_str("</svg>\n");
    s
}
