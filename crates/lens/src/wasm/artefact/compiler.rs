//! Compiling a component: in a child process with bounded memory and time where the program
//! names one, else in this process.
//!
//! Compilation runs the host's own code on the guest's bytes, outside every sandbox limit, and
//! wasmtime cannot interrupt it. [`crate::wasm::checks::structure`] refuses the shapes known to blow up; what
//! is left is bounded here: when a worker command is registered ([`enable_worker_process`] in a
//! program's `main`, as the `lens` command line does; [`use_worker`] for another command, as
//! the Python package does with its interpreter), each compile runs in
//! that child under `RLIMIT_DATA` (its heap) and `RLIMIT_CPU`, killed at a wall-clock deadline,
//! and only the compiled artefact comes back on its stdout. A compile over a bound is a
//! [`CompileError`] naming the bound, and this process never held the memory. Without a worker
//! (a Rust program linking Lens that did not register one) compilation happens in-process,
//! bounded by the structure limits only.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::Component;

pub use crate::error::CompileError;
use crate::error::LoadError;

/// Default of `compile_memory_mib`: the heap a compile may use (the Python example guest
/// needs about 400 MiB).
pub const DEFAULT_COMPILE_MEMORY_MIB: u64 = 2048;
/// Default of `compile_timeout_ms`: how long a compile may take, wall clock and CPU (a Python
/// guest takes seconds in a release build, tens of seconds in a debug build).
pub const DEFAULT_COMPILE_TIMEOUT_MS: u64 = 300_000;

/// Bounds of one compile in a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileBounds {
    /// Heap of the worker (`RLIMIT_DATA`), MiB.
    pub memory_mib: u64,
    /// Wall clock and CPU time of the worker.
    pub timeout: Duration,
}

impl Default for CompileBounds {
    fn default() -> Self {
        Self {
            memory_mib: DEFAULT_COMPILE_MEMORY_MIB,
            timeout: Duration::from_millis(DEFAULT_COMPILE_TIMEOUT_MS),
        }
    }
}

/// The command compiling in a child: a program and its arguments (the worker then reads the
/// request on its stdin, see [`serve_worker`]).
static WORKER: OnceLock<(PathBuf, Vec<OsString>)> = OnceLock::new();

/// Compiles in `program args…` from now on (once per process; a later call is ignored). The
/// command must call [`serve_worker`] and exit with its code.
pub fn use_worker(
    program: impl Into<PathBuf>,
    args: impl IntoIterator<Item = impl Into<OsString>>,
) {
    let _ = WORKER.set((program.into(), args.into_iter().map(Into::into).collect()));
}

/// The argument a program started as its own compile worker receives (see
/// [`enable_worker_process`]).
pub const WORKER_ARG: &str = "--lens-compile-worker";

/// Makes this program its own compile worker; call it first in `main`. Started with
/// [`WORKER_ARG`], the process serves one compile and exits; otherwise it registers its own
/// executable, so that every compile from now on runs in a bounded child of it.
///
/// ```no_run
/// // First in `main`, before the rank sets up telemetry:
/// lens::wasm::enable_worker_process();
/// ```
pub fn enable_worker_process() {
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(WORKER_ARG)) {
        std::process::exit(i32::from(serve_worker()));
    }
    if let Ok(exe) = std::env::current_exe() {
        use_worker(exe, [WORKER_ARG]);
    }
}

/// The first line of a request: the engine it is for.
fn request_header(fuel: bool) -> String {
    format!("lens-compile 1 fuel={}\n", u8::from(fuel))
}

/// The variable naming, for a worker, the directory of compiled functions it reuses and adds
/// to (the cache's `functions/`, [`crate::wasm::artefact::cache::functions`]).
const FUNCTIONS_VAR: &str = "LENS_COMPILE_FUNCTIONS_DIR";

/// Compiles `wasm` for `engine` into an artefact for `Component::deserialize`: in the worker
/// when there is one, under `bounds`, else here.
pub fn precompile(
    engine: &Engine,
    wasm: &[u8],
    bounds: CompileBounds,
) -> Result<Vec<u8>, CompileError> {
    precompile_reusing(engine, wasm, bounds, None)
}

/// [`precompile`]; in a worker, reusing the compiled functions in `functions` (a trusted
/// directory of the cache) where the component's are the same, and adding the others.
pub fn precompile_reusing(
    engine: &Engine,
    wasm: &[u8],
    bounds: CompileBounds,
    functions: Option<&Path>,
) -> Result<Vec<u8>, CompileError> {
    let Some((program, args)) = WORKER.get() else {
        return engine
            .precompile_component(wasm)
            .map_err(|e| CompileError::Refused(format!("{e:#}")));
    };
    let fuel = crate::wasm::artefact::engine::uses_fuel(engine);
    let mut child = match spawn(program, args, bounds, functions) {
        Ok(child) => child,
        // No process to spare (a process limit, the program gone): the compile happens here,
        // still behind the structure limits, rather than the rank losing its exporter.
        Err(e) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                log::warn!("{e}; compiling in this process, without the compile bounds")
            });
            return engine
                .precompile_component(wasm)
                .map_err(|e| CompileError::Refused(format!("{e:#}")));
        }
    };
    let mut stdin = child.stdin.take().expect("piped");
    let request = [request_header(fuel).as_bytes(), wasm].concat();
    let writer = std::thread::spawn(move || {
        // A worker that dies early closes the pipe: its status says why.
        let _ = stdin.write_all(&request);
    });
    // The artefact cannot be larger than the worker's heap; its messages are kept to their
    // first 64 KiB, the rest read and dropped (a worker blocked on a full pipe would only time
    // out).
    let most = bounds.memory_mib.saturating_mul(1 << 20);
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut artefact = Vec::new();
        stdout
            .take(most.saturating_add(1))
            .read_to_end(&mut artefact)
            .ok()
            .filter(|_| (artefact.len() as u64) <= most)
            .map(|_| artefact)
    });
    let mut stderr = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(64 << 10).read_to_end(&mut text);
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        String::from_utf8_lossy(&text).into_owned()
    });
    let deadline = Instant::now() + bounds.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CompileError::TimedOut {
                    timeout: bounds.timeout,
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                let _ = child.kill();
                return Err(CompileError::Worker(e.to_string()));
            }
        }
    };
    let _ = writer.join();
    let artefact = reader.join().ok().flatten();
    let errors = errors.join().unwrap_or_default();
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => artefact.ok_or_else(|| {
            CompileError::Worker("no artefact, or one larger than `compile_memory_mib`".into())
        }),
        (Some(WORKER_REFUSED), _) => Err(CompileError::Refused(errors.trim().to_string())),
        (Some(WORKER_OUT_OF_MEMORY), _) => Err(CompileError::OutOfMemory {
            memory_mib: bounds.memory_mib,
        }),
        // A failed allocation aborts (SIGABRT) after saying so; RLIMIT_CPU sends SIGXCPU,
        // then SIGKILL.
        (_, Some(libc::SIGABRT)) if errors.contains("memory allocation of") => {
            Err(CompileError::OutOfMemory {
                memory_mib: bounds.memory_mib,
            })
        }
        (_, Some(libc::SIGXCPU | libc::SIGKILL)) => Err(CompileError::TimedOut {
            timeout: bounds.timeout,
        }),
        _ => Err(CompileError::Worker(format!(
            "{status}: {}",
            errors.lines().last().unwrap_or("no message")
        ))),
    }
}

/// Compiles `wasm` with [`precompile`] and loads the artefact for `engine`.
pub(crate) fn compile(
    engine: &Engine,
    wasm: &[u8],
    bounds: CompileBounds,
) -> Result<Component, LoadError> {
    Ok(load_artefact(engine, precompile(engine, wasm, bounds)?)?.0)
}

/// The component of `artefact`, just produced by [`precompile`] for `engine`, and the
/// artefact's bytes (for the cache to store).
pub(crate) fn load_artefact(
    engine: &Engine,
    artefact: Vec<u8>,
) -> Result<(Component, Vec<u8>), LoadError> {
    // SAFETY: `artefact` was produced just now by `Engine::precompile_component` for an engine
    // with this one's settings (this process's, or the worker's, built from the same
    // configuration; wasmtime checks the settings again).
    let component = unsafe { Component::deserialize(engine, &artefact) }
        .map_err(|e| LoadError::Invalid { source: e.into() })?;
    Ok((component, artefact))
}

/// Exit code of a worker whose compile wasmtime refused (the message is on its stderr).
const WORKER_REFUSED: i32 = 3;
/// Exit code of a worker that could not allocate.
const WORKER_OUT_OF_MEMORY: i32 = 4;

fn spawn(
    program: &PathBuf,
    args: &[OsString],
    bounds: CompileBounds,
    functions: Option<&Path>,
) -> Result<std::process::Child, CompileError> {
    use std::os::unix::process::CommandExt;
    let data = bounds.memory_mib.saturating_mul(1 << 20);
    let cpu = bounds.timeout.as_secs().max(1);
    let mut command = Command::new(program);
    match functions {
        Some(dir) => command.env(FUNCTIONS_VAR, dir),
        None => command.env_remove(FUNCTIONS_VAR),
    };
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only calls `setrlimit`, which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let set = |resource, soft: u64, hard: u64| {
                let limit = libc::rlimit {
                    rlim_cur: soft as libc::rlim_t,
                    rlim_max: hard as libc::rlim_t,
                };
                if libc::setrlimit(resource, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            set(libc::RLIMIT_DATA, data, data)?;
            // SIGXCPU at the soft limit, SIGKILL a second later.
            set(libc::RLIMIT_CPU, cpu, cpu + 1)?;
            Ok(())
        });
    }
    command
        .spawn()
        .map_err(|e| CompileError::Worker(format!("cannot start {}: {e}", program.display())))
}

/// The worker's side: reads a request on stdin (a header line, then the component), compiles
/// it and writes the artefact on stdout. Returns the exit code: 0 compiled, 2 a bad request,
/// 3 refused by wasmtime (its message on stderr), 4 out of memory.
pub fn serve_worker() -> u8 {
    let mut request = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut request) {
        eprintln!("cannot read the request: {e}");
        return 2;
    }
    let Some(newline) = request.iter().position(|&b| b == b'\n') else {
        eprintln!("no request header");
        return 2;
    };
    let fuel = match &request[..=newline] {
        h if h == request_header(false).as_bytes() => false,
        h if h == request_header(true).as_bytes() => true,
        _ => {
            eprintln!("unknown request header");
            return 2;
        }
    };
    let functions = std::env::var_os(FUNCTIONS_VAR)
        .map(PathBuf::from)
        .and_then(crate::wasm::artefact::cache::functions::FunctionCache::open);
    let engine = match crate::wasm::artefact::engine::compile_only_engine(fuel, functions) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    // An allocation failure in Rust aborts; a failed `mmap` inside wasmtime is an error whose
    // text says so. Both are the memory bound.
    match engine.precompile_component(&request[newline + 1..]) {
        // Flushed here: a worker inside another runtime (a Python interpreter) exits without
        // Rust's own flush of stdout's buffer.
        Ok(artefact) => match std::io::stdout()
            .lock()
            .write_all(&artefact)
            .and_then(|()| std::io::stdout().flush())
        {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("cannot write the artefact: {e}");
                2
            }
        },
        Err(e) => {
            let text = format!("{e:#}");
            eprintln!("{text}");
            if text.contains("Cannot allocate memory") || text.contains("out of memory") {
                WORKER_OUT_OF_MEMORY as u8
            } else {
                WORKER_REFUSED as u8
            }
        }
    }
}
