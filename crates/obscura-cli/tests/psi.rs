//! `obscura psi` as two users run it: two processes on loopback.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use assert_cmd::cargo::cargo_bin;

/// A port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `obscura psi --protocol ecdh` with `args`, the input and output files, and (unless `args`
/// sets them) `--column email --timeout 30`.
fn psi(args: &[&str], input: &Path, output: Option<&Path>) -> Command {
    psi_with("ecdh", args, input, output)
}

/// [`psi`] with another protocol.
fn psi_with(protocol: &str, args: &[&str], input: &Path, output: Option<&Path>) -> Command {
    let mut command = Command::new(cargo_bin("obscura"));
    command.args(["psi", "--protocol", protocol]).args(args);
    for (option, default) in [("--column", "email"), ("--timeout", "30")] {
        if !args.contains(&option) {
            command.args([option, default]);
        }
    }
    command.arg("--input").arg(input);
    if let Some(output) = output {
        command.arg("--output").arg(output);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_success(output: &Output, who: &str) {
    assert!(
        output.status.success(),
        "{who} failed: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

const CLIENT_CSV: &str = "\
id,email,name
1,ann@example.com,\"Smith, Ann\"
2,bob@example.com,Bob
3,cid@example.com,Cid
4,ann@example.com,Ann again
5,dee@example.com,Dee
";

const SERVER_CSV: &str = "\
email,since
eve@example.com,2019
dee@example.com,2020
ann@example.com,2021
fay@example.com,2022
dee@example.com,2023
";

/// How the two processes reach each other.
#[derive(Clone, Copy)]
enum Link<'a> {
    /// The server listens on a free local port, the client connects.
    Tcp,
    /// Both exchange files in this folder.
    Mailbox(&'a Path),
}

impl Link<'_> {
    /// The arguments of both sides' link: `(server, client)`.
    fn args(self) -> (Vec<String>, Vec<String>) {
        match self {
            Link::Tcp => {
                let address = format!("127.0.0.1:{}", free_port());
                (
                    vec!["--listen".into(), address.clone()],
                    vec!["--connect".into(), address],
                )
            }
            Link::Mailbox(folder) => {
                let args = vec![
                    "--mailbox".into(),
                    folder.to_str().unwrap().into(),
                    "--session".into(),
                    "test-run".into(),
                ];
                (args.clone(), args)
            }
        }
    }
}

/// Runs a client and a server of `protocol` on the CSV files above. The server starts first or
/// second: the client retries its connection either way.
fn run_pair(protocol: &str, dir: &Path, both_learn: bool, server_first: bool) -> (Output, Output) {
    run_pair_over(Link::Tcp, protocol, dir, both_learn, server_first)
}

/// [`run_pair`] over `link`.
fn run_pair_over(
    link: Link<'_>,
    protocol: &str,
    dir: &Path,
    both_learn: bool,
    server_first: bool,
) -> (Output, Output) {
    let (server_link, client_link) = link.args();
    let (server_link, client_link): (Vec<&str>, Vec<&str>) = (
        server_link.iter().map(String::as_str).collect(),
        client_link.iter().map(String::as_str).collect(),
    );
    let client_input = write(dir, "client.csv", CLIENT_CSV);
    let server_input = write(dir, "server.csv", SERVER_CSV);
    let learn: &[&str] = if both_learn { &["--both-learn"] } else { &[] };
    let server_output = both_learn.then(|| dir.join("server-out.csv"));
    let mut server = psi_with(
        protocol,
        &[&["--role", "server"], &server_link[..], learn].concat(),
        &server_input,
        server_output.as_deref(),
    );
    let mut client = psi_with(
        protocol,
        &[&["--role", "client"], &client_link[..], learn].concat(),
        &client_input,
        Some(&dir.join("client-out.csv")),
    );
    let (server, client) = if server_first {
        let server = server.spawn().unwrap();
        let client = client.spawn().unwrap();
        (server, client)
    } else {
        let client = client.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        (server.spawn().unwrap(), client)
    };
    (
        client.wait_with_output().unwrap(),
        server.wait_with_output().unwrap(),
    )
}

#[test]
fn two_processes_find_the_overlap() {
    check_overlap("ecdh");
}

#[test]
fn two_kkrt_processes_find_the_overlap() {
    check_overlap("kkrt");
}

#[test]
fn two_rr22_processes_find_the_overlap() {
    check_overlap("rr22");
}

#[test]
fn two_rr22_malicious_processes_find_the_overlap() {
    check_overlap("rr22-malicious");
}

/// The malicious mode gives the intersection to the client only: asking for both is refused at
/// once, before the server listens.
#[test]
fn rr22_malicious_refuses_both_learn() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "server.csv", SERVER_CSV);
    let address = format!("127.0.0.1:{}", free_port());
    let output = psi_with(
        "rr22-malicious",
        &["--role", "server", "--listen", &address, "--both-learn"],
        &input,
        Some(&dir.path().join("out.csv")),
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let error = text(&output.stderr);
    assert!(
        error.contains("rr22-malicious does not offer an intersection for the server"),
        "{error}"
    );
}

/// Two processes running `protocol`, only the client learning: the client's output holds its
/// matching rows and both summaries tell what happened.
fn check_overlap(protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = run_pair(protocol, dir.path(), false, true);
    check_overlap_outputs(dir.path(), &client, &server);
}

/// Every protocol through a mailbox folder instead of a connection, the client started first:
/// the same rows as over TCP, and nothing but the two parties' locks left in the folder.
#[test]
fn every_protocol_runs_through_a_mailbox_folder() {
    for protocol in ["ecdh", "kkrt", "rr22", "rr22-malicious"] {
        let dir = tempfile::tempdir().unwrap();
        let mailbox = dir.path().join("mailbox");
        std::fs::create_dir(&mailbox).unwrap();
        let (client, server) =
            run_pair_over(Link::Mailbox(&mailbox), protocol, dir.path(), false, false);
        check_overlap_outputs(dir.path(), &client, &server);
        let mut left: Vec<String> = std::fs::read_dir(&mailbox)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["test-run.a1.client.lock", "test-run.a1.server.lock"]);
        // The attempt ran: running it again is refused.
        let again = psi_with(
            protocol,
            &[
                "--role",
                "server",
                "--mailbox",
                mailbox.to_str().unwrap(),
                "--session",
                "test-run",
            ],
            &dir.path().join("server.csv"),
            None,
        )
        .output()
        .unwrap();
        assert_clean_failure(&again, "start attempt 2 on both sides");
    }
}

/// The client's output and both summaries of a client-learns run on the CSV files above.
fn check_overlap_outputs(dir: &Path, client: &Output, server: &Output) {
    assert_success(client, "client");
    assert_success(server, "server");
    assert_eq!(
        std::fs::read_to_string(dir.join("client-out.csv")).unwrap(),
        "id,email,name\n1,ann@example.com,\"Smith, Ann\"\n4,ann@example.com,Ann again\n5,dee@example.com,Dee\n"
    );
    let summary = text(&client.stdout);
    assert!(
        summary
            .contains("5 items read, 1 duplicates dropped, 4 unique; the peer has 4 unique items"),
        "{summary}"
    );
    assert!(
        summary.contains("intersection: 2 items (3 input rows)"),
        "{summary}"
    );
    assert!(
        summary.contains("sent") && summary.contains("received"),
        "{summary}"
    );
    let summary = text(&server.stdout);
    assert!(
        summary
            .contains("5 items read, 1 duplicates dropped, 4 unique; the peer has 4 unique items"),
        "{summary}"
    );
    assert!(
        summary.contains("intersection: learned by the client only"),
        "{summary}"
    );
}

#[test]
fn both_learn_writes_both_outputs_in_either_start_order() {
    check_both_learn("ecdh");
}

#[test]
fn kkrt_both_learn_writes_both_outputs() {
    check_both_learn("kkrt");
}

#[test]
fn rr22_both_learn_writes_both_outputs() {
    check_both_learn("rr22");
}

/// Two processes running `protocol`, both learning, the client started first.
fn check_both_learn(protocol: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (client, server) = run_pair(protocol, dir.path(), true, false);
    assert_success(&client, "client");
    assert_success(&server, "server");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("server-out.csv")).unwrap(),
        "email,since\ndee@example.com,2020\nann@example.com,2021\ndee@example.com,2023\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("client-out.csv"))
            .unwrap()
            .lines()
            .count(),
        4
    );
    assert!(text(&server.stdout).contains("intersection: 2 items (3 input rows)"));
}

fn assert_clean_failure(output: &Output, message: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: ") || stderr.contains("\nerror: "),
        "{stderr}"
    );
    assert!(stderr.contains(message), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_client_without_a_peer_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "client.csv", CLIENT_CSV);
    let port = free_port();
    let output = psi(
        &[
            "--role",
            "client",
            "--connect",
            &format!("127.0.0.1:{port}"),
            "--timeout",
            "1",
        ],
        &input,
        None,
    )
    .output()
    .unwrap();
    assert_clean_failure(
        &output,
        &format!("cannot connect to 127.0.0.1:{port} within 1s"),
    );
}

#[test]
fn bad_settings_get_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "server.csv", SERVER_CSV);
    let output = psi(
        &[
            "--role",
            "client",
            "--connect",
            "127.0.0.1:1",
            "--column",
            "nope",
        ],
        &input,
        None,
    )
    .output()
    .unwrap();
    assert_clean_failure(&output, "no column \"nope\"");
}

#[test]
fn bucketed_processes_find_the_overlap() {
    check_bucketed("ecdh", true);
}

#[test]
fn bucketed_rr22_processes_find_the_overlap() {
    check_bucketed("rr22", true);
}

#[test]
fn bucketed_rr22_malicious_processes_find_the_overlap() {
    check_bucketed("rr22-malicious", false);
}

/// Streamed through buckets on disk (`--bucket-items`), with both learning if `both_learn`:
/// each side that learns writes exactly its rows whose item the other holds, in input order.
fn check_bucketed(protocol: &str, both_learn: bool) {
    check_bucketed_over(Link::Tcp, protocol, both_learn)
}

/// A bucketed session through a mailbox folder: its frames are named by bucket, and it finds
/// the same rows.
#[test]
fn bucketed_rr22_runs_through_a_mailbox_folder() {
    let folder = tempfile::tempdir().unwrap();
    check_bucketed_over(Link::Mailbox(folder.path()), "rr22", true);
}

/// [`check_bucketed`] over `link`.
fn check_bucketed_over(link: Link<'_>, protocol: &str, both_learn: bool) {
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    let csv =
        |rows: &mut dyn Iterator<Item = String>| format!("email\n{}", rows.collect::<String>());
    let client_rows: Vec<String> = (0..300)
        .map(|i| format!("user{}@example.com\n", i * 2))
        .chain(["user12@example.com\n".to_string()]) // a duplicate row of a shared item
        .collect();
    let server_rows: Vec<String> = (0..200)
        .map(|i| format!("user{}@example.com\n", i * 3))
        .collect();
    let client_input = write(
        dir.path(),
        "client.csv",
        &csv(&mut client_rows.iter().cloned()),
    );
    let server_input = write(
        dir.path(),
        "server.csv",
        &csv(&mut server_rows.iter().cloned()),
    );
    let (server_link, client_link) = link.args();
    let (server_link, client_link): (Vec<&str>, Vec<&str>) = (
        server_link.iter().map(String::as_str).collect(),
        client_link.iter().map(String::as_str).collect(),
    );
    let spill_dir = spill.to_str().unwrap();
    let learn: &[&str] = if both_learn { &["--both-learn"] } else { &[] };
    let bucketed = [
        &["--bucket-items", "40", "--spill-dir", spill_dir][..],
        learn,
    ]
    .concat();
    let server_output = both_learn.then(|| dir.path().join("server-out.csv"));
    let server = psi_with(
        protocol,
        &[&["--role", "server"], &server_link[..], &bucketed[..]].concat(),
        &server_input,
        server_output.as_deref(),
    )
    .spawn()
    .unwrap();
    let client = psi_with(
        protocol,
        &[&["--role", "client"], &client_link[..], &bucketed[..]].concat(),
        &client_input,
        Some(&dir.path().join("client-out.csv")),
    )
    .output()
    .unwrap();
    let server = server.wait_with_output().unwrap();
    assert_success(&client, "client");
    assert_success(&server, "server");
    let shared = |ours: &[String], theirs: &[String]| {
        csv(&mut ours.iter().filter(|row| theirs.contains(row)).cloned())
    };
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("client-out.csv"), shared(&client_rows, &server_rows));
    if both_learn {
        assert_eq!(read("server-out.csv"), shared(&server_rows, &client_rows));
    }
    let summary = text(&client.stdout);
    assert!(summary.contains("in 8 buckets"), "{summary}");
    assert!(
        summary.contains("intersection: 100 items (101 input rows)"),
        "{summary}"
    );
    assert_eq!(
        std::fs::read_dir(&spill).unwrap().count(),
        0,
        "bucket files left"
    );
}

/// A server whose client never comes gives up after `--timeout`, with a one-line error, well
/// before anything else would stop it.
#[test]
fn a_server_without_a_client_stops_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "server.csv", SERVER_CSV);
    let address = format!("127.0.0.1:{}", free_port());
    let mut server = psi(
        &["--role", "server", "--listen", &address, "--timeout", "1"],
        &input,
        None,
    )
    .spawn()
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            server.kill().unwrap();
            panic!("the server still waits for a client 30 s after a 1 s --timeout");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = server.wait_with_output().unwrap();
    assert_clean_failure(
        &output,
        &format!("no client connected to {address} within 1s (--timeout)"),
    );
}

/// One party's protocol and arguments besides its role and address.
type Side<'a> = (&'a str, &'a [&'a str]);

/// Runs a server and a client with their settings and returns their outputs.
fn run_mismatched(
    dir: &Path,
    (server_protocol, server_args): Side,
    (client_protocol, client_args): Side,
) -> (Output, Output) {
    let server_input = write(dir, "server.csv", SERVER_CSV);
    let client_input = write(dir, "client.csv", CLIENT_CSV);
    let address = format!("127.0.0.1:{}", free_port());
    let server = psi_with(
        server_protocol,
        &[&["--role", "server", "--listen", &address], server_args].concat(),
        &server_input,
        None,
    )
    .spawn()
    .unwrap();
    let client = psi_with(
        client_protocol,
        &[&["--role", "client", "--connect", &address], client_args].concat(),
        &client_input,
        None,
    )
    .output()
    .unwrap();
    (server.wait_with_output().unwrap(), client)
}

/// Settings that must match on both sides are named once, by flag and by the side that passes
/// them, on both sides.
#[test]
fn mismatched_settings_name_the_flag_and_the_side() {
    let dir = tempfile::tempdir().unwrap();
    let bucketed: &[&str] = &["--bucket-items", "5"];
    let cases: [(Side, Side, [&str; 2]); 4] = [
        (
            ("kkrt", &[]),
            ("ecdh", &[]),
            [
                "--protocol differs: this server runs kkrt, the client runs ecdh; pass the same --protocol on both sides",
                "--protocol differs: this client runs ecdh, the server runs kkrt; pass the same --protocol on both sides",
            ],
        ),
        (
            ("ecdh", &["--both-learn"]),
            ("ecdh", &[]),
            ["--both-learn is given on the server only: pass it on both sides or on neither"; 2],
        ),
        (
            ("ecdh", &[]),
            ("ecdh", bucketed),
            ["--bucket-items is given on the client only: pass the same value on both sides or on neither"; 2],
        ),
        (
            ("ecdh", &["--bucket-items", "3"]),
            ("ecdh", bucketed),
            [
                "--bucket-items differs: this server passes 3, the client 5; pass the same value on both sides",
                "--bucket-items differs: this client passes 5, the server 3; pass the same value on both sides",
            ],
        ),
    ];
    for (server_side, client_side, [server_message, client_message]) in cases {
        let (server, client) = run_mismatched(dir.path(), server_side, client_side);
        for (output, message) in [(server, server_message), (client, client_message)] {
            assert_clean_failure(&output, message);
            let stderr = text(&output.stderr);
            let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
            assert_eq!(error, format!("error: {message}"));
        }
    }
}
