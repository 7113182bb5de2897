//! The `lens` command line.
//!
//! - `lens demo`: a simulated multi-rank training job ([`demo`]);
//! - `lens check`: validates a `.wasm` exporter and runs the conformance suite on it ([`check`]);
//! - `lens new`, `lens build`: an exporter project outside this repository ([`project`]);
//! - `lens config validate | show` ([`config_cmd`]);
//! - `lens spool status` and `lens spool replay` ([`spool_cmd`]).
//!
//! Exit codes: 0 success; 1 the run finished but something failed (a rank crashed or failed its
//! setup, spans were dropped with `--fail-on-drop`); 2 bad usage, config or input.

mod builtin;
mod check;
mod compile;
mod config_cmd;
mod demo;
mod project;
mod push;
mod report_cmd;
mod spool_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code: bad usage, config or input.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code: the run finished with failures.
pub const EXIT_RUN_FAILED: u8 = 1;

#[derive(Parser)]
#[command(
    name = "lens",
    version,
    about = "OpenTelemetry for multi-rank training jobs, with sandboxed wasm exporters"
)]
#[command(
    after_help = "Exit codes: 0 success, 1 the run finished with failures, 2 bad usage, config or input."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a simulated multi-rank training job, one OS process per rank.
    #[command(
        after_help = "Examples:\n  lens demo\n  lens demo --ranks 8 --nodes 2 --steps 200\n  lens demo --config lens.toml"
    )]
    Demo(demo::DemoArgs),
    /// Validate a .wasm exporter, list its capabilities and run the conformance suite on it.
    #[command(
        after_help = "Examples:\n  lens check exporter.wasm\n  lens check exporter.wasm --preopen ./out:/out:rw --setting path=/out/spans.jsonl\n\nExit codes: 0 all checks pass, 1 some fail, 2 the file does not load."
    )]
    Check(check::CheckArgs),
    /// Compile a .wasm exporter, or every wasm exporter of a config, into the compilation
    /// cache, so that ranks starting afterwards load it instead of compiling it.
    #[command(
        after_help = "Examples:\n  lens compile exporter.wasm\n  lens compile lens.toml\n\nExit codes: 0 every component is in the cache, 2 one does not load (the error names it)."
    )]
    Compile(compile::CompileArgs),
    /// Pull a component from an OCI registry into the node's store and compile it (a job's
    /// prologue): `lens compile` on a reference or a config.
    #[command(
        after_help = "Examples:\n  lens pull oci://ghcr.io/acme/exporter:1.2.0@sha256:…\n  lens pull lens.toml\n\nExit codes: 0 every component is stored and compiled, 2 one is not (the error names it)."
    )]
    Pull(compile::CompileArgs),
    /// Publish a component to an OCI registry (the layout `wkg oci push` writes) and print the
    /// pinned config line.
    #[command(
        after_help = "Examples:\n  lens push build/acme-exporter.wasm oci://ghcr.io/acme/exporter:1.2.0\n\nCredentials: LENS_REGISTRY_USERNAME/LENS_REGISTRY_PASSWORD, else ~/.docker/config.json.\nExit codes: 0 pushed, 1 the registry refused or failed, 2 bad arguments."
    )]
    Push(push::PushArgs),
    /// Make a new exporter project (Python, JavaScript or Rust) that builds anywhere.
    #[command(
        after_help = "Examples:\n  lens new python acme-exporter\n  lens new js acme-exporter --signals spans,logs\n  lens new rust acme-exporter --signals spans,metrics,logs"
    )]
    New(project::new::NewArgs),
    /// Build an exporter project into build/<name>.wasm, installing its pinned toolchain once.
    #[command(
        after_help = "Examples:\n  lens build\n  lens build acme-exporter\n\nExit codes: 0 built, 1 the build failed, 2 no or a bad lens-exporter.toml."
    )]
    Build(project::build::BuildArgs),
    /// Validate or show configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Inspect an exporter's disk spool (what an outage left to replay).
    #[command(subcommand)]
    Spool(SpoolCommand),
    /// Draw a run: one self-contained HTML page (timeline per rank, step times and stragglers,
    /// throughput, exporter health, metrics, logs, configuration), or a Perfetto trace file.
    #[command(
        after_help = "Examples:\n  lens report lens-out/demo-1a2b3c4d\n  lens report --perfetto lens-out/demo-1a2b3c4d\n\nExit codes: 0 written, 2 the folder is missing, empty or not writable."
    )]
    Report(report_cmd::ReportArgs),
    /// (internal) One rank of `lens demo`.
    #[command(hide = true)]
    DemoRank(demo::RankArgs),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Strictly validate a config file (unknown keys, ranges, exporter entries).
    #[command(after_help = "Example:\n  lens config validate lens.toml")]
    Validate {
        /// The TOML file.
        file: PathBuf,
    },
    /// Print the effective config: the file (if any) with environment overrides applied.
    #[command(
        after_help = "Examples:\n  lens config show\n  LENS_EXPORT_STRATEGY=sampled lens config show --config lens.toml"
    )]
    Show {
        /// The TOML file.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum SpoolCommand {
    /// What a spool directory holds: batches and items waiting, segments, bytes, damage. Read
    /// without its lock and without changing it.
    #[command(after_help = "Example:\n  lens spool status /var/tmp/lens-spool/trainer-rank0-acme")]
    Status {
        /// The spool directory.
        dir: PathBuf,
        /// One JSON object instead of a line.
        #[arg(long)]
        json: bool,
    },
    /// Sends what a spool holds through the exporter of the config that wrote it (a job that
    /// ended during an outage leaves its spool); exit 1 if some is still spooled after
    /// `--timeout-s` (the exporter is still down).
    #[command(
        after_help = "Example:\n  lens spool replay ~/.cache/lens/spool/trainer/rank-0/acme --config lens.toml"
    )]
    Replay {
        /// The spool directory.
        dir: PathBuf,
        /// The job's config file (its entry for the spool's signal with a `spool`).
        #[arg(long)]
        config: PathBuf,
        /// The exporter entry's name, when the config has several with a spool.
        #[arg(long)]
        exporter: Option<String>,
        /// How long to try, seconds.
        #[arg(long, default_value_t = 60)]
        timeout_s: u64,
    },
}

fn main() -> ExitCode {
    // Compiles of wasm exporters run in a child of this binary, bounded in memory and time
    // (started with `--lens-compile-worker`, this process is that child).
    lens::wasm::enable_worker_process();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp_millis()
        .init();
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Check(_)
            | Command::Config(_)
            | Command::Compile(_)
            | Command::Pull(_)
            | Command::Push(_)
            | Command::Spool(_)
            | Command::Report(_)
    ) {
        // Their output piped into `head` ends them quietly, as any command-line tool, rather
        // than with a panic on the closed stdout. (Ranks keep Rust's default: they write to
        // sockets, where a broken pipe is an error to handle, not a signal.)
        // SAFETY: restoring a signal's default disposition has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match cli.command {
        Command::Compile(args) | Command::Pull(args) => compile::run(args),
        Command::Push(args) => push::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Check(args) => check::run(args),
        Command::New(args) => project::new::run(args),
        Command::Build(args) => project::build::run(args),
        Command::DemoRank(args) => demo::run_rank(args),
        Command::Config(ConfigCommand::Validate { file }) => config_cmd::validate(&file),
        Command::Spool(SpoolCommand::Status { dir, json }) => spool_cmd::status(&dir, json),
        Command::Spool(SpoolCommand::Replay {
            dir,
            config,
            exporter,
            timeout_s,
        }) => spool_cmd::replay(
            &dir,
            &config,
            exporter.as_deref(),
            std::time::Duration::from_secs(timeout_s),
        ),
        Command::Config(ConfigCommand::Show { config }) => config_cmd::show(config.as_deref()),
    }
}
