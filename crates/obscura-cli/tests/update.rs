//! `obscura update`: change files applied as a database's next version, read back by
//! `obscura get` from the file and from a server reloaded on SIGHUP or watching the file;
//! refused changes leave the file as it was; `kill -9` at any moment leaves a version that
//! loads and answers correctly.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::assert::Assert;
use common::Served;
use obscura_pir::{Found, Target};
use obscura_registry::Registry;
use predicates::prelude::*;

fn obscura() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("obscura").unwrap()
}

fn path(p: &Path) -> &OsStr {
    p.as_os_str()
}

/// Writes a CSV file of `rows` phone numbers (`555-0000` ...) and builds a database of them,
/// seven per matrix column.
fn build_phones(dir: &Path, rows: usize) -> PathBuf {
    // Seven records per column: the last column has room for appends.
    build_phones_with(dir, rows, &["--layout", "7"])
}

/// [`build_phones`] built with `args`.
fn build_phones_with(dir: &Path, rows: usize, args: &[&str]) -> PathBuf {
    let csv = dir.join("phones.csv");
    let mut text = String::from("name,phone\n");
    for i in 0..rows {
        text.push_str(&format!("user{i},555-{i:04}\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let db = dir.join("phones.obs");
    build(&[&["--column", "phone"], args].concat(), &csv, &db).success();
    db
}

/// `obscura get` of record `index` of database `phones` from the server at `url`, with the
/// setup cached in `cache`.
fn get_phone(url: &str, cache: &Path, index: u64) -> Assert {
    obscura()
        .args(["get", "--db", "phones", "--server", url, "--cache-dir"])
        .arg(cache)
        .args(["--index", &index.to_string()])
        .assert()
}

/// Once the server at `url` has reloaded `phones` after [`CHANGE`], reads through `cache`:
/// record 9's new value, record 10 deleted (exit 3), record 11 as built.
fn reads_the_change(url: &str, cache: &Path) {
    await_phone(url, cache, 9, b"555-0009\n", b"123-4567\n");
    get_phone(url, cache, 10)
        .code(3)
        .stderr(predicate::str::contains("record 10 was deleted"));
    get_phone(url, cache, 11).success().stdout("555-0011\n");
}

/// The change both served tests apply to `phones`: record 9 set, record 10 deleted.
const CHANGE: [&str; 2] = [
    r#"{"op":"set","index":9,"value":"123-4567"}"#,
    r#"{"op":"delete","index":10}"#,
];

/// Waits until `get_phone` of `index` reads `new` instead of `old`: the server reloaded.
fn await_phone(url: &str, cache: &Path, index: u64, old: &[u8], new: &[u8]) {
    let started = Instant::now();
    loop {
        let output = get_phone(url, cache, index)
            .success()
            .get_output()
            .stdout
            .clone();
        if output == new {
            return;
        }
        assert_eq!(output, old);
        assert!(started.elapsed() < Duration::from_secs(30), "not reloaded");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `obscura build ARGS --input INPUT --out OUT`.
fn build(args: &[&str], input: &Path, out: &Path) -> Assert {
    obscura()
        .arg("build")
        .args(args)
        .arg("--input")
        .arg(input)
        .arg("--out")
        .arg(out)
        .assert()
}

/// Runs `obscura update` on `db` with the change lines `lines`.
fn update(db: &Path, lines: &[&str]) -> Assert {
    let changes = db.with_extension("changes.jsonl");
    std::fs::write(&changes, lines.join("\n")).unwrap();
    obscura()
        .args(["update", "--db"])
        .arg(db)
        .arg("--changes")
        .arg(&changes)
        .assert()
}

/// `obscura checkpoint --db FILE`.
fn checkpoint(db: &Path) -> Assert {
    obscura().args(["checkpoint", "--db"]).arg(db).assert()
}

/// `obscura get --db FILE --index INDEX`.
fn get(db: &Path, index: u64) -> Assert {
    obscura()
        .args(["get", "--db"])
        .arg(db)
        .args(["--index", &index.to_string()])
        .assert()
}

/// `obscura get --hex --db FILE --index INDEX`.
fn get_hex(db: &Path, index: u64) -> Assert {
    obscura()
        .args(["get", "--hex", "--db"])
        .arg(db)
        .args(["--index", &index.to_string()])
        .assert()
}

#[test]
fn sets_appends_and_deletes_are_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_phones(dir.path(), 200);
    update(
        &db,
        &[
            r#"{"op":"set","index":7,"value":"999-0007"}"#,
            r#"{"op":"delete","index":3}"#,
            r#"{"op":"append","index":200,"value_hex":"3131312d30323030"}"#,
        ],
    )
    .success()
    .stdout(predicate::str::contains(
        "version 1 (1 set, 1 appended, 1 deleted), 201 records",
    ));
    get(&db, 7).success().stdout("999-0007\n");
    get(&db, 200).success().stdout("111-0200\n");
    get(&db, 8).success().stdout("555-0008\n");
    get(&db, 3)
        .code(3)
        .stdout("")
        .stderr(predicate::str::contains("record 3 was deleted"));
    get(&db, 201)
        .code(1)
        .stderr(predicate::str::contains("out of range"));
    // A deleted record set again is back; versions count on.
    update(&db, &[r#"{"op":"set","index":3,"value":"back"}"#])
        .success()
        .stdout(predicate::str::contains(
            "version 2 (1 set, 0 appended, 0 deleted)",
        ));
    get(&db, 3).success().stdout("back\n");
}

/// Versions are committed to FILE.log and read through it; a checkpoint folds the log into the
/// file, on demand, after a version (`--checkpoint now`) or in the background once due.
#[test]
fn versions_go_to_the_log_until_a_checkpoint_folds_them_in() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_phones(dir.path(), 100);
    let built = std::fs::read(&db).unwrap();
    let log = dir.path().join("phones.obs.log");
    for v in 1..=2 {
        let set = format!(r#"{{"op":"set","index":5,"value":"v{v}"}}"#);
        let holds = if v == 1 { "1 version" } else { "2 versions" };
        update(&db, &[&set])
            .success()
            .stdout(predicate::str::contains(format!("which holds {holds}")));
    }
    assert_eq!(std::fs::read(&db).unwrap(), built);
    assert!(log.exists());
    get(&db, 5).success().stdout("v2\n");
    checkpoint(&db).success().stdout(
        predicate::str::contains("version 2 written")
            .and(predicate::str::contains("2 versions of the log folded in")),
    );
    assert!(!log.exists());
    assert_ne!(std::fs::read(&db).unwrap(), built);
    get(&db, 5).success().stdout("v2\n");
    checkpoint(&db)
        .success()
        .stdout(predicate::str::contains("no change log to fold"));
    // After a version, on request.
    let changes = dir.path().join("v3.jsonl");
    std::fs::write(&changes, r#"{"op":"set","index":5,"value":"v3"}"#).unwrap();
    obscura()
        .args(["update", "--checkpoint", "now", "--db"])
        .arg(&db)
        .arg("--changes")
        .arg(&changes)
        .assert()
        .success()
        .stdout(predicate::str::contains("version 3 written"));
    assert!(!log.exists());
    // Once due (8 versions), in the background.
    for v in 4..=11 {
        let set = format!(r#"{{"op":"set","index":5,"value":"v{v}"}}"#);
        let due = update(&db, &[&set]).success();
        let printed = String::from_utf8_lossy(&due.get_output().stdout).into_owned();
        assert_eq!(
            printed.contains("in the background"),
            v == 11,
            "version {v}: {printed}"
        );
        assert_eq!(printed.contains("phones.obs.checkpoint.txt"), v == 11);
    }
    // Done when its report, beside the file, says so.
    let report = dir.path().join("phones.obs.checkpoint.txt");
    let started = Instant::now();
    while !std::fs::read_to_string(&report).is_ok_and(|r| r.contains("version 11 written")) {
        assert!(started.elapsed() < Duration::from_secs(60), "no checkpoint");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!log.exists());
    get(&db, 5).success().stdout("v11\n");
}

#[test]
fn refused_changes_leave_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_phones(dir.path(), 100);
    let before = std::fs::read(&db).unwrap();
    for (lines, message) in [
        (
            &[
                r#"{"op":"set","index":1,"value":"a"}"#,
                "",
                r#"{"op":"delete","index":1}"#,
            ][..],
            "lines 1 and 3 both change index 1",
        ),
        (
            &[r#"{"op":"set","index":1,"value":"a"}"#, "{not json"][..],
            "line 2: not a JSON object",
        ),
        (
            &[r#"{"op":"set","index":1,"value":"a much longer phone number"}"#][..],
            "rebuild it with `obscura build`",
        ),
        (
            &[r#"{"op":"append","index":150,"value":"a"}"#][..],
            "appends take the indexes from 100 on",
        ),
        (
            &[r#"{"op":"set","index":100,"value":"a"}"#][..],
            "out of range",
        ),
        (
            &[r#"{"op":"upsert","key":"k","value":"a"}"#][..],
            "not keys",
        ),
    ] {
        update(&db, lines)
            .code(1)
            .stderr(predicate::str::contains(message));
        assert!(std::fs::read(&db).unwrap() == before, "{message}");
    }
    // Appends past the matrix's capacity need a new setup.
    let appends: Vec<String> = (100..200)
        .map(|i| format!(r#"{{"op":"append","index":{i},"value":"x"}}"#))
        .collect();
    let appends: Vec<&str> = appends.iter().map(String::as_str).collect();
    update(&db, &appends).code(1).stderr(
        predicate::str::contains("more than the").and(predicate::str::contains("obscura build")),
    );
    assert!(std::fs::read(&db).unwrap() == before);
    // Fixed-size records have no absent state.
    let raw = dir.path().join("raw.bin");
    std::fs::write(&raw, vec![5u8; 64 * 10]).unwrap();
    let raw_db = dir.path().join("raw.obs");
    build(&["--record-size", "64"], &raw, &raw_db).success();
    update(&raw_db, &[r#"{"op":"delete","index":2}"#])
        .code(1)
        .stderr(predicate::str::contains("no absent state"));
}

#[test]
fn a_capacity_reserved_at_build_takes_appends() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("records.bin");
    std::fs::write(&raw, (0..640u32).map(|i| i as u8).collect::<Vec<u8>>()).unwrap();
    let db = dir.path().join("log.obs");
    build(&["--record-size", "64", "--capacity", "1000"], &raw, &db).success();
    let appends: Vec<String> = (10..1000)
        .map(|i| {
            format!(
                r#"{{"op":"append","index":{i},"value_hex":"{}"}}"#,
                hex_record(i)
            )
        })
        .collect();
    let appends: Vec<&str> = appends.iter().map(String::as_str).collect();
    update(&db, &appends)
        .success()
        .stdout(predicate::str::contains(
            "990 appended, 0 deleted), 1000 records",
        ));
    get_hex(&db, 999)
        .success()
        .stdout(format!("{}\n", hex_record(999)));
    get_hex(&db, 9).success().stdout(format!(
        "{}\n",
        hex::encode((576..640u32).map(|i| i as u8).collect::<Vec<u8>>())
    ));
    // --capacity is for databases that change in place.
    build(
        &[
            "--record-size",
            "64",
            "--capacity",
            "100",
            "--scheme",
            "ypir",
        ],
        &raw,
        &dir.path().join("ypir.obs"),
    )
    .code(2)
    .stderr(predicate::str::contains(
        "--capacity applies to index databases",
    ));
}

#[test]
fn a_doublepir_database_takes_changes_and_clients_download_its_new_setup() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("bytes.bin");
    std::fs::write(
        &raw,
        (0..3000u32).map(|i| (i * 7) as u8).collect::<Vec<u8>>(),
    )
    .unwrap();
    let db = dir.path().join("small.obs");
    build(&["--record-size", "3", "--scheme", "double"], &raw, &db).success();
    update(
        &db,
        &[
            r#"{"op":"set","index":5,"value_hex":"abcdef"}"#,
            r#"{"op":"set","index":999,"value_hex":"010203"}"#,
        ],
    )
    .success()
    .stdout(predicate::str::contains("version 1 (2 set"))
    // The second layer's hint is made again: clients download the new setup.
    .stdout(predicate::str::contains("patch for clients").not());
    get_hex(&db, 5).success().stdout("abcdef\n");
    get_hex(&db, 999).success().stdout("010203\n");
    get_hex(&db, 6).success().stdout(format!(
        "{}\n",
        hex::encode((18..21u32).map(|i| (i * 7) as u8).collect::<Vec<u8>>())
    ));
    assert!(!dir.path().join("small.obs.patches").exists());
}

/// The 64 bytes of appended record `index`, in hex.
fn hex_record(index: u64) -> String {
    hex::encode([index as u8 ^ 0xa5; 64])
}

#[test]
fn slots_built_with_room_take_longer_values() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("names.csv");
    std::fs::write(&csv, "name\nAda\nBob\n").unwrap();
    let db = dir.path().join("names.obs");
    build(&["--column", "name", "--value-bytes", "40"], &csv, &db).success();
    update(
        &db,
        &[r#"{"op":"set","index":1,"value":"Robert Wadlow, the tallest man"}"#],
    )
    .success();
    get(&db, 1)
        .success()
        .stdout("Robert Wadlow, the tallest man\n");
    get(&db, 0).success().stdout("Ada\n");
    // Slots smaller than a value, and room asked of a database that does not change in place.
    build(
        &["--column", "name", "--value-bytes", "2"],
        &csv,
        &dir.path().join("small.obs"),
    )
    .code(1)
    .stderr(predicate::str::contains(
        "cannot hold the longest value, of 3",
    ));
    build(
        &[
            "--column",
            "name",
            "--value-bytes",
            "8",
            "--scheme",
            "double",
        ],
        &csv,
        &dir.path().join("double.obs"),
    )
    .code(2)
    .stderr(predicate::str::contains(
        "--value-bytes applies to index databases",
    ));
}

#[test]
fn a_server_serves_the_new_version_after_sighup_and_stale_clients_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_phones(dir.path(), 300);
    let mut served = Served::start(&[path(&db)]);
    served.drain_stderr();
    let cache = dir.path().join("cache");
    let remote = |index: u64| get_phone(&served.url, &cache, index);
    // The setup of version 0 is now in the cache.
    remote(9).success().stdout("555-0009\n");
    update(&db, &CHANGE)
        .success()
        .stdout(predicate::str::contains("patch for clients of version 0:"));
    assert!(dir.path().join("phones.obs.patches").exists());
    // Until the reload the server answers from version 0.
    remote(9).success().stdout("555-0009\n");
    served.signal("HUP");
    // The cached setup of version 0 is stale: its query is refused and the client downloads
    // version 1's setup.
    reads_the_change(&served.url, &cache);
    // The client caught up by the patch from version 0, not by downloading the setup.
    let metrics = http_get(&served.url, "/metrics");
    assert!(
        metrics.contains("obscura_patched_setups_total 1\n"),
        "{metrics}"
    );
}

/// With `--watch`, a server serves each new version by itself, caught up from the change log
/// (no SIGHUP), and says so; a file that did not change is not read again.
#[test]
fn a_watching_server_catches_up_with_new_versions_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_phones(dir.path(), 300);
    let served = Served::start(&[path(&db), OsStr::new("--watch"), OsStr::new("0.1")]);
    let cache = dir.path().join("cache");
    get_phone(&served.url, &cache, 9)
        .success()
        .stdout("555-0009\n");
    update(&db, &CHANGE).success();
    reads_the_change(&served.url, &cache);
    update(&db, &[r#"{"op":"set","index":11,"value":"765-4321"}"#]).success();
    await_phone(&served.url, &cache, 11, b"555-0011\n", b"765-4321\n");
    std::thread::sleep(Duration::from_millis(300));
    let (stopped, said) = served.terminate();
    assert!(stopped, "{said:?}");
    let reloads: Vec<&String> = said.iter().filter(|l| l.starts_with("reloaded")).collect();
    assert_eq!(reloads.len(), 2, "{said:?}");
    for (line, version) in reloads.iter().zip(1..) {
        let caught_up = format!(
            "reloaded phones at version {version}: caught up 1 version from its change log"
        );
        assert!(line.starts_with(&caught_up), "{line}");
    }
}

#[test]
fn a_ypir_database_is_updated_under_the_same_setup_and_served_clients_keep_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_phones_with(dir.path(), 300, &["--scheme", "ypir"]);
    let mut served = Served::start(&[path(&db)]);
    served.drain_stderr();
    let cache = dir.path().join("cache");
    let remote = |index: u64| get_phone(&served.url, &cache, index);
    remote(9).success().stdout("555-0009\n");
    let cached = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = walk(dir)
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap();
                (p, bytes)
            })
            .collect();
        files.sort();
        files
    };
    let before = cached(&cache);
    update(&db, &CHANGE)
        .success()
        .stdout(predicate::str::contains(
            "updated (1 set, 0 appended, 1 deleted), 300 records; its setup is unchanged",
        ))
        .stdout(predicate::str::contains("patch for clients").not());
    // The setup names the record count, which an append would change.
    update(&db, &[r#"{"op":"append","index":300,"value":"1"}"#])
        .code(1)
        .stderr(predicate::str::contains("rebuild it with `obscura build`"));
    get(&db, 9).success().stdout("123-4567\n");
    served.signal("HUP");
    reads_the_change(&served.url, &cache);
    // The cached setup still names the database: nothing was downloaded again.
    assert_eq!(cached(&cache), before);
}

/// The files under `dir`, at any depth.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The body of `GET path` from the server at `url` (`http://HOST:PORT`).
fn http_get(url: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or(reply)
}

/// Records of the database the kill test updates: enough that an update spends most of its
/// time reading, changing and writing the file, not starting.
const KILLED_RECORDS: u64 = 200_000;

/// The records of version `version` of the database the kill test writes: [`KILLED_RECORDS`] values, of
/// which version v sets records `v·97 + k·13 (mod KILLED_RECORDS)`, k < 300, to `v{v}:{index}`.
fn expected(version: u64, index: u64) -> Vec<u8> {
    let mut value = format!("{index:010}").into_bytes();
    for v in 1..=version {
        if changed(v).contains(&index) {
            value = format!("v{v}:{index:05}").into_bytes();
        }
    }
    value
}

fn changed(version: u64) -> Vec<u64> {
    (0..300)
        .map(|k| (version * 97 + k * 13) % KILLED_RECORDS)
        .collect()
}

#[test]
fn kill_9_during_updates_never_leaves_a_version_that_fails_or_answers_wrongly() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("values.csv");
    let mut text = String::from("value\n");
    for i in 0..KILLED_RECORDS {
        text.push_str(&format!("{i:010}\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let db = dir.path().join("db.obs");
    build(&["--column", "value"], &csv, &db).success();
    let changes_of = |version: u64| -> PathBuf {
        let file = dir.path().join(format!("v{version}.jsonl"));
        let lines: Vec<String> = changed(version)
            .into_iter()
            .map(|i| format!(r#"{{"op":"set","index":{i},"value":"v{version}:{i:05}"}}"#))
            .collect();
        std::fs::write(&file, lines.join("\n")).unwrap();
        file
    };
    let run = |version: u64| {
        Command::new(assert_cmd::cargo::cargo_bin("obscura"))
            .args(["update", "--db"])
            .arg(&db)
            .arg("--changes")
            .arg(changes_of(version))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // How long one update takes here, uninterrupted.
    let started = Instant::now();
    assert!(run(1).wait().unwrap().success());
    let full = started.elapsed();
    eprintln!("one update: {full:?}");
    let mut version = 1;
    let mut killed_before_the_end = 0;
    for attempt in 0..24u32 {
        let mut child = run(version + 1);
        // Spread over the whole run, and a little past its usual end.
        std::thread::sleep(full.mul_f64(f64::from(attempt) / 20.0));
        let _ = child.kill();
        let status = child.wait().unwrap();
        killed_before_the_end += u32::from(!status.success());
        let database = obscura_store::store::read_database(&db)
            .unwrap_or_else(|e| panic!("attempt {attempt}: the file does not load: {e:#}"));
        let now = database.listing().version;
        assert!(
            now == version || now == version + 1,
            "attempt {attempt}: version {now} after {version}"
        );
        version = now;
        let mut client = Registry::default().client(&database.setup_bytes()).unwrap();
        for index in changed(version)
            .into_iter()
            .take(5)
            .chain([0, KILLED_RECORDS - 1])
        {
            let (request, pending) = client.query(Target::Index(index)).unwrap();
            let answers = database
                .answer(vec![database.decode_query(&request).unwrap()])
                .unwrap();
            assert_eq!(
                client.decode(pending, &answers[0]).unwrap(),
                Found::Record(expected(version, index)),
                "attempt {attempt}, version {version}, record {index}"
            );
        }
    }
    assert!(killed_before_the_end > 0, "no update was interrupted");
    // The next update runs after any of those (a killed one's lock is gone with it).
    assert!(run(version + 1).wait().unwrap().success());
    let database = obscura_store::store::read_database(&db).unwrap();
    assert_eq!(database.listing().version, version + 1);
}

/// The root `obscura merkle build` or `obscura update` printed (`root HEX` or `root: HEX`).
fn printed_root(assert: Assert) -> String {
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let at = stdout.find("root").expect("a root printed");
    stdout[at..]
        .split(|c: char| !c.is_ascii_hexdigit())
        .find(|word| word.len() == 64)
        .expect("a root of 64 hex digits")
        .to_string()
}

/// Runs `obscura merkle prove ARGS` against `db`.
fn prove(db: &str, args: &[&str]) -> Assert {
    obscura()
        .args(["merkle", "prove", "--db", db])
        .args(args)
        .assert()
}

#[test]
fn a_merkle_tree_grows_by_appended_leaves_and_proves_it_only_grew() {
    let dir = tempfile::tempdir().unwrap();
    let leaves = |range: std::ops::Range<u32>| -> String {
        range.map(|i| format!("cert-{i}\n")).collect::<String>()
    };
    let (first, more) = (
        dir.path().join("first.txt"),
        dir.path().join("tree.changes"),
    );
    std::fs::write(&first, leaves(0..100)).unwrap();
    std::fs::write(&more, leaves(100..130)).unwrap();
    let all = dir.path().join("all.txt");
    std::fs::write(&all, leaves(0..130)).unwrap();
    let db = dir.path().join("tree.obs");
    let update_tree = || {
        obscura()
            .args(["update", "--db"])
            .arg(&db)
            .arg("--changes")
            .arg(&more)
            .assert()
    };
    let merkle_build = |input: &Path, out: &Path, args: &[&str]| {
        obscura()
            .args(["merkle", "build", "--leaves"])
            .arg(input)
            .arg("--out")
            .arg(out)
            .args(args)
            .assert()
            .success()
    };
    let old_root = printed_root(merkle_build(&first, &db, &["--capacity", "200"]));
    let new_root = printed_root(
        update_tree()
            .success()
            .stdout(predicate::str::contains("(30 leaves appended), 130 leaves"))
            .stdout(predicate::str::contains("patch for clients of version 0:")),
    );
    assert!(dir.path().join("tree.obs.patches").exists());
    // The same root as a tree built of all the leaves at once.
    let rebuilt = dir.path().join("all.obs");
    assert_eq!(printed_root(merkle_build(&all, &rebuilt, &[])), new_root);
    let db_name = db.to_str().unwrap();
    prove(db_name, &["--leaf", "120", "--leaf-data", "cert-120"])
        .success()
        .stdout(predicate::str::contains(format!(
            "root {new_root} (verified)"
        )));
    prove(db_name, &["--since", "100", "--since-root", &old_root])
        .success()
        .stdout(predicate::str::contains(format!(
            "tree of 130 leaves, root {new_root} (verified: it extends the first)"
        )));
    // Another earlier head, or a size past the tree, is refused.
    prove(db_name, &["--since", "100", "--since-root", &new_root])
        .failure()
        .stderr(predicate::str::contains(
            "does not extend the one of 100 leaves",
        ));
    prove(db_name, &["--since", "131", "--since-root", &old_root])
        .failure()
        .stderr(predicate::str::contains(
            "no consistency proof goes from 131 leaves",
        ));
    // Served: a client that fetched the setup of 130 leaves proves the tree grown since.
    let mut served = Served::start(&[path(&db)]);
    served.drain_stderr();
    let cache = dir.path().join("cache");
    let remote = |args: &[&str]| {
        obscura()
            .args(["merkle", "prove", "--db", "tree", "--server", &served.url])
            .arg("--cache-dir")
            .arg(&cache)
            .args(args)
            .assert()
    };
    remote(&["--since", "100", "--since-root", &old_root])
        .success()
        .stdout(predicate::str::contains("tree of 130 leaves"));
    std::fs::write(&more, leaves(130..300)).unwrap();
    update_tree().failure().stderr(predicate::str::contains(
        "300 leaves do not fit the tree's height 8, which holds 256",
    ));
    std::fs::write(&more, leaves(130..140)).unwrap();
    update_tree().success();
    served.signal("HUP");
    let started = Instant::now();
    while !http_get(&served.url, "/v1/databases").contains("\"records\":140") {
        assert!(started.elapsed() < Duration::from_secs(30), "not reloaded");
        std::thread::sleep(Duration::from_millis(100));
    }
    remote(&["--since", "130", "--since-root", &new_root])
        .success()
        .stdout(predicate::str::contains("tree of 140 leaves"));
    let proof = http_get(&served.url, "/v1/databases/tree/consistency?first=100");
    assert!(proof.contains("\"first\":100,\"second\":140"), "{proof}");
    // The cached setup of 130 leaves caught up by the patch, not by downloading the setup.
    let metrics = http_get(&served.url, "/metrics");
    assert!(
        metrics.contains("obscura_patched_setups_total 1\n"),
        "{metrics}"
    );
}

/// `obscura get --key KEY` against `source` (`--db FILE`, or `--server URL --db NAME` with a
/// cache).
fn get_key(source: &[&OsStr], key: &str) -> Assert {
    obscura()
        .arg("get")
        .args(source)
        .args(["--key", key])
        .assert()
}

#[test]
fn a_keyword_database_takes_upserts_and_deletes_and_served_clients_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("callers.csv");
    let mut text = String::from("phone,name\n");
    for i in 0..300 {
        text.push_str(&format!("+1555{i:04},caller {i}\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let db = dir.path().join("callers.obs");
    build(
        &["--key-column", "phone", "--value-column", "name"],
        &csv,
        &db,
    )
    .success();
    let local = [OsStr::new("--db"), path(&db)];
    update(
        &db,
        &[
            r#"{"op":"upsert","key":"+15550007","value":"a spammer"}"#,
            r#"{"op":"upsert","key":"+15559999","value":"a new caller"}"#,
            r#"{"op":"delete","key":"+15550003"}"#,
        ],
    )
    .success()
    .stdout(predicate::str::contains(
        "version 1 (2 upserted, 1 deleted), 300 keys",
    ));
    get_key(&local, "+15550007").success().stdout("a spammer\n");
    get_key(&local, "+15559999")
        .success()
        .stdout("a new caller\n");
    get_key(&local, "+15550008").success().stdout("caller 8\n");
    get_key(&local, "+15550003")
        .code(3)
        .stderr(predicate::str::contains("not found"));
    // Refused batches leave the file as it was.
    let before = std::fs::read(&db).unwrap();
    for (lines, message) in [
        (
            &[r#"{"op":"delete","key":"+15550003"}"#][..],
            "is not in the database",
        ),
        (
            &[
                r#"{"op":"upsert","key":"k","value":"1"}"#,
                r#"{"op":"delete","key_hex":"6b"}"#,
            ][..],
            "lines 1 and 2",
        ),
        (&[r#"{"op":"set","index":1,"value":"a"}"#][..], "by key"),
    ] {
        update(&db, lines)
            .code(1)
            .stderr(predicate::str::contains(message));
        assert!(std::fs::read(&db).unwrap() == before, "{message}");
    }

    let mut served = Served::start(&[path(&db)]);
    served.drain_stderr();
    let cache = dir.path().join("cache");
    let url = served.url.clone();
    let remote = [
        OsStr::new("--db"),
        OsStr::new("callers"),
        OsStr::new("--server"),
        OsStr::new(&url),
        OsStr::new("--cache-dir"),
        cache.as_os_str(),
    ];
    // The setup of version 1 is now in the cache.
    get_key(&remote, "+15550009").success().stdout("caller 9\n");
    update(
        &db,
        &[
            r#"{"op":"upsert","key":"+15550009","value":"moved"}"#,
            r#"{"op":"upsert","key":"+15550003","value":"back"}"#,
        ],
    )
    .success()
    .stdout(predicate::str::contains(
        "version 2 (2 upserted, 0 deleted), 301 keys",
    ));
    served.signal("HUP");
    let started = Instant::now();
    loop {
        // The cached setup of version 1 is stale: its query is refused and the client fetches
        // version 2's.
        let output = get_key(&remote, "+15550009")
            .success()
            .get_output()
            .stdout
            .clone();
        if output == b"moved\n" {
            break;
        }
        assert_eq!(output, b"caller 9\n");
        assert!(started.elapsed() < Duration::from_secs(30), "not reloaded");
        std::thread::sleep(Duration::from_millis(100));
    }
    get_key(&remote, "+15550003").success().stdout("back\n");
    get_key(&remote, "+15550007")
        .success()
        .stdout("a spammer\n");
    get_key(&remote, "+15551234")
        .code(3)
        .stderr(predicate::str::contains("not found"));
    // The client caught up by the patch from version 1 (the new delta table).
    let metrics = http_get(&served.url, "/metrics");
    assert!(
        metrics.contains("obscura_patched_setups_total 1\n"),
        "{metrics}"
    );
}
