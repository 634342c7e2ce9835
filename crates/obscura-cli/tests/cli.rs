//! The `obscura` binary as a user runs it.

use assert_cmd::Command;
use predicates::prelude::*;

mod common;
use common::Served;
use std::path::Path;

fn obscura() -> Command {
    Command::cargo_bin("obscura").unwrap()
}

fn sample_data(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn build(dir: &Path, data: &[u8], record_size: u64, layout: &str) -> std::path::PathBuf {
    build_with(dir, data, record_size, &["--layout", layout])
}

fn build_with(dir: &Path, data: &[u8], record_size: u64, options: &[&str]) -> std::path::PathBuf {
    let name = options.join("-").replace("--", "");
    let input = dir.join(format!("input-{name}.bin"));
    std::fs::write(&input, data).unwrap();
    let db = dir.join(format!("db-{name}.obs"));
    obscura()
        .args(["build", "--input"])
        .arg(&input)
        .args(["--record-size", &record_size.to_string()])
        .args(options)
        .arg("--out")
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("wrote"));
    db
}

/// `obscura get` returns the exact bytes of every record, the short last one included, from
/// in-memory and streamed setups.
#[test]
fn get_returns_every_record_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let record_size = 7usize;
    let data = sample_data(40 * record_size - 3);
    for options in [
        &["--layout", "square"][..],
        &["--layout", "one-per-column"],
        &["--layout", "3", "--threads", "1"],
        &["--matrix", "uniform"],
        &["--params", "frodo-1774", "--layout", "one-per-column"],
        &["--scheme", "double"],
        &["--scheme", "double", "--layout", "one-per-column"],
        &["--stream"],
        &[
            "--stream",
            "--layout",
            "one-per-column",
            "--matrix",
            "uniform",
        ],
    ] {
        let db = build_with(dir.path(), &data, record_size as u64, options);
        for (index, expected) in data.chunks(record_size).enumerate() {
            let out = dir.path().join("record.bin");
            obscura()
                .args(["get", "--db"])
                .arg(&db)
                .args(["--index", &index.to_string(), "--out"])
                .arg(&out)
                .assert()
                .success();
            assert_eq!(
                std::fs::read(&out).unwrap(),
                expected,
                "{options:?} index {index}"
            );
        }
    }
}

/// Without `--out`, a record that is text is printed as text, anything else (or with `--hex`)
/// in hex.
#[test]
fn get_prints_text_as_text_and_the_rest_in_hex() {
    let dir = tempfile::tempdir().unwrap();
    let db = build(dir.path(), b"abcdefgh\x00\x01\xff\xfe", 4, "square");
    let get = |index: &str, extra: &[&str]| {
        obscura()
            .args(["get", "--db"])
            .arg(&db)
            .args(["--index", index])
            .args(extra)
            .assert()
            .success()
    };
    get("1", &[]).stdout("efgh\n");
    get("1", &["--hex"]).stdout("65666768\n");
    get("2", &[]).stdout("0001fffe\n");
}

fn assert_clean_failure(assert: assert_cmd::assert::Assert, message: &str) {
    assert
        .failure()
        .stderr(predicate::str::starts_with("error: "))
        .stderr(predicate::str::contains(message))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn bad_input_gets_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = build(dir.path(), &sample_data(100), 10, "square");

    let missing = obscura()
        .args([
            "build",
            "--input",
            "/nonexistent/input",
            "--record-size",
            "4",
            "--out",
        ])
        .arg(dir.path().join("x.obs"))
        .assert();
    assert_clean_failure(missing, "cannot read /nonexistent/input");

    let empty = dir.path().join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let empty = obscura()
        .args(["build", "--input"])
        .arg(&empty)
        .args(["--record-size", "4", "--out"])
        .arg(dir.path().join("x.obs"))
        .assert();
    assert_clean_failure(empty, "is empty");

    let out_of_range = obscura()
        .args(["get", "--db"])
        .arg(&db)
        .args(["--index", "10"])
        .assert();
    assert_clean_failure(out_of_range, "record index 10 is out of range");

    let not_a_db = dir.path().join("input-layout-square.bin");
    let wrong = obscura()
        .args(["get", "--db"])
        .arg(&not_a_db)
        .args(["--index", "0"])
        .assert();
    assert_clean_failure(wrong, "not a valid Obscura database");

    let missing_db = obscura()
        .args(["get", "--db", "/nonexistent.obs", "--index", "0"])
        .assert();
    assert_clean_failure(missing_db, "/nonexistent.obs");

    let mut corrupted = std::fs::read(&db).unwrap();
    let last = corrupted.len() - 1;
    corrupted[last] ^= 1;
    let corrupted_db = dir.path().join("corrupted.obs");
    std::fs::write(&corrupted_db, corrupted).unwrap();
    let corrupt = obscura()
        .args(["get", "--db"])
        .arg(&corrupted_db)
        .args(["--index", "0"])
        .assert();
    assert_clean_failure(corrupt, "checksum");

    let unsupported = obscura()
        .args(["build", "--input"])
        .arg(&not_a_db)
        .args([
            "--record-size",
            "4",
            "--params",
            "frodo-1774",
            "--matrix",
            "negacyclic",
            "--out",
        ])
        .arg(dir.path().join("x.obs"))
        .assert();
    assert_clean_failure(unsupported, "cannot use a negacyclic matrix");

    // No database file is left behind by failed builds.
    assert!(!dir.path().join("x.obs").exists());
}

#[test]
fn demo_retrieves_and_reports() {
    obscura()
        .args(["demo", "--records", "500", "--record-size", "100"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Every record matched the original",
        ))
        .stdout(predicate::str::contains("query"))
        .stdout(predicate::str::contains("answer"))
        .stdout(predicate::str::contains("== DoublePIR"))
        .stdout(predicate::str::contains("== YPIR+SP"));
}

/// Runs `obscura bench ARGS --json` and parses its output.
fn bench_json(args: &[&str]) -> serde_json::Value {
    let output = obscura()
        .arg("bench")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Both LWE presets at a small size: the JSON of `docs/workloads.md`, with every record checked.
#[test]
fn bench_presets_print_the_documented_json() {
    for preset in ["frodo", "simple-1g"] {
        let report = bench_json(&[preset, "--records", "3000", "--record-bytes", "100"]);
        assert_eq!(report["preset"], preset);
        assert_eq!(report["records"], 3000);
        assert_eq!(report["record_bytes"], 100);
        assert_eq!(report["correct"], true);
        assert_eq!(report["params"]["log_q"], 32);
        for key in ["one_thread", "all_threads"] {
            assert!(report["bandwidth_gbs"][key].as_f64().unwrap() > 0.0);
            assert!(report["answer_gbs"][key].as_f64().unwrap() > 0.0);
        }
        for key in [
            "server_setup",
            "client_setup",
            "query_prepare",
            "query",
            "answer",
            "decode",
        ] {
            assert!(report["seconds"][key].as_f64().unwrap() > 0.0, "{key}");
        }
        assert!(report["bytes"]["query"].as_u64().unwrap() > 0);
        let batches = report["batch"].as_array().map_or(0, |b| b.len());
        assert_eq!(batches, if preset == "simple-1g" { 4 } else { 0 });
        assert_repeated(&report);
    }
}

/// The `repeated` object of an index or keyword preset: each client's first lookup, and the
/// rounds of later lookups set against the bench's steps.
fn assert_repeated(report: &serde_json::Value) {
    let repeated = &report["repeated"];
    assert_eq!(repeated["rounds"], 15);
    assert!(repeated["steps"]["median"].as_f64().unwrap() > 0.0);
    for place in ["local", "served"] {
        assert!(repeated["first"][place].as_f64().unwrap() > 0.0, "{place}");
        let later = &repeated["later"][place];
        let (min, median, max) = (
            later["min"].as_f64().unwrap(),
            later["median"].as_f64().unwrap(),
            later["max"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= median && median <= max, "{place}");
        assert!(
            repeated["later_over_steps"][place]["median"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
}

/// The `update` preset at a small size: each version made in place is checked by retrievals,
/// changes matrix entries in proportion to its records, and has its ratio to the full setup.
#[test]
fn update_preset_reports_each_version() {
    let report = bench_json(&["update", "--records", "4000", "--record-bytes", "64"]);
    assert_eq!(report["preset"], "update");
    assert_eq!(report["correct"], true);
    let setup = report["setup_seconds"].as_f64().unwrap();
    assert!(setup > 0.0);
    let cases = report["cases"].as_array().unwrap();
    let records: Vec<u64> = cases
        .iter()
        .map(|c| c["records"].as_u64().unwrap())
        .collect();
    assert_eq!(records, [4, 40, 400, 40, 40]);
    for case in cases {
        assert_eq!(case["correct"], true);
        // A 64-byte record covers 64 digits of 8 bits or more of smaller ones; a few keep theirs.
        let (entries, changed) = (
            case["entries"].as_u64().unwrap(),
            case["records"].as_u64().unwrap(),
        );
        assert!(
            entries >= changed * 32 && entries <= changed * 128,
            "{case}"
        );
        let ratio = case["over_setup"].as_f64().unwrap();
        assert!((ratio - case["seconds"].as_f64().unwrap() / setup).abs() < 1e-9);
        let served = case["served_over_setup"].as_f64().unwrap();
        assert!((served - case["served_seconds"].as_f64().unwrap() / setup).abs() < 1e-9);
        assert!(served > 0.0);
        // The patch: each changed record's digits with a sign bit each (at most twice its
        // bytes), a run's position, and the envelope; less than the setup.
        let patch = case["patch_bytes"].as_u64().unwrap();
        assert!(patch <= changed * (2 * 64 + 24) + 300, "{case}");
        assert!(patch < report["setup_bytes"].as_u64().unwrap(), "{case}");
        assert!(case["client_seconds"].as_f64().unwrap() > 0.0);
        assert!(case["commit_seconds"].as_f64().unwrap() > 0.0);
    }
}

/// The `update-double` preset at a small size: DoublePIR versions made in place, checked by
/// retrievals, with no patch (clients download the new setup).
#[test]
fn update_double_preset_reports_each_version() {
    let report = bench_json(&["update-double", "--records", "20000"]);
    assert_eq!(report["preset"], "update-double");
    assert_eq!(report["correct"], true);
    let cases = report["cases"].as_array().unwrap();
    let records: Vec<u64> = cases
        .iter()
        .map(|c| c["records"].as_u64().unwrap())
        .collect();
    assert_eq!(records, [20, 200]);
    for case in cases {
        assert_eq!(case["correct"], true);
        assert!(case["entries"].as_u64().unwrap() >= case["records"].as_u64().unwrap() / 2);
        assert!(case.get("patch_bytes").is_none(), "{case}");
    }
}

/// The `update-merkle` preset at a small size: leaves appended to a tree built with room, the
/// new version checked (root, audit paths, consistency proof).
#[test]
fn update_merkle_preset_reports_the_append() {
    let report = bench_json(&["update-merkle", "--records", "1024"]);
    assert_eq!(report["preset"], "update-merkle");
    assert_eq!(report["correct"], true);
    assert_eq!(
        (report["leaves"].as_u64(), report["appended"].as_u64()),
        (Some(1024), Some(64))
    );
    assert_eq!(report["height"], 11);
    for field in [
        "build_seconds",
        "append_seconds",
        "over_build",
        "commit_seconds",
        "write_seconds",
        "client_seconds",
        "one_leaf_seconds",
    ] {
        assert!(report[field].as_f64().unwrap() > 0.0, "{field}");
    }
    assert!(report["patch_bytes"].as_u64().unwrap() < report["setup_bytes"].as_u64().unwrap());
}

/// The `update-keyword` preset at a small size: 1% of the keys upserted and deleted as a
/// version, then a batch that compacts, lookups checked after each.
#[test]
fn update_keyword_preset_reports_the_versions() {
    let report = bench_json(&[
        "update-keyword",
        "--records",
        "4000",
        "--record-bytes",
        "24",
    ]);
    assert_eq!(report["preset"], "update-keyword");
    assert_eq!(report["correct"], true);
    assert_eq!(
        (
            report["upserted"].as_u64(),
            report["deleted"].as_u64(),
            report["compacting_changes"].as_u64()
        ),
        (Some(30), Some(10), Some(251))
    );
    for field in [
        "build_seconds",
        "update_seconds",
        "commit_seconds",
        "write_seconds",
        "compact_seconds",
    ] {
        assert!(report[field].as_f64().unwrap() > 0.0, "{field}");
    }
}

/// The `update-ypir` preset at a small size: both variants changed in place under their
/// setups, records checked after each version.
#[test]
fn update_ypir_preset_reports_both_variants() {
    let reports = bench_json(&["update-ypir", "--records", "100000"]);
    let reports = reports.as_array().expect("one report per variant");
    let variants: Vec<&str> = reports
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["ypir", "ypir-sp"]);
    for report in reports {
        assert_eq!(report["correct"], true);
        let versions = report["versions"].as_array().unwrap();
        let records: Vec<u64> = versions
            .iter()
            .map(|v| v["records"].as_u64().unwrap())
            .collect();
        let expected = if report["variant"] == "ypir" { 1000 } else { 1 };
        assert_eq!(records, [expected, 1]);
        for version in versions {
            assert!(version["entries"].as_u64().unwrap() > 0);
            assert!(version["update_seconds"].as_f64().unwrap() > 0.0);
            assert!(version["commit_seconds"].as_f64().unwrap() > 0.0);
        }
    }
}

/// The DoublePIR and YPIR presets at small sizes: `double-1g` reports what each answer streams
/// besides the database, `ypir-small` one run per scheme, `ypir-1g` and `ypir-sp` their
/// messages and phases, every record checked.
#[test]
fn double_presets_print_their_json() {
    let report = bench_json(&["double-1g", "--records", "20000"]);
    assert_eq!(report["scheme"], "double");
    assert_eq!(report["correct"], true);
    assert_eq!(report["record_bytes"], 1);
    assert_eq!(report["bytes"]["hint"], 16_777_984);
    assert!(report["answer_reads"]["database"].as_u64().unwrap() >= 20000);
    assert!(report["answer_reads"]["second_layer"].as_u64().unwrap() > 0);
    assert!(
        report["answer_reads"]["gbs"]["all_threads"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    let small = bench_json(&["ypir-small", "--records", "500"]);
    assert_eq!(small["correct"], true);
    let runs = small["runs"].as_array().unwrap();
    let schemes: Vec<&str> = runs.iter().map(|r| r["scheme"].as_str().unwrap()).collect();
    assert_eq!(schemes, ["simple", "double", "ypir", "ypir-sp"]);
    for run in runs {
        assert_eq!(run["records"], 500);
        for key in [
            "server_setup",
            "end_to_end_prepared",
            "end_to_end_fresh",
            "answer",
        ] {
            assert!(run["seconds"][key].as_f64().unwrap() > 0.0, "{key}");
        }
        assert!(run["bytes"]["answer"].as_u64().unwrap() > 0);
    }

    for (preset, records, record_bytes, ciphertexts) in
        [("ypir-1g", "300000", "1", 1), ("ypir-sp", "4", "5000", 2)]
    {
        let report = bench_json(&[preset, "--records", records, "--record-bytes", record_bytes]);
        assert_eq!(report["correct"], true, "{preset}");
        assert_eq!(
            report["bytes"]["answer"],
            8 + 12_288 * ciphertexts,
            "{preset}"
        );
        let bytes = &report["bytes"];
        let parts: u64 = ["query_first", "query_packed", "query_keys"]
            .iter()
            .map(|k| bytes[k].as_u64().unwrap())
            .sum();
        assert_eq!(bytes["query"].as_u64().unwrap(), parts + 8, "{preset}");
        for key in ["server_setup", "query", "decode"] {
            assert!(
                report["seconds"][key].as_f64().unwrap() > 0.0,
                "{preset} {key}"
            );
        }
        for key in ["answer", "second_pass", "packing"] {
            assert!(
                report["seconds"][key]["all_threads"].as_f64().unwrap() > 0.0,
                "{preset} {key}"
            );
        }
    }
}

/// The engine options of `obscura build` set up the PIR presets' databases: a plain-LWE
/// simple-1g with FrodoPIR's parameters, one record per column, reports them; the server's peak
/// memory is the setup's, far below the 2 GiB bandwidth buffer.
#[test]
fn bench_presets_take_the_engine_options() {
    let report = bench_json(&[
        "simple-1g",
        "--records",
        "3000",
        "--record-bytes",
        "100",
        "--params",
        "frodo-1774",
        "--matrix",
        "uniform",
        "--layout",
        "one-per-column",
    ]);
    assert_eq!(report["correct"], true);
    assert_eq!(report["layout"], "one-per-column");
    assert_eq!(report["params"]["set"], "frodo-1774");
    assert_eq!(report["params"]["n"], 1774);
    assert_eq!(report["params"]["matrix"], "uniform");
    assert_eq!(report["matrix"][1], 3000);
    if let Some(peak) = report["server_peak_bytes"].as_u64() {
        assert!(peak > 0 && peak < 1 << 30, "{peak}");
    }
    let keyword = bench_json(&[
        "chalamet",
        "--records",
        "300",
        "--record-bytes",
        "40",
        "--arity",
        "3",
        "--params",
        "hintless-1408",
    ]);
    assert_eq!(keyword["params"]["set"], "hintless-1408");
    assert_eq!(keyword["correct"], true);
}

/// Every invalid argument value and every combination of arguments that cannot work is a usage
/// error (exit status 2, clap's format with the command's usage line), found before any work:
/// each invocation names input files and databases that do not exist, which would be the error
/// if anything were read first.
#[test]
fn invalid_arguments_are_usage_errors_found_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.obs");
    let out = out.to_str().unwrap();
    let build = |extra: &[&str], input: &str| -> Vec<String> {
        let mut args = vec!["build", "--input", input, "--out", out];
        args.extend_from_slice(extra);
        args.into_iter().map(String::from).collect()
    };
    let psi = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "psi",
            "--protocol",
            "kkrt",
            "--input",
            "/nonexistent/in.csv",
        ];
        args.extend_from_slice(&["--column", "item"]);
        args.extend_from_slice(extra);
        args.into_iter().map(String::from).collect()
    };
    let serve = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["serve", "/nonexistent/db.obs", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        args.into_iter().map(String::from).collect()
    };
    let bench = |extra: &[&str]| -> Vec<String> {
        std::iter::once("bench")
            .chain(extra.iter().copied())
            .map(String::from)
            .collect()
    };
    let raw = "/nonexistent/records.bin";
    let csv = "/nonexistent/records.csv";
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            build(&["--record-size", "0"], raw),
            "'0' for '--record-size",
        ),
        (
            build(&["--record-size", "4", "--threads", "0"], raw),
            "'0' for '--threads",
        ),
        (
            build(&["--record-size", "4", "--threads", "100000"], raw),
            "100000 is not in 1..=1024",
        ),
        (build(&[], raw), "--record-size is needed for raw input"),
        (
            build(&["--record-size", "4", "--column", "a"], raw),
            "--column applies to CSV",
        ),
        (
            build(&["--record-size", "4", "--arity", "3"], raw),
            "--arity applies to keyword",
        ),
        (
            build(
                &["--record-size", "4", "--scheme", "double", "--stream"],
                raw,
            ),
            "--stream builds index databases",
        ),
        (
            build(&["--record-size", "4", "--column", "a"], csv),
            "--record-size applies to raw input only",
        ),
        (
            build(&["--stream", "--column", "a"], csv),
            "--stream applies to raw input only",
        ),
        (build(&[], csv), "name the record's column(s)"),
        (
            psi(&["--role", "client", "--listen", "127.0.0.1:0"]),
            "give --connect ADDR or --mailbox DIR alone",
        ),
        (
            psi(&["--role", "server", "--connect", "127.0.0.1:1"]),
            "give --listen ADDR or --mailbox DIR alone",
        ),
        (
            psi(&[
                "--role",
                "server",
                "--listen",
                "127.0.0.1:0",
                "--output",
                "o.csv",
            ]),
            "--output on the server needs --both-learn",
        ),
        (
            psi(&[
                "--role",
                "client",
                "--connect",
                "127.0.0.1:1",
                "--timeout",
                "0",
            ]),
            "'0' for '--timeout",
        ),
        (
            psi(&[
                "--role",
                "client",
                "--connect",
                "127.0.0.1:1",
                "--threads",
                "0",
            ]),
            "'0' for '--threads",
        ),
        (
            serve(&["--max-concurrent", "0"]),
            "'0' for '--max-concurrent",
        ),
        (serve(&["--timeout-secs", "0"]), "'0' for '--timeout-secs"),
        (serve(&["--threads", "100000"]), "100000 is not in 1..=1024"),
        (
            serve(&["--cors-origin", "lookup.example"]),
            "is not a web origin",
        ),
        (
            serve(&["--cors-origin", "https://lookup.example/path"]),
            "is not a web origin",
        ),
        (
            ["demo", "--records", "0"].map(String::from).to_vec(),
            "'0' for '--records",
        ),
        (
            [
                "merkle",
                "build",
                "--leaves",
                "/nonexistent/leaves",
                "--leaf-bytes",
                "0",
                "--out",
                out,
            ]
            .map(String::from)
            .to_vec(),
            "'0' for '--leaf-bytes",
        ),
        (
            bench(&["simple-1g", "--records", "0"]),
            "'0' for '--records",
        ),
        (
            bench(&["simple-1g", "--record-bytes", "0"]),
            "'0' for '--record-bytes",
        ),
        (
            bench(&["simple-1g", "--threads", "0"]),
            "'0' for '--threads",
        ),
        (
            bench(&["chalamet", "--layout", "square"]),
            "--layout does not apply to chalamet: a keyword database stores one record per column",
        ),
        (
            bench(&["psi-ecdh", "--params", "frodo-1774"]),
            "--params applies to the PIR presets",
        ),
    ];
    for (args, message) in cases {
        let output = obscura().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(stderr.contains("try '--help'"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("nonexistent"),
            "{args:?} read a file: {stderr}"
        );
    }
    assert!(!dir.path().join("x.obs").exists());
}

/// `OBSCURA_BACKEND` picks the kernels' backend (the bench report names it, and the records
/// still come back exactly); a name that is no backend, or one this CPU cannot run, is refused
/// with exit status 2 before anything is read.
#[test]
fn the_backend_is_forced_by_the_environment_and_a_bad_one_is_refused_first() {
    let bench = |backend: &str| {
        obscura()
            .env("OBSCURA_BACKEND", backend)
            .args([
                "bench",
                "simple-1g",
                "--records",
                "3000",
                "--record-bytes",
                "100",
                "--json",
            ])
            .output()
            .unwrap()
    };
    let portable = bench("portable");
    assert!(
        portable.status.success(),
        "{}",
        String::from_utf8_lossy(&portable.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&portable.stdout).unwrap();
    assert_eq!(report["backend"], "portable");
    assert_eq!(report["correct"], true);

    let refused = |backend: &str, message: &str| {
        let output = obscura()
            .env("OBSCURA_BACKEND", backend)
            .args(["get", "--db", "/nonexistent/db.obs", "--index", "0"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{backend}: {stderr}");
        assert!(stderr.starts_with("error: OBSCURA_BACKEND="), "{stderr}");
        assert!(stderr.contains(message), "{stderr}");
        assert!(!stderr.contains("nonexistent"), "{stderr}");
    };
    refused(
        "sse9",
        "names no backend: expected portable, avx2 or avx512",
    );
    #[cfg(target_arch = "x86_64")]
    let avx512 = {
        use std::arch::is_x86_feature_detected as has;
        has!("avx2") && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl")
    };
    #[cfg(not(target_arch = "x86_64"))]
    let avx512 = false;
    if avx512 {
        let forced = bench("avx512");
        assert!(forced.status.success());
        let report: serde_json::Value = serde_json::from_slice(&forced.stdout).unwrap();
        assert_eq!(report["backend"], "avx512");
    } else {
        refused("avx512", "asks for features this CPU lacks");
    }
}

/// `obscura serve` in one process, `obscura get --server` in others: every record comes back
/// exactly (from an index and a DoublePIR database), and SIGTERM stops the server gracefully.
#[test]
fn serve_and_get_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let data = sample_data(25 * 9 - 4);
    let db = build(dir.path(), &data, 9, "square");
    let double = build_with(dir.path(), &data, 9, &["--scheme", "double"]);
    let server = Served::start(&[
        "--threads".as_ref(),
        "1".as_ref(),
        db.as_os_str(),
        double.as_os_str(),
    ]);
    let url = server.url.clone();
    let name = db.file_stem().unwrap().to_str().unwrap().to_string();
    let double_name = double.file_stem().unwrap().to_str().unwrap().to_string();
    let cache = dir.path().join("cache");
    let records = data.chunks(9).enumerate();
    for ((index, expected), name) in records.map(|r| (r, &name)).chain(
        data.chunks(9)
            .enumerate()
            .step_by(6)
            .map(|r| (r, &double_name)),
    ) {
        let out = dir.path().join("remote.bin");
        obscura()
            .args([
                "get",
                "--server",
                &url,
                "--db",
                name,
                "--index",
                &index.to_string(),
                "--out",
            ])
            .arg(&out)
            .arg("--cache-dir")
            .arg(&cache)
            .assert()
            .success();
        assert_eq!(std::fs::read(&out).unwrap(), expected, "{name} {index}");
    }
    let missing = obscura()
        .args([
            "get",
            "--server",
            &url,
            "--db",
            "nope",
            "--index",
            "0",
            "--cache-dir",
        ])
        .arg(&cache)
        .assert();
    assert_clean_failure(missing, "unknown database");
    let out_of_range = obscura()
        .args([
            "get",
            "--server",
            &url,
            "--db",
            &name,
            "--index",
            "25",
            "--cache-dir",
        ])
        .arg(&cache)
        .assert();
    assert_clean_failure(out_of_range, "out of range");

    let (stopped_cleanly, rest) = server.terminate();
    assert!(stopped_cleanly);
    assert!(rest.iter().any(|l| l == "stopped"), "{rest:?}");

    let unreachable = obscura()
        .args([
            "get",
            "--server",
            &url,
            "--db",
            &name,
            "--index",
            "0",
            "--cache-dir",
        ])
        .arg(&cache)
        .assert();
    assert_clean_failure(unreachable, "cannot reach");
}

/// The service preset at a small size: four concurrency levels, every record checked.
#[test]
fn bench_service_reports_each_concurrency_level() {
    let report = bench_json(&["service", "--records", "500", "--record-bytes", "32"]);
    assert_eq!(report["correct"], true);
    let levels = report["service"].as_array().unwrap();
    let concurrency: Vec<u64> = levels
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(concurrency, [1, 4, 16, 64]);
    for level in levels {
        assert!(level["queries_per_second"].as_f64().unwrap() > 0.0);
        assert!(level["p99_ms"].as_f64().unwrap() >= level["p50_ms"].as_f64().unwrap());
    }
}

/// The sharded service preset at a small size: the database served directly and through a
/// gateway over four shards at each concurrency level, every record checked both ways.
#[test]
fn bench_service_sharded_reports_both_ways() {
    let report = bench_json(&[
        "service-sharded",
        "--records",
        "2000",
        "--record-bytes",
        "32",
    ]);
    assert_eq!(report["correct"], true);
    for key in ["service", "service_sharded"] {
        let levels = report[key].as_array().unwrap();
        let concurrency: Vec<u64> = levels
            .iter()
            .map(|l| l["concurrency"].as_u64().unwrap())
            .collect();
        assert_eq!(concurrency, [1, 8, 32], "{key}");
        for level in levels {
            assert!(level["queries_per_second"].as_f64().unwrap() > 0.0);
            assert!(level["cpu_ms_per_query"].as_f64().unwrap() > 0.0);
        }
    }
}

/// CSV and JSON-lines input: one record per row, made of the chosen columns, returned exactly.
#[test]
fn build_from_csv_and_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("people.csv");
    std::fs::write(
        &csv,
        "name,phone,city\nada,+44 20,\"London, UK\"\nbob,,Paris\nzoe,555,\n",
    )
    .unwrap();
    let jsonl = dir.path().join("keys.jsonl");
    std::fs::write(
        &jsonl,
        "{\"k\":\"a\",\"v\":1}\n\n{\"k\":\"bb\",\"v\":[2,3]}\n{\"k\":\"\",\"v\":null}\n",
    )
    .unwrap();
    let cases: Vec<(&std::path::Path, Vec<&str>, Vec<&str>)> = vec![
        (&csv, vec!["city"], vec!["London, UK", "Paris", ""]),
        (
            &csv,
            vec!["name", "city"],
            vec!["ada,\"London, UK\"", "bob,Paris", "zoe,"],
        ),
        (&jsonl, vec!["k"], vec!["a", "bb", ""]),
        (&jsonl, vec!["v"], vec!["1", "[2,3]", "null"]),
        (
            &jsonl,
            vec!["k", "v"],
            vec![
                "{\"k\":\"a\",\"v\":1}",
                "{\"k\":\"bb\",\"v\":[2,3]}",
                "{\"k\":\"\",\"v\":null}",
            ],
        ),
    ];
    for (input, columns, expected) in cases {
        let db = dir.path().join("table.obs");
        let mut build = obscura();
        build
            .args(["build", "--input"])
            .arg(input)
            .arg("--out")
            .arg(&db);
        for column in &columns {
            build.args(["--column", column]);
        }
        build.assert().success();
        for (index, value) in expected.iter().enumerate() {
            let out = dir.path().join("value.bin");
            obscura()
                .args(["get", "--db"])
                .arg(&db)
                .args(["--index", &index.to_string(), "--out"])
                .arg(&out)
                .assert()
                .success();
            assert_eq!(
                std::fs::read(&out).unwrap(),
                value.as_bytes(),
                "{columns:?} {index}"
            );
        }
    }
    let missing = obscura()
        .args(["build", "--input"])
        .arg(&csv)
        .args(["--column", "email", "--out"])
        .arg(dir.path().join("x.obs"))
        .assert();
    assert_clean_failure(
        missing,
        "no column \"email\" (columns: \"name\", \"phone\", \"city\")",
    );
    let no_column = obscura()
        .args(["build", "--input"])
        .arg(&jsonl)
        .args(["--out"])
        .arg(dir.path().join("x.obs"))
        .assert();
    assert_clean_failure(no_column, "--column");
    let bad_field = obscura()
        .args(["build", "--input"])
        .arg(&jsonl)
        .args(["--column", "zz", "--out"])
        .arg(dir.path().join("x.obs"))
        .assert();
    assert_clean_failure(bad_field, "line 1: no field \"zz\"");
}

/// A keyword database from CSV: present keys print their value, absent keys exit 3 with
/// "not found", locally and through a server.
#[test]
fn keyword_database_from_csv() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("phones.csv");
    let mut text = String::from("phone,name,city\n");
    for i in 0..40 {
        text.push_str(&format!(
            "+1555{i:04},person {i},{}\n",
            if i % 3 == 0 { "" } else { "Springfield" }
        ));
    }
    std::fs::write(&csv, text).unwrap();
    let db = dir.path().join("phones.obs");
    obscura()
        .args(["build", "--input"])
        .arg(&csv)
        .args([
            "--key-column",
            "phone",
            "--value-column",
            "name",
            "--value-column",
            "city",
            "--arity",
            "4",
            "--out",
        ])
        .arg(&db)
        .assert()
        .success();
    let get = |extra: &[&str], key: &str| {
        let out = dir.path().join("value.bin");
        let _ = std::fs::remove_file(&out);
        let assert = obscura()
            .args(["get", "--key", key])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .assert();
        (assert, std::fs::read(&out).ok())
    };
    let local = ["--db", db.to_str().unwrap()];
    for i in [0, 7, 39] {
        let (assert, value) = get(&local, &format!("+1555{i:04}"));
        assert.success();
        let city = if i % 3 == 0 { "" } else { "Springfield" };
        assert_eq!(value.unwrap(), format!("person {i},{city}").into_bytes());
    }
    let (assert, value) = get(&local, "+15559999");
    assert.code(3).stderr(predicate::str::contains("not found"));
    assert!(value.is_none());
    let wrong = obscura()
        .args(["get", "--db"])
        .arg(&db)
        .args(["--index", "0"])
        .assert();
    assert_clean_failure(wrong, "keyword database: fetch with --key");

    let server = Served::start(&[db.as_os_str()]);
    let url = server.url.clone();
    let cache = dir.path().join("cache");
    let remote = [
        "--server",
        &url,
        "--db",
        "phones",
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    let (assert, value) = get(&remote, "+15550013");
    assert.success();
    assert_eq!(value.unwrap(), b"person 13,Springfield");
    let (assert, _) = get(&remote, "nobody");
    assert.code(3).stderr(predicate::str::contains("not found"));
    drop(server);
}

/// The chalamet preset at a small size: one report per arity, present and absent keys checked.
#[test]
fn bench_chalamet_reports_both_arities() {
    let reports = bench_json(&["chalamet", "--records", "300", "--record-bytes", "40"]);
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 2);
    for (report, arity) in reports.iter().zip([3, 4]) {
        assert_eq!(report["arity"], arity);
        assert_eq!(report["scheme"], "keyword");
        assert_eq!(report["correct"], true);
        assert!(report["seconds"]["filter_build"].as_f64().unwrap() > 0.0);
        assert_repeated(report);
    }
    let one = bench_json(&[
        "chalamet",
        "--records",
        "300",
        "--record-bytes",
        "40",
        "--arity",
        "4",
    ]);
    assert_eq!(one["arity"], 4);
}

/// psi-ecdh at a small size: both thread counts, the client's intersection checked against the
/// plain one, traffic of at least a group element per item each way.
#[test]
fn bench_psi_ecdh_checks_the_intersection() {
    let report = bench_json(&["psi-ecdh", "--records", "256", "--threads", "2"]);
    assert_eq!(report["preset"], "psi-ecdh");
    assert_eq!(report["records"], 256);
    assert_eq!(report["record_bytes"], 16);
    assert_eq!(report["threads"], 2);
    assert_eq!(report["correct"], true);
    assert_eq!(report["psi"]["protocol"], "ecdh");
    assert_eq!(report["psi"]["link"], "unlimited");
    assert_eq!(report["psi"]["shared"], 128);
    assert_eq!(report["psi"]["intersection"], 128);
    let runs = report["psi"]["runs"].as_array().unwrap();
    let threads: Vec<u64> = runs
        .iter()
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, [1, 2]);
    for run in runs {
        assert_eq!(run["correct"], true);
        assert_eq!(run["intersection"], 128);
        // 256 compressed ristretto points of 32 bytes at least, each way.
        for key in ["client_to_server", "server_to_client"] {
            let bytes = run["bytes"][key].as_u64().unwrap();
            assert!((256 * 32..256 * 200).contains(&bytes), "{key}: {bytes}");
        }
        let seconds = &run["seconds"];
        assert!(seconds["total"].as_f64().unwrap() > 0.0);
        assert!(seconds["client"].as_f64().unwrap() <= seconds["total"].as_f64().unwrap());
    }
    assert_eq!(report["seconds"], runs[1]["seconds"]);
    assert_eq!(report["bytes"], runs[1]["bytes"]);
}

/// psi-ecdh on a simulated 100 Mbps link: the same intersection, in no less time than its
/// traffic takes at that rate.
#[test]
fn bench_psi_on_a_limited_link() {
    let report = bench_json(&[
        "psi-ecdh",
        "--records",
        "2000",
        "--threads",
        "1",
        "--link",
        "100mbps,unlimited",
    ]);
    assert_eq!(report["correct"], true);
    let runs = report["psi"]["runs"].as_array().unwrap();
    let links: Vec<&str> = runs.iter().map(|r| r["link"].as_str().unwrap()).collect();
    assert_eq!(links, ["100mbps", "unlimited"]);
    let limited = &runs[0];
    assert_eq!(limited["intersection"], 1000);
    let bytes = limited["bytes"]["client_to_server"].as_u64().unwrap();
    let seconds = limited["seconds"]["total"].as_f64().unwrap();
    assert!(
        seconds >= bytes as f64 * 8.0 / 100e6,
        "{bytes} bytes in {seconds} s"
    );
}

/// psi-kkrt at a small size, one thread per party: the client's intersection checked.
#[test]
fn bench_psi_kkrt_checks_the_intersection() {
    let report = bench_json(&["psi-kkrt", "--records", "300", "--threads", "1"]);
    assert_eq!(report["correct"], true);
    assert_eq!(report["psi"]["protocol"], "kkrt");
    assert_eq!(report["psi"]["intersection"], 150);
    assert_eq!(report["psi"]["runs"].as_array().unwrap().len(), 1);
    assert!(report["bytes"]["client_to_server"].as_u64().unwrap() > 0);
    assert!(report["bytes"]["server_to_client"].as_u64().unwrap() > 0);
}

/// psi-rr22 at a small size on a simulated 100 Mbit/s link: the client's intersection checked
/// and the bits per item reported.
#[test]
fn bench_psi_rr22_checks_the_intersection() {
    let report = bench_json(&[
        "psi-rr22",
        "--records",
        "2000",
        "--threads",
        "1",
        "--link",
        "unlimited,100mbps",
    ]);
    assert_eq!(report["correct"], true);
    assert_eq!(report["psi"]["protocol"], "rr22");
    assert_eq!(report["psi"]["intersection"], 1000);
    let runs = report["psi"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["link"], "100mbps");
    let bits = report["psi"]["bits_per_item"].as_f64().unwrap();
    let bytes = report["bytes"]["client_to_server"].as_u64().unwrap()
        + report["bytes"]["server_to_client"].as_u64().unwrap();
    assert_eq!(bits, bytes as f64 * 8.0 / 2000.0);
}

/// treepir-setup at small heights: the indexing checked against the class lists and the
/// baseline's assignments against its buckets, and a height beyond the colouring refused.
#[test]
fn bench_treepir_setup_checks_the_indexing() {
    let report = bench_json(&["treepir-setup", "--heights", "8,10"]);
    assert_eq!(report["preset"], "treepir-setup");
    assert_eq!(report["correct"], true);
    let rows = report["treepir"]["setup"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, h) in rows.iter().zip([8u32, 10]) {
        assert_eq!(row["height"], h);
        assert_eq!(row["nodes"], (2u64 << h) - 2);
        assert_eq!(row["classes_checked"], true);
        assert_eq!(row["correct"], true);
        assert!(row["indexing_seconds"].as_f64().unwrap() > 0.0);
        assert_eq!(row["pbc"]["buckets"], (3 * h).div_ceil(2));
        assert!(row["pbc"]["setup_seconds"].as_f64().unwrap() > 0.0);
    }
    obscura()
        .args(["bench", "treepir-setup", "--heights", "40"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--heights"));
}

/// treepir-e2e at h = 8: every proof verified, TreePIR's storage exactly the tree and below the
/// baseline's, and less traffic.
#[test]
fn bench_treepir_e2e_retrieves_verified_proofs() {
    let report = bench_json(&["treepir-e2e", "--heights", "8"]);
    assert_eq!(report["preset"], "treepir-e2e");
    assert_eq!(report["correct"], true);
    let row = &report["treepir"]["e2e"][0];
    assert_eq!(row["height"], 8);
    assert_eq!(row["leaves"], 256);
    let (treepir, pbc) = (&row["treepir"], &row["pbc"]);
    assert_eq!(treepir["databases"], 8);
    assert_eq!(pbc["databases"], 12);
    let storage = |scheme: &serde_json::Value| scheme["bytes"]["storage"].as_u64().unwrap();
    assert_eq!(storage(treepir), ((2u64 << 8) - 2) * 32);
    assert!(storage(pbc) >= 3 * storage(treepir));
    let traffic = |scheme: &serde_json::Value| {
        scheme["bytes"]["query"].as_u64().unwrap() + scheme["bytes"]["answer"].as_u64().unwrap()
    };
    assert!(traffic(treepir) < traffic(pbc));
    for scheme in [treepir, pbc] {
        assert_eq!(
            scheme["proofs"].as_u64().unwrap() + scheme["unmatched"].as_u64().unwrap(),
            3
        );
        for key in [
            "setup",
            "query",
            "server_max",
            "server_total",
            "answer",
            "decode",
        ] {
            assert!(scheme["seconds"][key].as_f64().unwrap() > 0.0, "{key}");
        }
    }
}

/// The largest power of two below `n` (≥ 2): where RFC 6962 splits a tree of `n` leaves.
fn rfc_split(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// RFC 6962's tree head, by its recursive definition.
fn rfc_root(leaves: &[&[u8]]) -> [u8; 32] {
    use obscura_pir::batch::merkle::{leaf_hash, node_hash};
    match leaves.len() {
        1 => leaf_hash(leaves[0]),
        n => {
            let k = rfc_split(n);
            node_hash(&rfc_root(&leaves[..k]), &rfc_root(&leaves[k..]))
        }
    }
}

/// RFC 6962's audit path of leaf `m`, leaf to root, by its recursive definition.
fn rfc_path(m: usize, leaves: &[&[u8]]) -> Vec<[u8; 32]> {
    let n = leaves.len();
    if n == 1 {
        return Vec::new();
    }
    let k = rfc_split(n);
    let (mut path, sibling) = if m < k {
        (rfc_path(m, &leaves[..k]), rfc_root(&leaves[k..]))
    } else {
        (rfc_path(m - k, &leaves[k..]), rfc_root(&leaves[..k]))
    };
    path.push(sibling);
    path
}

fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The hashes `obscura merkle prove` printed between its path header and its root line.
fn printed_path(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .skip_while(|line| !line.starts_with("audit path"))
        .skip(1)
        .take_while(|line| !line.starts_with("root "))
        .map(str::to_string)
        .collect()
}

/// `obscura merkle build` from a file of lines (13 leaves) and of binary leaves; `obscura
/// merkle prove` from the file and, against `obscura serve`, from another process: the printed
/// paths and root are RFC 6962's, the leaf hash is given or fetched privately, and a wrong root
/// or leaf fails.
#[test]
fn merkle_build_serve_and_prove() {
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<String> = (0..13).map(|i| format!("certificate {i}")).collect();
    let leaves: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
    let root = hex(&rfc_root(&leaves));
    let input = dir.path().join("leaves.txt");
    std::fs::write(&input, texts.join("\n") + "\r\n").unwrap();
    let tree = dir.path().join("log.obs");
    obscura()
        .args(["merkle", "build", "--leaves"])
        .arg(&input)
        .arg("--out")
        .arg(&tree)
        .assert()
        .success()
        .stdout(predicate::str::contains("13 leaves, height 4"))
        .stdout(predicate::str::contains(&root));

    let prove = |source: &[&str], extra: &[&str]| {
        obscura()
            .args(["merkle", "prove"])
            .args(source)
            .args(extra)
            .assert()
    };
    let local = ["--db", tree.to_str().unwrap()];
    let expect_path = |assert: assert_cmd::assert::Assert, m: usize, origin: &str| {
        let output = assert
            .success()
            .stdout(predicate::str::contains(format!("root {root} (verified")))
            .stdout(predicate::str::contains(origin))
            .get_output()
            .stdout
            .clone();
        let path: Vec<String> = rfc_path(m, &leaves).iter().map(hex).collect();
        assert_eq!(printed_path(&output), path, "leaf {m}");
    };
    for m in [0usize, 5, 12] {
        expect_path(
            prove(&local, &["--leaf", &m.to_string()]),
            m,
            "fetched privately",
        );
    }
    let data = ["--leaf", "7", "--leaf-data", "certificate 7"];
    expect_path(prove(&local, &data), 7, "given");
    let wrong = prove(&local, &["--leaf", "7", "--leaf-data", "certificate 8"]);
    assert_clean_failure(wrong, "does not verify");
    let zeros = "0".repeat(64);
    let pinned = prove(&local, &["--leaf", "3", "--root", &zeros]);
    assert_clean_failure(pinned, "is not the expected");
    assert_clean_failure(prove(&local, &["--leaf", "13"]), "out of range");
    let get = obscura()
        .args(["get", "--db"])
        .arg(&tree)
        .args(["--index", "0"])
        .assert();
    assert_clean_failure(get, "is a Merkle tree");
    let index = build(dir.path(), &sample_data(640), 64, "square");
    let not_a_tree = "is not a Merkle tree (it is a database of kind index)";
    let local_index = ["--db", index.to_str().unwrap()];
    assert_clean_failure(prove(&local_index, &["--leaf", "0"]), not_a_tree);

    let server = Served::start(&[tree.as_os_str(), index.as_os_str()]);
    let url = server.url.clone();
    let cache = dir.path().join("cache");
    let remote = [
        "--server",
        &url,
        "--db",
        "log",
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    let pinned = ["--leaf", "12", "--root", &root];
    expect_path(prove(&remote, &pinned), 12, "fetched privately");
    let leaf_hash = hex(&obscura_pir::batch::merkle::leaf_hash(leaves[4]));
    let given = ["--leaf", "4", "--leaf-hash", &leaf_hash];
    expect_path(prove(&remote, &given), 4, "given");
    let pinned = prove(&remote, &["--leaf", "4", "--root", &zeros]);
    assert_clean_failure(pinned, "is not the expected");
    let missing = prove(&remote[..2], &["--db", "nope", "--leaf", "0"]);
    assert_clean_failure(missing, "unknown database");
    let index_name = index.file_stem().unwrap().to_str().unwrap();
    let remote_index = prove(&remote[..2], &["--db", index_name, "--leaf", "0"]);
    assert_clean_failure(remote_index, not_a_tree);
    let get = obscura()
        .arg("get")
        .args(remote)
        .args(["--index", "0"])
        .assert();
    assert_clean_failure(get, "is a Merkle tree");
    drop(server);

    // Fixed-size binary leaves.
    let binary = dir.path().join("leaves.bin");
    std::fs::write(&binary, sample_data(5 * 8)).unwrap();
    let chunks = sample_data(5 * 8);
    let chunks: Vec<&[u8]> = chunks.chunks(8).collect();
    let tree = dir.path().join("binary.obs");
    let build_binary = |size: &str| {
        obscura()
            .args(["merkle", "build", "--leaves"])
            .arg(&binary)
            .args(["--leaf-bytes", size, "--out"])
            .arg(&tree)
            .assert()
    };
    build_binary("8").success();
    let source = ["--db", tree.to_str().unwrap()];
    let output = prove(&source, &["--leaf", "4"])
        .success()
        .stdout(predicate::str::contains(hex(&rfc_root(&chunks))))
        .get_output()
        .stdout
        .clone();
    let path: Vec<String> = rfc_path(4, &chunks).iter().map(hex).collect();
    assert_eq!(printed_path(&output), path);
    assert_clean_failure(build_binary("7"), "not a multiple of --leaf-bytes 7");
}
