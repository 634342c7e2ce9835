//! No build leaves debris: an interrupted build removes its partial file, and one that a
//! killed build left is removed by the next build into the same folder once it is stale.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The partial database files in `dir`.
fn partial_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".obscura-partial-"))
        .collect()
}

#[test]
fn an_interrupted_build_removes_its_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("records.bin");
    // Large enough that the streamed setup writes its file for seconds.
    let file = std::fs::File::create(&input).unwrap();
    file.set_len(256 << 20).unwrap();
    let out = dir.path().join("db.obs");
    for signal in ["INT", "TERM"] {
        let mut build = Command::new(assert_cmd::cargo::cargo_bin("obscura"))
            .args([
                "build",
                "--stream",
                "--threads",
                "1",
                "--record-size",
                "1024",
                "--input",
            ])
            .arg(&input)
            .arg("--out")
            .arg(&out)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while partial_files(dir.path()).is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no partial file appeared"
            );
            assert!(
                build.try_wait().unwrap().is_none(),
                "the build ended too soon"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &build.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = build.wait().unwrap();
        assert!(!exit.success(), "{signal}: {exit:?}");
        assert_eq!(partial_files(dir.path()), Vec::<String>::new(), "{signal}");
        assert!(!out.exists(), "{signal}");
    }
}

#[test]
fn a_partial_file_left_by_a_killed_build_is_removed_by_the_next_build() {
    let dir = tempfile::tempdir().unwrap();
    // The name a build killed with SIGKILL leaves (no process has this id: it is above the
    // kernel's largest).
    let stale = dir.path().join(".db.obs.x1y2z3.obscura-partial-2147483646");
    std::fs::write(&stale, vec![0u8; 4096]).unwrap();
    // Untouched for longer than a live writer leaves its file.
    let long_ago = std::time::SystemTime::now() - 2 * obscura_store::partial::STALE_AFTER;
    let file = std::fs::File::options().write(true).open(&stale).unwrap();
    file.set_modified(long_ago).unwrap();
    let input = dir.path().join("records.bin");
    std::fs::write(&input, vec![7u8; 64 * 10]).unwrap();
    assert_cmd::Command::cargo_bin("obscura")
        .unwrap()
        .args(["build", "--record-size", "64", "--input"])
        .arg(&input)
        .arg("--out")
        .arg(dir.path().join("db.obs"))
        .assert()
        .success();
    assert!(!stale.exists());
    assert_eq!(partial_files(dir.path()), Vec::<String>::new());
}
