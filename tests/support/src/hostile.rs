//! Hostile inputs made at test time (never committed: some are cheap to make and costly to
//! process), and running a command under a memory cap while measuring its CPU time.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A component holding a component … `levels` deep (the audit's 100 KB file that took 2 GB to
/// compile at 10,000 levels). Built from the outside in, in one pass.
pub fn nested_component(levels: usize) -> Vec<u8> {
    const HEADER: [u8; 8] = [0, b'a', b's', b'm', 0x0d, 0, 1, 0];
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                return;
            }
        }
    }
    // sizes[k]: the length of the component k + 1 levels deep from the bottom.
    let mut sizes = vec![HEADER.len()];
    for k in 1..levels.max(1) {
        let mut len = Vec::new();
        leb(sizes[k - 1], &mut len);
        sizes.push(HEADER.len() + 1 + len.len() + sizes[k - 1]);
    }
    let mut out = Vec::with_capacity(*sizes.last().unwrap());
    for k in (0..sizes.len()).rev() {
        out.extend_from_slice(&HEADER);
        if k > 0 {
            out.push(4); // a component section
            leb(sizes[k - 1], &mut out);
        }
    }
    out
}

/// What a finished child cost: its output and CPU time (user + system).
#[derive(Debug)]
pub struct Measured {
    /// Status, stdout and stderr.
    pub output: Output,
    /// User and system CPU time of the child.
    pub cpu: Duration,
}

/// Runs `command` to completion with its heap (`RLIMIT_DATA`) capped at `heap_mib`, and
/// measures its CPU time through `wait4`. (Its peak resident set cannot be read that way: a
/// child inherits its parent's high-water mark at `exec`, and a test binary's is large. The
/// cap is the memory bound: a command needing more fails.)
#[allow(
    clippy::zombie_processes,
    reason = "the child is reaped by `wait4`, which also reports its resource use"
)]
pub fn run_measured(command: &mut Command, heap_mib: u64) -> Measured {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let heap = heap_mib << 20;
    // SAFETY: between fork and exec the closure only calls `setrlimit`, which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: heap as libc::rlim_t,
                rlim_max: heap as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    let mut err = Vec::new();
    let _ = stderr.read_to_end(&mut err);
    let mut status = 0;
    // SAFETY: zeroed `rusage` is a valid value; `wait4` fills it and reaps the child, which
    // `Child` never waits for afterwards (it is dropped without `wait`).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4");
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    use std::os::unix::process::ExitStatusExt;
    Measured {
        output: Output {
            status: std::process::ExitStatus::from_raw(status),
            stdout: out.join().unwrap(),
            stderr: err,
        },
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
    }
}

/// This process's peak resident memory since it started (`VmHWM`: its own, unlike
/// `getrusage`'s, which carries its parent's from before `exec`), bytes.
pub fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib << 10
}
