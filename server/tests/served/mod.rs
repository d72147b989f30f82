//! Servers as child processes, for the suites that drive them with real clients: the example
//! server (`examples/serve.rs`) for the Python SDK (`sdk.rs`) and the browser pages
//! (`studio.rs`), and the `weir` binary's `serve` and `studio` (`api_anchor.rs`, `studio.rs`).

// Each test binary uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The binary of the weir-server example `name`, built now if it is not fresh: cargo builds
/// examples for a whole `cargo test`, but not for one test target. It is built with the flags of
/// the README's and CI's test command (`--workspace --all-features`), so that within that command
/// this is a no-op, and dependencies are never built twice with two feature sets. One build per
/// example per test binary, whatever number of tests ask.
pub fn example_binary(name: &'static str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps");
    let binary = dir.join("examples").join(name);
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.contains(&name) {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--workspace", "--all-features", "--example", name])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the `{name}` example failed");
        assert!(binary.exists(), "no example binary at {}", binary.display());
        built.push(name);
    }
    binary
}

/// The example server's binary (`examples/serve.rs`).
pub fn example_server() -> PathBuf {
    example_binary("serve")
}

/// A running server, stopped when dropped.
pub struct Served {
    child: Child,
    /// Where it listens: `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Served {
    /// Starts the example on `db` on a port of its choosing, with more of its arguments
    /// (`--token-ms 50`); returns once it listens.
    pub fn start(db: &Path, args: &[&str]) -> Self {
        let mut command = Command::new(example_server());
        command
            .args(["--db".as_ref(), db.as_os_str(), "--port".as_ref(), "0".as_ref()])
            .args(args);
        // `listening on http://ADDR` on stdout.
        Self::spawn(command, "listening on ", true)
    }

    /// Starts the `weir` binary with `args` (which choose port 0); returns once it listens.
    pub fn weir(args: &[&std::ffi::OsStr]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command.args(args);
        // `weir serve: listening on http://ADDR (studio: http://ADDR/studio/)` on stderr.
        Self::spawn(command, "weir serve: listening on ", false)
    }

    /// Starts `command` and waits for the line starting with `prefix` and the address, on its
    /// stdout or its stderr; the rest of that stream is read on, so that the server never
    /// blocks on a full pipe.
    fn spawn(mut command: Command, prefix: &str, on_stdout: bool) -> Self {
        if on_stdout {
            command.stdout(Stdio::piped());
        } else {
            command.stderr(Stdio::piped());
        }
        let mut child = command.spawn().expect("the server starts");
        let stream: Box<dyn Read + Send> = if on_stdout {
            Box::new(child.stdout.take().expect("piped stdout"))
        } else {
            Box::new(child.stderr.take().expect("piped stderr"))
        };
        let mut lines = BufReader::new(stream).lines();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the server exited before listening"))
                .expect("the server's output is text");
            if let Some(rest) = line.strip_prefix(prefix) {
                break rest.split_whitespace().next().expect("an address").to_owned();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
