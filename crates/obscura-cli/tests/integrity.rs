//! `obscura get` and `obscura merkle prove` against damaged caches, pinned setups, hostile
//! servers and keys that are not UTF-8.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use obscura_client::http::HttpClient;
use predicates::prelude::*;

mod common;
use common::Served;

fn obscura() -> Command {
    Command::cargo_bin("obscura").unwrap()
}

/// Runs `obscura ARGS` and returns its standard output, which must be a success.
fn run_ok(args: &[&str]) -> String {
    let output = obscura().args(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The hex after "setup sha256 " in `obscura build`'s summary.
fn printed_sha256(summary: &str) -> String {
    let rest = summary
        .split("setup sha256 ")
        .nth(1)
        .unwrap_or_else(|| panic!("no setup sha256 in {summary:?}"));
    let hex: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    assert_eq!(hex.len(), 64, "{summary}");
    hex
}

/// The one cached setup file under `cache`.
fn cached_setup(cache: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .flat_map(|server| std::fs::read_dir(server.unwrap().path()).unwrap())
        .map(|file| file.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "setup"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn get_verifies_the_setup_against_its_pin_and_repairs_a_damaged_cache() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..30 * 8).map(|i| (i * 7 + 3) as u8).collect();
    let input = dir.path().join("records.bin");
    std::fs::write(&input, &data).unwrap();
    let db = dir.path().join("records.obs");
    let summary = run_ok(&[
        "build",
        "--input",
        path(&input),
        "--record-size",
        "8",
        "--out",
        path(&db),
    ]);
    let sha256 = printed_sha256(&summary);
    let served = Served::start(&[db.as_os_str()]);
    let list = HttpClient::new(&served.url, None).list().unwrap();
    assert_eq!(list[0].setup_sha256, sha256);

    let cache = dir.path().join("cache");
    let get = |index: usize, extra: &[&str]| {
        obscura()
            .args(["get", "--server", &served.url, "--db", "records"])
            .args(["--index", &index.to_string(), "--cache-dir", path(&cache)])
            .args(extra)
            .assert()
    };
    let expected = |index: usize| format!("{}\n", hex::encode(&data[index * 8..index * 8 + 8]));

    // A wrong pin: refused, exit 1, nothing cached.
    let wrong = "ab".repeat(32);
    get(3, &["--setup-sha256", &wrong])
        .code(1)
        .stdout("")
        .stderr(predicate::str::starts_with("error: "))
        .stderr(predicate::str::contains(format!(
            "the setup's SHA-256 is {sha256} where the pinned SHA-256 says {wrong}"
        )));
    assert!(!cache.exists() || std::fs::read_dir(&cache).unwrap().count() == 0);
    get(3, &["--setup-sha256", &sha256])
        .success()
        .stdout(expected(3));

    // One flipped bit anywhere in the cached setup (the hint, the kind): still the right record.
    let setup_file = cached_setup(&cache);
    let original = std::fs::read(&setup_file).unwrap();
    for offset in [original.len() - 1, original.len() / 2, 6] {
        let mut damaged = original.clone();
        damaged[offset] ^= 0x04;
        std::fs::write(&setup_file, &damaged).unwrap();
        get(11, &[]).success().stdout(expected(11));
        assert_eq!(std::fs::read(&setup_file).unwrap(), original, "{offset}");
    }
    get(29, &["--setup-sha256", &sha256])
        .success()
        .stdout(expected(29));
}

#[test]
fn merkle_prove_checks_a_pinned_setup_sha256() {
    let dir = tempfile::tempdir().unwrap();
    let leaves = dir.path().join("leaves.txt");
    std::fs::write(&leaves, "a\nb\nc\nd\ne\n").unwrap();
    let db = dir.path().join("tree.obs");
    let summary = run_ok(&[
        "merkle",
        "build",
        "--leaves",
        path(&leaves),
        "--out",
        path(&db),
    ]);
    let sha256 = printed_sha256(&summary);
    let served = Served::start(&[db.as_os_str()]);
    let cache = dir.path().join("cache");
    let prove = |pin: &str| {
        obscura()
            .args(["merkle", "prove", "--server", &served.url, "--db", "tree"])
            .args(["--leaf", "2", "--leaf-data", "c", "--setup-sha256", pin])
            .args(["--cache-dir", path(&cache)])
            .assert()
    };
    prove(&sha256)
        .success()
        .stdout(predicate::str::contains("(verified)"));
    prove(&"00".repeat(32))
        .code(1)
        .stderr(predicate::str::contains("the pinned SHA-256"));
}

/// A server that answers every request with `head` (and no body), on loopback.
fn fake_server(head: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut byte = [0u8];
            while !request.ends_with(b"\r\n\r\n") && stream.read_exact(&mut byte).is_ok() {
                request.push(byte[0]);
            }
            let _ = stream.write_all(head.as_bytes());
        }
    });
    url
}

#[test]
fn get_refuses_a_setup_larger_than_its_limit_before_reading_it() {
    let url = fake_server("HTTP/1.1 200 OK\r\ncontent-length: 53687091200\r\n\r\n");
    let dir = tempfile::tempdir().unwrap();
    let get = |extra: &[&str]| {
        obscura()
            .args(["get", "--server", &url, "--db", "big", "--index", "0"])
            .args(["--cache-dir", path(dir.path())])
            .args(extra)
            .timeout(std::time::Duration::from_secs(60))
            .assert()
    };
    get(&[])
        .code(1)
        .stderr(predicate::str::contains("larger than 1073741824 bytes"));
    get(&["--max-setup-bytes", "1000"])
        .code(1)
        .stderr(predicate::str::contains("larger than 1000 bytes"));
}

#[test]
fn keys_that_are_not_utf8_are_fetched_with_key_hex() {
    let dir = tempfile::tempdir().unwrap();
    // A Latin-1 CSV: its keys are not UTF-8.
    let csv = dir.path().join("latin1.csv");
    let mut text = b"key,value\n".to_vec();
    for (key, value) in [
        (&b"caf\xe9"[..], "coffee"),
        (b"\xff\xfe", "two bytes"),
        (b"plain", "ascii"),
    ] {
        text.extend_from_slice(key);
        text.extend_from_slice(format!(",{value}\n").as_bytes());
    }
    std::fs::write(&csv, text).unwrap();
    let db = dir.path().join("latin1.obs");
    run_ok(&[
        "build",
        "--input",
        path(&csv),
        "--key-column",
        "key",
        "--value-column",
        "value",
        "--out",
        path(&db),
    ]);
    let served = Served::start(&[db.as_os_str()]);
    let cache = dir.path().join("cache");
    let local = ["--db", path(&db)];
    let remote = [
        "--server",
        &served.url,
        "--db",
        "latin1",
        "--cache-dir",
        path(&cache),
    ];
    for source in [&local[..], &remote[..]] {
        for (key, value) in [
            ("636166e9", "coffee"),
            ("fffe", "two bytes"),
            ("706c61696e", "ascii"),
        ] {
            let out = dir.path().join("value.bin");
            obscura()
                .args(["get", "--key-hex", key, "--out", path(&out)])
                .args(source)
                .assert()
                .success();
            assert_eq!(std::fs::read(&out).unwrap(), value.as_bytes(), "{key}");
        }
        obscura()
            .args(["get", "--key-hex", "636166c3a9"])
            .args(source)
            .assert()
            .failure()
            .stderr(predicate::str::contains(
                "not found: the key \"café\" is not in the database",
            ));
        obscura()
            .args(["get", "--key-hex", "ff00"])
            .args(source)
            .assert()
            .failure()
            .stderr(predicate::str::contains("the key \"\\xff\\0\" is not"));
    }
    obscura()
        .args(["get", "--key-hex", "xyz"])
        .args(local)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not hex"));
    obscura()
        .args(["get", "--key-hex", "00", "--key", "a"])
        .args(local)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}

#[test]
fn a_long_missing_key_is_echoed_short() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("kv.csv");
    std::fs::write(&csv, "k,v\na,1\n").unwrap();
    let db = dir.path().join("kv.obs");
    run_ok(&[
        "build",
        "--input",
        path(&csv),
        "--key-column",
        "k",
        "--value-column",
        "v",
        "--out",
        path(&db),
    ]);
    let key = "k".repeat(100_000);
    let output = obscura()
        .args(["get", "--db", path(&db), "--key", &key])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "not found: the key \"{}…\" (100000 bytes) is not in the database",
            "k".repeat(64)
        )),
        "{stderr}"
    );
    assert!(stderr.len() < 200, "{} bytes", stderr.len());
}
