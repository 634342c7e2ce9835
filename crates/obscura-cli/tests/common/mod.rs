//! What the CLI's integration tests share: a running `obscura serve`.

// Each test file uses the part it needs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStderr, Command, Stdio};

/// A running `obscura serve` on an ephemeral loopback port; killed when dropped.
pub struct Served {
    /// The server process.
    pub child: Child,
    /// Its base URL, as it announced it (`http://…` or `https://…`).
    pub url: String,
    /// What it writes to standard error after announcing its address.
    stderr: Option<Lines<BufReader<ChildStderr>>>,
}

impl Served {
    /// Starts `obscura serve --listen 127.0.0.1:0 ARGS` and waits for its address.
    pub fn start(args: &[&std::ffi::OsStr]) -> Self {
        Self::start_at("127.0.0.1:0", args)
    }

    /// Starts `obscura serve --listen LISTEN ARGS` and waits for its address.
    pub fn start_at(listen: &str, args: &[&std::ffi::OsStr]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("obscura"))
            .args(["serve", "--listen", listen])
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = lines
            .by_ref()
            .map(|line| line.unwrap())
            .find_map(|line| {
                line.strip_prefix("serving on ")
                    .map(|rest| rest.split(' ').next().unwrap().to_string())
            })
            .expect("the server announces its address");
        Self {
            child,
            url,
            stderr: Some(lines),
        }
    }

    /// Keeps reading the server's messages in the background, so that a server that writes
    /// much (reloads, warnings) never blocks on a full pipe.
    pub fn drain_stderr(&mut self) {
        if let Some(lines) = self.stderr.take() {
            std::thread::spawn(move || lines.for_each(drop));
        }
    }

    /// Sends the server signal `name` (e.g. `HUP`, `TERM`).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Stops the server with SIGTERM and returns its exit success and what it wrote after its
    /// address.
    pub fn terminate(mut self) -> (bool, Vec<String>) {
        self.signal("TERM");
        let success = self.child.wait().unwrap().success();
        let rest = self
            .stderr
            .take()
            .map(|lines| lines.map(|l| l.unwrap()).collect())
            .unwrap_or_default();
        (success, rest)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
