//! `obscura serve` as an operator runs it: HTTPS with bearer tokens, a database replaced and
//! reloaded on SIGHUP, a taken port reported before any file is loaded, and a directory given
//! where a database file belongs.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

mod common;
use common::Served;

fn obscura() -> Command {
    Command::cargo_bin("obscura").unwrap()
}

/// Builds a database of 30 records of 8 bytes, made from `seed`, at `db`; returns the records.
fn build(dir: &Path, db: &Path, seed: u8) -> Vec<u8> {
    let data: Vec<u8> = (0..240u32)
        .map(|i| (i as u8).wrapping_mul(7) ^ seed)
        .collect();
    let input = dir.join(format!("input-{seed}.bin"));
    std::fs::write(&input, &data).unwrap();
    obscura()
        .args(["build", "--record-size", "8", "--input"])
        .arg(&input)
        .arg("--out")
        .arg(db)
        .assert()
        .success()
        .stdout(predicate::str::contains("setup sha256"));
    data
}

fn get(url: &str, index: u64, extra: &[&std::ffi::OsStr]) -> assert_cmd::assert::Assert {
    obscura()
        .args([
            "get",
            "--server",
            url,
            "--db",
            "db",
            "--index",
            &index.to_string(),
        ])
        .args(extra)
        .env_remove("OBSCURA_TOKEN")
        .assert()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n"
}

fn path(p: &Path) -> &std::ffi::OsStr {
    p.as_os_str()
}

#[test]
fn https_with_a_token_and_a_pinned_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.obs");
    let data = build(dir.path(), &db, 1);
    let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let (cert, private) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, key.cert.pem()).unwrap();
    std::fs::write(&private, key.signing_key.serialize_pem()).unwrap();
    let tokens = dir.path().join("tokens.txt");
    std::fs::write(&tokens, "# who may read db\ndb correct-horse-battery\n").unwrap();
    let token = dir.path().join("token.txt");
    std::fs::write(&token, "correct-horse-battery\n").unwrap();
    let wrong = dir.path().join("wrong.txt");
    std::fs::write(&wrong, "incorrect-horse-battery\n").unwrap();

    let served = Served::start(&[
        path(&db),
        "--tls-cert".as_ref(),
        path(&cert),
        "--tls-key".as_ref(),
        path(&private),
        "--tokens".as_ref(),
        path(&tokens),
    ]);
    assert!(
        served.url.starts_with("https://127.0.0.1:"),
        "{}",
        served.url
    );
    let cache = dir.path().join("cache");
    let trusted = [
        "--ca-cert".as_ref(),
        path(&cert),
        "--cache-dir".as_ref(),
        path(&cache),
    ];

    get(
        &served.url,
        4,
        &[&trusted[..], &["--token-file".as_ref(), path(&token)]].concat(),
    )
    .success()
    .stdout(hex(&data[32..40]));
    obscura()
        .args(["get", "--server", &served.url, "--db", "db", "--index", "5"])
        .args(trusted)
        .env("OBSCURA_TOKEN", "correct-horse-battery")
        .assert()
        .success()
        .stdout(hex(&data[40..48]));
    get(
        &served.url,
        4,
        &[&trusted[..], &["--token-file".as_ref(), path(&wrong)]].concat(),
    )
    .code(1)
    .stderr(predicate::str::contains("401").and(predicate::str::contains("bearer token")));
    get(&served.url, 4, &trusted)
        .code(1)
        .stderr(predicate::str::contains("401"));
    // Without the pinned certificate the WebPKI roots refuse it.
    get(&served.url, 4, &["--token-file".as_ref(), path(&token)])
        .code(1)
        .stderr(predicate::str::contains("certificate"));
}

#[test]
fn a_tokens_file_naming_an_unserved_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.obs");
    build(dir.path(), &db, 1);
    let tokens = dir.path().join("tokens.txt");
    std::fs::write(&tokens, "dbb correct-horse-battery\n").unwrap();
    obscura()
        .args(["serve", "--listen", "127.0.0.1:0", "--tokens"])
        .arg(&tokens)
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("\"dbb\", which is not served"));
}

#[test]
fn sighup_serves_a_database_replaced_by_renaming() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.obs");
    let old = build(dir.path(), &db, 1);
    let mut served = Served::start(&[path(&db)]);
    served.drain_stderr();
    let cache = dir.path().join("cache");
    let cached = ["--cache-dir".as_ref(), path(&cache)];
    get(&served.url, 7, &cached)
        .success()
        .stdout(hex(&old[56..64]));

    let new = build(dir.path(), &db, 2); // written beside it and renamed over it
    get(&served.url, 7, &cached)
        .success()
        .stdout(hex(&old[56..64]));
    served.signal("HUP");
    let mut last = None;
    for _ in 0..100 {
        let output = get(&served.url, 7, &cached)
            .success()
            .get_output()
            .stdout
            .clone();
        if output == hex(&new[56..64]).into_bytes() {
            return;
        }
        last = Some(output);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("still serving the old version after SIGHUP: {last:?}");
}

#[test]
fn a_taken_port_is_reported_before_any_file_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("db.obs");
    std::fs::write(&garbage, b"not a database").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    obscura()
        .args(["serve", "--listen", &address])
        .arg(&garbage)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "cannot listen on {address}"
        )))
        .stderr(predicate::str::contains("not a valid Obscura database").not());
}

#[test]
fn a_directory_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let folder: PathBuf = dir.path().join("db.obs");
    std::fs::create_dir(&folder).unwrap();
    for command in [
        &["get", "--index", "0", "--db"][..],
        &["serve", "--listen", "127.0.0.1:0"],
    ] {
        obscura()
            .args(command)
            .arg(&folder)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "is a directory, not a database file",
            ))
            .stderr(predicate::str::contains("No such device").not());
    }
}

#[test]
fn get_gives_up_on_a_server_that_never_answers_after_its_timeout() {
    // A listener that accepts connections and never writes a byte.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let started = std::time::Instant::now();
    obscura()
        .args([
            "get",
            "--server",
            &url,
            "--db",
            "db",
            "--index",
            "0",
            "--timeout",
            "1",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cannot reach"));
    let waited = started.elapsed();
    assert!(waited < std::time::Duration::from_secs(30), "{waited:?}");
    drop(listener);
}
