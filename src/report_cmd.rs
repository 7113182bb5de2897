//! `lens report RUN_DIR`: the run's page (`report.html`), or with `--perfetto` its spans as a
//! Chrome trace-event file (`trace.json`); see docs/report.md.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lens::report::ReportOptions;

use crate::EXIT_BAD_INPUT;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run folder (`lens demo`'s lens-out/demo-…, or a job's folder of JSON-lines files).
    pub dir: PathBuf,
    /// Write the spans as a Chrome trace-event file (ui.perfetto.dev, chrome://tracing)
    /// instead of the page.
    #[arg(long)]
    pub perfetto: bool,
    /// The run's config file, shown redacted (default: RUN_DIR/config.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where to write (default: RUN_DIR/report.html, or RUN_DIR/trace.json with --perfetto).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A rank is a straggler when its median step is more than this fraction above the job's.
    #[arg(long, default_value_t = 0.10)]
    pub straggler_threshold: f64,
}

/// The options the arguments ask for.
pub fn options(args: &ReportArgs) -> ReportOptions {
    let mut options = ReportOptions::default().with_straggler_threshold(args.straggler_threshold);
    if let Some(c) = &args.config {
        options = options.with_config(c);
    }
    if let Some(o) = &args.out {
        options = options.with_output(o);
    }
    options
}

pub fn run(args: ReportArgs) -> ExitCode {
    let options = options(&args);
    let written = if args.perfetto {
        lens::report::write_perfetto(&args.dir, &options)
    } else {
        lens::report::write_report(&args.dir, &options)
    };
    match written {
        Ok(r) => {
            println!("{r}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
