//! A scheme registered by one line (the trivial scheme of `obscura-test-scheme`, behind the
//! `test-scheme` feature that `scripts/test` builds with) is built by `obscura build`, fetched
//! from its file by `obscura get --index`, served by `obscura serve` and fetched over HTTP,
//! with no other change anywhere.
#![cfg(feature = "test-scheme")]

use assert_cmd::Command;
use predicates::prelude::*;

mod common;
use common::Served;

fn obscura() -> Command {
    Command::cargo_bin("obscura").unwrap()
}

#[test]
fn the_test_scheme_is_built_served_and_fetched_like_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..40 * 24u32).map(|i| (i * 7 % 251) as u8).collect();
    let input = dir.path().join("records.bin");
    std::fs::write(&input, &data).unwrap();
    let db = dir.path().join("whole.obs");
    obscura()
        .args([
            "build",
            "--scheme",
            "whole",
            "--record-size",
            "24",
            "--input",
        ])
        .arg(&input)
        .arg("--out")
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "whole database, 40 records of 24 bytes",
        ));
    let record = |i: usize| hex::encode(&data[i * 24..(i + 1) * 24]) + "\n";
    for index in [0usize, 17, 39] {
        obscura()
            .args(["get", "--hex", "--index", &index.to_string(), "--db"])
            .arg(&db)
            .assert()
            .success()
            .stdout(record(index));
    }
    let served = Served::start(&[db.as_os_str()]);
    obscura()
        .args([
            "get",
            "--hex",
            "--server",
            &served.url,
            "--db",
            "whole",
            "--index",
            "5",
        ])
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .assert()
        .success()
        .stdout(record(5));
    // Its lookup is by index: a key is refused with the way to read it.
    obscura()
        .args(["get", "--key", "k", "--db"])
        .arg(&db)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "is an index database: fetch with --index",
        ));
}
