//! `lens report`: a picture of a run from its folder, for people rather than backends.
//!
//! - [`read`](read_run): the run folder (JSON-lines of spans, metrics and log records in Lens's
//!   format or OpenTelemetry-Python's console JSON, `summary.json`, `rank-N.log`, the
//!   configuration), every line bounded and every unused line counted by reason;
//! - `analysis`: steps, stragglers, crashes; `lanes`: the timeline's lanes (aggregated past a
//!   budget);
//! - `sections`: step-time distribution, throughput, exporter health, metric charts, logs;
//! - `page`: one self-contained HTML file (`report.html`);
//! - `perfetto`: a Chrome trace-event file (`trace.json`) for ui.perfetto.dev.
//!
//! Every bound is in `limits` (and docs/report.md).

mod analysis;
mod formats;
mod lanes;
mod limits;
mod model;
mod page;
mod perfetto;
mod read;
mod sections;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use read::{SUMMARY_FORMAT, read_run};

/// What `lens report` can fail on: the run folder itself (what is in it is counted instead).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read the run folder {}: {source}", dir.display())]
    Folder {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a folder (give `lens report` a run folder, e.g. lens-out/demo-…)", .0.display())]
    NotAFolder(PathBuf),
    #[error(
        "{}: nothing to report: {files} JSON-lines file(s) (*.jsonl, *.ndjson) with no span, metric or log record{}, and no summary.json",
        dir.display(),
        if *skipped > 0 { format!(" ({skipped} line(s) skipped)") } else { String::new() }
    )]
    Empty {
        dir: PathBuf,
        files: usize,
        skipped: u64,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the straggler threshold must be a fraction above 0 (0.1 is 10 %), not {0}")]
    Threshold(f64),
}

/// How to draw a report.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    config: Option<PathBuf>,
    output: Option<PathBuf>,
    straggler_threshold: f64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            config: None,
            output: None,
            straggler_threshold: 0.10,
        }
    }
}

impl ReportOptions {
    /// The run's configuration file, when it is not `RUN_DIR/config.toml` (shown redacted).
    pub fn with_config(mut self, file: impl Into<PathBuf>) -> Self {
        self.config = Some(file.into());
        self
    }

    /// Where to write, instead of `RUN_DIR/report.html` (`RUN_DIR/trace.json` for Perfetto).
    pub fn with_output(mut self, file: impl Into<PathBuf>) -> Self {
        self.output = Some(file.into());
        self
    }

    /// A rank is a straggler when its median step is more than this fraction above the job's
    /// median (default 0.10).
    pub fn with_straggler_threshold(mut self, fraction: f64) -> Self {
        self.straggler_threshold = fraction;
        self
    }
}

/// What a written report holds.
#[derive(Debug, Clone)]
pub struct Report {
    pub path: PathBuf,
    pub bytes: u64,
    pub ranks: usize,
    pub spans: usize,
    /// Lines and files not used, over every reason.
    pub skipped: u64,
    pub stragglers: Vec<u32>,
    pub crashed: Vec<u32>,
}

/// One line saying what a report holds (`lens report` and `lens demo` print it).
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[u32]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            }
        };
        write!(
            f,
            "{} ({:.1} MiB): {} ranks, {} spans; stragglers: {}; crashed: {}",
            self.path.display(),
            self.bytes as f64 / (1 << 20) as f64,
            self.ranks,
            self.spans,
            list(&self.stragglers),
            list(&self.crashed),
        )?;
        if self.skipped > 0 {
            write!(
                f,
                "; {} line(s) skipped (listed in the report)",
                self.skipped
            )?;
        }
        Ok(())
    }
}

fn checked(options: &ReportOptions) -> Result<(), ReportError> {
    let t = options.straggler_threshold;
    if !(t.is_finite() && t > 0.0) {
        return Err(ReportError::Threshold(t));
    }
    Ok(())
}

/// Writes to a temporary file beside `path`, then renames it (a reader never sees half a page).
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<u64, ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let file = std::fs::File::create(&tmp).map_err(err)?;
    let mut out = std::io::BufWriter::new(file);
    let done = write(&mut out).and_then(|()| {
        use std::io::Write as _;
        out.flush()
    });
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(e));
    }
    drop(out);
    std::fs::rename(&tmp, path).map_err(err)?;
    Ok(std::fs::metadata(path).map(|m| m.len()).unwrap_or(0))
}

/// The report's title: the run id, else the folder's name.
fn title(run: &model::RunData, dir: &Path) -> String {
    let name = run
        .summary
        .as_ref()
        .and_then(|s| s.run_id.clone())
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "run".into());
    format!("Lens report: {name}")
}

/// Where an output is written.
type Out = std::io::BufWriter<std::fs::File>;

/// How one output is written from a run read and analysed.
type Render<'a> = &'a dyn Fn(&model::RunData, &analysis::Analysis, &mut Out) -> std::io::Result<()>;

/// Reads and analyses `dir`, then writes each `(default_name, render)` in it (the option's
/// output instead when there is one output): one reading for every output.
fn write_with(
    dir: &Path,
    options: &ReportOptions,
    outputs: &[(&str, Render<'_>)],
) -> Result<Vec<Report>, ReportError> {
    checked(options)?;
    let mut run = read_run(dir, options.config.as_deref())?;
    let a = analysis::analyse(&mut run, options.straggler_threshold);
    let ranks_where = |f: fn(&analysis::RankView) -> bool| {
        a.ranks
            .iter()
            .filter(|r| f(r))
            .map(|r| r.rank)
            .collect::<Vec<_>>()
    };
    let mut reports = Vec::new();
    for (default_name, render) in outputs {
        let path = match (&options.output, outputs.len()) {
            (Some(out), 1) => out.clone(),
            _ => dir.join(default_name),
        };
        let bytes = write_atomically(&path, |out| render(&run, &a, out))?;
        reports.push(Report {
            path,
            bytes,
            ranks: a.ranks.len(),
            spans: run.span_count(),
            skipped: run.skipped.total(),
            stragglers: ranks_where(|r| r.straggler),
            crashed: ranks_where(|r| r.crashed.is_some()),
        });
    }
    Ok(reports)
}

fn render_page(
    dir: &Path,
) -> impl Fn(&model::RunData, &analysis::Analysis, &mut Out) -> std::io::Result<()> {
    move |run, a, out| {
        use std::io::Write as _;
        let data = page::data(run, a, &title(run, dir));
        out.write_all(page::render(&data).as_bytes())
    }
}

fn render_perfetto(
    run: &model::RunData,
    a: &analysis::Analysis,
    out: &mut Out,
) -> std::io::Result<()> {
    let node_of = |rank: u32| {
        a.ranks
            .iter()
            .find(|r| r.rank == rank)
            .map(|r| r.node.clone())
            .unwrap_or_default()
    };
    perfetto::write(run, a.t0, &node_of, out).map(|_| ())
}

/// The one report `write_with` made for one output.
fn only(mut reports: Vec<Report>) -> Report {
    reports.pop().expect("one output, one report")
}

/// Writes `RUN_DIR/report.html` (or the option's output) from the run folder `dir`.
pub fn write_report(dir: &Path, options: &ReportOptions) -> Result<Report, ReportError> {
    let page = render_page(dir);
    write_with(dir, options, &[("report.html", &page)]).map(only)
}

/// Writes `RUN_DIR/trace.json` (or the option's output), the run's spans as trace events.
pub fn write_perfetto(dir: &Path, options: &ReportOptions) -> Result<Report, ReportError> {
    write_with(dir, options, &[("trace.json", &render_perfetto)]).map(only)
}

/// Writes both `RUN_DIR/report.html` and `RUN_DIR/trace.json` from one reading of the folder
/// (what `lens demo` writes at its end; `options.output` names one file, so it is not used).
pub fn write_report_and_perfetto(
    dir: &Path,
    options: &ReportOptions,
) -> Result<(Report, Report), ReportError> {
    let page = render_page(dir);
    let outputs: [(&str, Render<'_>); 2] =
        [("report.html", &page), ("trace.json", &render_perfetto)];
    let mut reports = write_with(dir, options, &outputs)?;
    let trace = reports.pop().expect("two outputs");
    let page = reports.pop().expect("two outputs");
    Ok((page, trace))
}
