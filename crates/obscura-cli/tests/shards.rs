//! A sharded database as an operator makes it: planned, each shard built on its own, sealed,
//! the shards served over HTTP; their answers, combined as the plan says, retrieve the records
//! with the sealed setup, and a gateway over them serves the database as one, failing clearly
//! (never with a wrong answer) when a shard is out of reach or of another version.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use obscura_client::http::HttpClient;
use obscura_pir::lwe::{Client, LweShard, PublicSetup, ShardClient};
use obscura_pir::PirClient;
use obscura_store::shards::Manifest;
use predicates::prelude::*;

mod common;
use common::Served;

fn obscura() -> Command {
    Command::cargo_bin("obscura").unwrap()
}

/// Plans `input` (records of 40 bytes) in three shards with `extra` arguments, builds each,
/// seals them; returns the manifest's path and the shard files.
fn plan_build_seal(dir: &Path, input: &Path, extra: &[&str]) -> (PathBuf, Vec<PathBuf>) {
    let manifest = dir.join("db.shards.json");
    obscura()
        .args([
            "build",
            "--record-size",
            "40",
            "--plan-shards",
            "3",
            "--input",
        ])
        .arg(input)
        .arg("--out")
        .arg(&manifest)
        .args(extra)
        .assert()
        .success()
        .stdout(predicate::str::contains("in 3 shards"));
    let files: Vec<_> = (0..3).map(|i| dir.join(format!("db.{i}.obs"))).collect();
    build_shards(input, &manifest, &files);
    // Every shard is needed.
    obscura()
        .args(["shards", "seal"])
        .arg(&manifest)
        .args(&files[..2])
        .assert()
        .failure()
        .stderr(predicate::str::contains("shard 2 of 3 is missing"));
    obscura()
        .args(["shards", "seal"])
        .arg(&manifest)
        .args(&files)
        .assert()
        .success()
        .stdout(predicate::str::contains("sealed"));
    (manifest, files)
}

#[test]
fn shards_served_over_http_retrieve_the_records_with_the_sealed_setup_and_through_a_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..600u32 * 40).map(|i| (i * 7 + i / 40) as u8).collect();
    let input = dir.path().join("records.bin");
    std::fs::write(&input, &data).unwrap();
    for extra in [
        &["--split", "rows"][..],
        &["--split", "columns", "--matrix", "uniform", "--layout", "4"][..],
    ] {
        let (manifest, files) = plan_build_seal(dir.path(), &input, extra);
        // A shard is not a database to fetch records from.
        obscura()
            .args(["get", "--index", "3", "--db"])
            .arg(&files[0])
            .assert()
            .failure()
            .stderr(predicate::str::contains("a shard of a database"));
        // A plan refuses input of another shape.
        obscura()
            .args(["build", "--record-size", "20", "--shard", "0/3", "--input"])
            .arg(&input)
            .arg("--manifest")
            .arg(&manifest)
            .arg("--out")
            .arg(dir.path().join("wrong.obs"))
            .assert()
            .failure()
            .stderr(predicate::str::contains("is not the input"));

        let sealed = Manifest::read(&manifest).unwrap();
        let plan = sealed.plan().clone();
        let setup = std::fs::read(Manifest::setup_path(&manifest)).unwrap();
        let setup = PublicSetup::from_bytes(&setup).unwrap();
        let served = serve_files(&files);
        let http = HttpClient::new(&served.url, None);
        let shards: Vec<(String, ShardClient)> = (0..3)
            .map(|i| {
                let name = format!("db.{i}");
                let setup = http.setup::<LweShard>(&name).unwrap();
                assert_eq!(setup.index(), i);
                (name, ShardClient::new(setup))
            })
            .collect();
        let mut client = Client::new(setup.clone());
        for index in [0u64, 1, 299, 599] {
            let (query, state) = client.query(index).unwrap();
            let answers: Vec<Vec<u32>> = shards
                .iter()
                .map(|(name, shard)| {
                    let mut shard = ShardClient::new(shard.setup().clone());
                    let part = plan
                        .query_part(shard.setup().index(), query.values())
                        .unwrap();
                    let (part, ()) = shard.query(part).unwrap();
                    let answer = http.query::<LweShard>(name, shard.setup(), &part).unwrap();
                    shard.decode((), &answer).unwrap()
                })
                .collect();
            let answer = plan.answer(&setup, &answers).unwrap();
            let start = index as usize * 40;
            assert_eq!(
                client.decode(state, &answer).unwrap(),
                &data[start..start + 40],
                "record {index}"
            );
        }
        // A gateway over them serves the records to any client, as one database.
        let gateway = start_gateway(&manifest, &[served.url.as_str(); 3], &[]);
        for index in [2u64, 598] {
            get(&gateway.url, index)
                .success()
                .stdout(hex_record(&data, index));
        }
    }
}

/// Writes `data` (records of 40 bytes) in `dir` and plans, builds and seals it in three shards
/// by rows: the input's, the manifest's and the shards' paths.
fn sealed_by_rows(dir: &Path, data: &[u8]) -> (PathBuf, PathBuf, Vec<PathBuf>) {
    let input = dir.join("records.bin");
    std::fs::write(&input, data).unwrap();
    let (manifest, files) = plan_build_seal(dir, &input, &["--split", "rows"]);
    (input, manifest, files)
}

/// Builds shard `i` of the 3 that `manifest` plans from `input` into `files[i]`, for each.
fn build_shards(input: &Path, manifest: &Path, files: &[PathBuf]) {
    for (i, file) in files.iter().enumerate() {
        obscura()
            .args([
                "build",
                "--record-size",
                "40",
                "--shard",
                &format!("{i}/3"),
                "--input",
            ])
            .arg(input)
            .arg("--manifest")
            .arg(manifest)
            .arg("--out")
            .arg(file)
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("shard {i} of 3")));
    }
}

/// `obscura serve` of `files`.
fn serve_files(files: &[PathBuf]) -> Served {
    let args: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    Served::start(&args)
}

/// `obscura serve --gateway MANIFEST`, shard `i` served at `servers[i]` (replicas' URLs joined
/// by commas), with `extra` arguments.
fn start_gateway(manifest: &Path, servers: &[&str], extra: &[&std::ffi::OsStr]) -> Served {
    let mut args: Vec<std::ffi::OsString> = vec!["--gateway".into(), manifest.into()];
    for (i, urls) in servers.iter().enumerate() {
        args.extend(["--shard".into(), format!("{i}={urls}").into()]);
    }
    args.extend(extra.iter().map(|a| a.to_os_string()));
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    Served::start(&args)
}

/// `obscura get --server URL --db db --index INDEX --hex`.
fn get(url: &str, index: u64) -> assert_cmd::assert::Assert {
    obscura()
        .args(["get", "--hex", "--server", url, "--db", "db", "--index"])
        .arg(index.to_string())
        .env_remove("OBSCURA_TOKEN")
        .assert()
}

/// Record `index` of `data` (records of 40 bytes) as `obscura get --hex` prints it.
fn hex_record(data: &[u8], index: u64) -> String {
    let start = index as usize * 40;
    let hex: String = data[start..start + 40]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    hex + "\n"
}

/// The body of `GET path` from the server at `url` (plain HTTP).
fn http_get(url: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address_of(url)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// The `host:port` of a server's URL.
fn address_of(url: &str) -> &str {
    url.trim_start_matches("http://")
}

/// The URL of `served` with its port, as a listen address for a server started again there.
fn address(served: &Served) -> String {
    address_of(&served.url).to_string()
}

#[test]
fn a_gateway_serves_the_shards_as_one_database_and_never_answers_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..600u32 * 40).map(|i| (i * 13 + i / 40) as u8).collect();
    let (input, manifest, files) = sealed_by_rows(dir.path(), &data);

    // Shards 0 and 1 on one server, shard 2 on two replicas.
    let first = serve_files(&files[..2]);
    let mut replica = serve_files(&files[2..]);
    let other = serve_files(&files[2..]);
    let replicas = format!("{},{}", replica.url, other.url);
    let gateway = start_gateway(&manifest, &[first.url.as_str(), &first.url, &replicas], &[]);
    for index in [0u64, 17, 300, 599] {
        get(&gateway.url, index)
            .success()
            .stdout(hex_record(&data, index));
    }

    // A replica down: the other answers; both down: 503 naming the shard, never an answer.
    let replica_at = address(&replica);
    replica.child.kill().unwrap();
    replica.child.wait().unwrap();
    get(&gateway.url, 451)
        .success()
        .stdout(hex_record(&data, 451));
    drop(other);
    get(&gateway.url, 451)
        .failure()
        .stderr(predicate::str::contains("503").and(predicate::str::contains("shard 2 of 3")));
    // A replica that comes back is used again.
    let _back = Served::start_at(&replica_at, &[files[2].as_os_str()]);
    get(&gateway.url, 452)
        .success()
        .stdout(hex_record(&data, 452));
    // The gateway's metrics count each shard's requests and failures.
    let metrics = http_get(&gateway.url, "/metrics");
    for line in [
        "obscura_shard_requests_total{database=\"db\",shard=\"0\"} 7",
        "obscura_shard_requests_total{database=\"db\",shard=\"2\"} 7",
        "obscura_shard_errors_total{database=\"db\",shard=\"0\"} 0",
        "obscura_shard_errors_total{database=\"db\",shard=\"2\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }

    // A server holding another version of shard 1 is refused, not used.
    let first_at = address(&first);
    drop(first);
    let stranger_dir = dir.path().join("stranger");
    std::fs::create_dir(&stranger_dir).unwrap();
    let (_, strangers) = plan_build_seal(&stranger_dir, &input, &["--split", "rows"]);
    let _mixed = Served::start_at(&first_at, &[files[0].as_os_str(), strangers[1].as_os_str()]);
    get(&gateway.url, 3).failure().stderr(
        predicate::str::contains("shard 1 of 3").and(predicate::str::contains("another version")),
    );

    // A manifest that was never sealed is not served.
    let unsealed = dir.path().join("unsealed.json");
    obscura()
        .args([
            "build",
            "--record-size",
            "40",
            "--plan-shards",
            "2",
            "--input",
        ])
        .arg(&input)
        .arg("--out")
        .arg(&unsealed)
        .assert()
        .success();
    obscura()
        .args(["serve", "--listen", "127.0.0.1:0", "--gateway"])
        .arg(&unsealed)
        .args([
            "--shard",
            "0=http://127.0.0.1:9",
            "--shard",
            "1=http://127.0.0.1:9",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("not sealed"));
}

#[test]
fn a_gateway_reaches_its_shards_over_tls_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..600u32 * 40).map(|i| (i * 3 + i / 40) as u8).collect();
    let (_, manifest, files) = sealed_by_rows(dir.path(), &data);
    let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let (cert, private) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, key.cert.pem()).unwrap();
    std::fs::write(&private, key.signing_key.serialize_pem()).unwrap();
    let tokens = dir.path().join("tokens.txt");
    std::fs::write(&tokens, "* shard-secret-of-the-gateway\n").unwrap();
    let token = dir.path().join("token.txt");
    std::fs::write(&token, "shard-secret-of-the-gateway\n").unwrap();
    let mut shard_args: Vec<std::ffi::OsString> = files.iter().map(|f| f.clone().into()).collect();
    for flag in [
        ("--tls-cert", &cert),
        ("--tls-key", &private),
        ("--tokens", &tokens),
    ] {
        shard_args.extend([flag.0.into(), flag.1.clone().into()]);
    }
    let args: Vec<&std::ffi::OsStr> = shard_args.iter().map(|a| a.as_os_str()).collect();
    let shards = Served::start(&args);
    assert!(shards.url.starts_with("https://"), "{}", shards.url);
    let trusted = ["--shard-ca-cert".as_ref(), cert.as_os_str()];
    let with_token = [
        &trusted[..],
        &["--shard-token-file".as_ref(), token.as_os_str()],
    ]
    .concat();
    let gateway = start_gateway(&manifest, &[shards.url.as_str(); 3], &with_token);
    get(&gateway.url, 123)
        .success()
        .stdout(hex_record(&data, 123));
    // Without the token the shards refuse the gateway, and it says so.
    let untrusted = start_gateway(&manifest, &[shards.url.as_str(); 3], &trusted);
    get(&untrusted.url, 123)
        .failure()
        .stderr(predicate::str::contains("503").and(predicate::str::contains("token")));
}

#[test]
fn a_gateway_serves_a_new_seal_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let old: Vec<u8> = (0..600u32 * 40).map(|i| (i * 5 + 1) as u8).collect();
    let (input, manifest, files) = sealed_by_rows(dir.path(), &old);
    let mut shards = serve_files(&files);
    shards.drain_stderr();
    let mut gateway = start_gateway(&manifest, &[shards.url.as_str(); 3], &[]);
    gateway.drain_stderr();
    get(&gateway.url, 42).success().stdout(hex_record(&old, 42));

    // New records of the same shape: the shards rebuilt from the same plan, sealed again.
    let new: Vec<u8> = old.iter().map(|b| b ^ 0x5a).collect();
    std::fs::write(&input, &new).unwrap();
    build_shards(&input, &manifest, &files);
    obscura()
        .args(["shards", "seal"])
        .arg(&manifest)
        .args(&files)
        .assert()
        .success();
    // The shards serve the new version before the gateway reads the new seal: its queries
    // are refused then, never answered with a mix.
    shards.signal("HUP");
    let refused = || {
        let output = get(&gateway.url, 42).get_output().clone();
        !output.status.success() && String::from_utf8_lossy(&output.stderr).contains("503")
    };
    wait_until(refused);
    gateway.signal("HUP");
    let answered = || {
        let output = get(&gateway.url, 42).get_output().clone();
        output.status.success() && output.stdout == hex_record(&new, 42).as_bytes()
    };
    wait_until(answered);
    get(&gateway.url, 599)
        .success()
        .stdout(hex_record(&new, 599));
}

/// Waits up to 20 s for `done`.
fn wait_until(mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(started.elapsed().as_secs() < 20, "not done after 20 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_shard_that_never_answers_is_a_503_within_the_request_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..600u32 * 40).map(|i| (i * 11) as u8).collect();
    let (_, manifest, files) = sealed_by_rows(dir.path(), &data);
    let shards = serve_files(&files[..2]);
    // A server that takes connections and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(8).collect();
        std::thread::sleep(std::time::Duration::from_secs(60));
        drop(held);
    });
    let servers = [&shards.url[..], &shards.url, &silent_url];
    let gateway = start_gateway(
        &manifest,
        &servers,
        &["--timeout-secs".as_ref(), "2".as_ref()],
    );
    let started = std::time::Instant::now();
    get(&gateway.url, 7)
        .failure()
        .stderr(predicate::str::contains("503").and(predicate::str::contains("shard 2 of 3")));
    assert!(
        started.elapsed().as_secs_f64() < 2.0,
        "{:?}",
        started.elapsed()
    );
}
