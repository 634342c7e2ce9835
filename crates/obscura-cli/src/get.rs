//! `obscura get`: one private retrieval by index or by key, from a database file or a server.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use obscura_client::blocking::Client;
use obscura_client::http::{default_cache_dir, ClientOptions, HttpClient};
use obscura_client::setup::{Sha256, DEFAULT_MAX_QUERY_BYTES, DEFAULT_MAX_SETUP_BYTES};
use obscura_client::ClientError;
use obscura_pir::{Lookup, PirError};
use obscura_service::tls;

/// Arguments of `obscura get`.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("target").required(true).args(["index", "key", "key_hex"]))]
pub struct GetArgs {
    /// The database: a file written by `obscura build`, or with `--server` a database name.
    #[arg(long)]
    db: String,
    /// Index of the record to fetch (from 0), in an index database.
    #[arg(long)]
    index: Option<u64>,
    /// Key whose value to fetch, in a keyword database.
    #[arg(long)]
    key: Option<String>,
    /// Key whose value to fetch, in a keyword database, given as hex: for keys whose bytes are
    /// not UTF-8 text.
    #[arg(long, value_parser = parse_hex_key)]
    key_hex: Option<KeyBytes>,
    #[command(flatten)]
    remote: ServerArgs,
    /// Write the raw record to this file instead of printing it.
    #[arg(long, conflicts_with = "hex")]
    out: Option<PathBuf>,
    /// Print the record in hex even when it is text (by default a record that is UTF-8 text
    /// is printed as it is, anything else in hex).
    #[arg(long)]
    hex: bool,
}

/// How `obscura get` and `obscura merkle prove` reach a server and verify what it sends.
#[derive(Args)]
pub struct ServerArgs {
    /// Fetch from this server (e.g. http://127.0.0.1:8080) instead of a local file.
    #[arg(long)]
    pub server: Option<String>,
    /// Where public setups downloaded from servers are cached (default: the user's cache folder).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// The SHA-256 the database's public setup must have, in hex, as `obscura build` printed it
    /// ("setup sha256"): a setup with another one is refused and not cached. Without it the
    /// setup is checked against the server's ETag, which catches corruption but not a server or
    /// network that lies.
    #[arg(long, requires = "server", value_parser = parse_sha256)]
    pub setup_sha256: Option<Sha256>,
    /// The largest public setup accepted from the server, in bytes; a larger one is refused
    /// before it is read.
    #[arg(long, default_value_t = DEFAULT_MAX_SETUP_BYTES)]
    pub max_setup_bytes: u64,
    /// The largest query accepted to make, in bytes: a setup that asks for more is refused.
    #[arg(long, default_value_t = DEFAULT_MAX_QUERY_BYTES)]
    pub max_query_bytes: u64,
    /// Trust these certificates (PEM) as the roots for an https:// server, in place of the
    /// WebPKI roots (e.g. the server's self-signed certificate).
    #[arg(long, requires = "server")]
    pub ca_cert: Option<PathBuf>,
    /// Read the bearer token for the database from this file (its first line); the
    /// OBSCURA_TOKEN environment variable gives it too.
    #[arg(long, requires = "server")]
    pub token_file: Option<PathBuf>,
    /// Seconds each request to the server may take, from connecting to the last byte of its
    /// reply (the setup's download included).
    #[arg(long, requires = "server", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

impl ServerArgs {
    /// The client of `--server`, if given.
    pub fn client(&self) -> Result<Option<HttpClient>> {
        let Some(server) = &self.server else {
            return Ok(None);
        };
        let trusted_roots = self.ca_cert.as_deref().map(read_roots).transpose()?;
        let token = match &self.token_file {
            Some(path) => Some(read_token(path)?),
            None => std::env::var("OBSCURA_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
        };
        let options = ClientOptions {
            cache_dir: self.cache_dir.clone().or_else(default_cache_dir),
            setup_sha256: self.setup_sha256,
            max_setup_bytes: self.max_setup_bytes,
            max_query_bytes: self.max_query_bytes,
            token,
            trusted_roots,
            timeout: std::time::Duration::from_secs(self.timeout),
        };
        Ok(Some(HttpClient::with_options(server, options)))
    }
}

/// The certificates (DER) of the PEM file at `path`, to trust as roots for https:// servers.
pub fn read_roots(path: &Path) -> Result<Vec<Vec<u8>>> {
    let pem = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let roots = tls::certificates_from_pem(&pem, &path.display().to_string())?;
    Ok(roots.iter().map(|c| c.to_vec()).collect())
}

/// The bearer token on the first line of the file at `path`.
pub fn read_token(path: &Path) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    ensure!(
        !token.is_empty(),
        "{}: no token on its first line",
        path.display()
    );
    Ok(token)
}

/// Parses a SHA-256 hash written in hex.
pub fn parse_sha256(text: &str) -> Result<Sha256, String> {
    let bytes = hex::decode(text).map_err(|e| format!("not hex: {e}"))?;
    Sha256::try_from(bytes).map_err(|bytes| format!("{} bytes, not the 32 of a hash", bytes.len()))
}

/// The bytes of a key given in hex.
#[derive(Clone, Debug)]
pub struct KeyBytes(Vec<u8>);

/// Parses a key written in hex.
fn parse_hex_key(text: &str) -> Result<KeyBytes, String> {
    hex::decode(text)
        .map(KeyBytes)
        .map_err(|e| format!("not hex: {e}"))
}

/// A key that is not in the database or a record that was deleted: reported on stderr with its
/// own exit status.
#[derive(Debug)]
pub enum NotFound {
    /// The key.
    Key(Vec<u8>),
    /// The record's index.
    Record(u64),
}

/// Characters of a key echoed in messages; a longer key is cut.
const ECHOED_KEY_CHARS: usize = 64;

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Key(key) => write!(
                f,
                "not found: the key {} is not in the database",
                echo_key(key)
            ),
            Self::Record(index) => write!(f, "not found: record {index} was deleted"),
        }
    }
}

impl std::error::Error for NotFound {}

/// A key as messages show it: quoted, with escapes for non-printable characters and `\xNN` for
/// bytes that are not UTF-8, cut after [`ECHOED_KEY_CHARS`] characters (then its length).
fn echo_key(key: &[u8]) -> String {
    let mut pieces = Vec::new();
    for chunk in key.utf8_chunks() {
        pieces.extend(chunk.valid().chars().map(|c| c.escape_debug().to_string()));
        pieces.extend(chunk.invalid().iter().map(|b| format!("\\x{b:02x}")));
    }
    let shown: String = pieces
        .iter()
        .take(ECHOED_KEY_CHARS)
        .map(String::as_str)
        .collect();
    if pieces.len() > ECHOED_KEY_CHARS {
        format!("\"{shown}…\" ({} bytes)", key.len())
    } else {
        format!("\"{shown}\"")
    }
}

impl ServerArgs {
    /// The client of database `db`: the database `db` of the server of `--server`, or else the
    /// database file `db`.
    pub fn open(&self, db: &str) -> Result<Client> {
        Ok(match self.client()? {
            Some(http) => Client::connect(http, db)?,
            None => Client::open(db.as_ref())?,
        })
    }
}

/// Runs `obscura get`.
pub fn run(args: GetArgs) -> Result<()> {
    let mut client = args.remote.open(&args.db)?;
    let key = match (&args.key, &args.key_hex) {
        (Some(text), _) => Some(text.as_bytes()),
        (None, Some(KeyBytes(bytes))) => Some(bytes.as_slice()),
        (None, None) => None,
    };
    let fetched = match (key, args.index) {
        (Some(key), _) => client
            .get_key(key)
            .map(|value| value.ok_or_else(|| NotFound::Key(key.to_vec()))),
        (None, index) => {
            let index = index.context("give --index, --key or --key-hex")?;
            client
                .get(index)
                .map(|record| record.ok_or(NotFound::Record(index)))
        }
    };
    let record = match fetched {
        Err(ClientError::Lookup {
            error: PirError::WrongLookup { serves, .. },
            ..
        }) => bail!(
            "{} is {}",
            args.db,
            match serves {
                Lookup::Key => "a keyword database: fetch with --key or --key-hex",
                Lookup::Index | Lookup::Batch => "an index database: fetch with --index",
                Lookup::AuditPath => "a Merkle tree: fetch audit paths with `obscura merkle prove`",
                Lookup::Shard =>
                    "a shard of a database: fetch from the gateway that serves the whole",
            }
        ),
        fetched => fetched??,
    };
    match args.out {
        Some(path) => std::fs::write(&path, &record)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => writeln!(std::io::stdout(), "{}", printable(&record, args.hex))?,
    }
    Ok(())
}

/// A record as `obscura get` prints it: as it is when it is UTF-8 text without control
/// characters (tabs and line breaks allowed) and `hex` is not asked for, in hex otherwise.
fn printable(record: &[u8], hex: bool) -> String {
    match std::str::from_utf8(record) {
        Ok(text)
            if !hex
                && !text
                    .chars()
                    .any(|c| c.is_control() && !"\t\n\r".contains(c)) =>
        {
            text.to_string()
        }
        _ => record.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_stays_text_and_the_rest_is_hex() {
        assert_eq!(
            printable(b"Springfield, +1 555 0100", false),
            "Springfield, +1 555 0100"
        );
        assert_eq!(
            printable("caf\u{e9}\tline\n".as_bytes(), false),
            "caf\u{e9}\tline\n"
        );
        assert_eq!(printable(b"abc", true), "616263");
        assert_eq!(printable(b"caf\xe9", false), "636166e9");
        assert_eq!(printable(b"a\0b", false), "610062");
        assert_eq!(printable(b"\x1b[31m", false), "1b5b33316d");
        assert_eq!(printable(b"", false), "");
    }

    #[test]
    fn keys_are_echoed_short_and_escaped() {
        assert_eq!(echo_key(b"+15550013"), "\"+15550013\"");
        assert_eq!(echo_key(b"caf\xe9\n\"x\""), "\"caf\\xe9\\n\\\"x\\\"\"");
        assert_eq!(echo_key("é".as_bytes()), "\"é\"");
        let long = vec![b'k'; 100_000];
        assert_eq!(
            echo_key(&long),
            format!("\"{}…\" (100000 bytes)", "k".repeat(ECHOED_KEY_CHARS))
        );
        let exactly = vec![b'k'; ECHOED_KEY_CHARS];
        assert_eq!(echo_key(&exactly), format!("\"{}\"", "k".repeat(64)));
    }

    #[test]
    fn hashes_parse_from_hex() {
        let text = "00ff10Ab".repeat(8);
        let hash = parse_sha256(&text).unwrap();
        assert_eq!(&hash[..4], &[0x00, 0xff, 0x10, 0xab]);
        assert!(parse_sha256(&text[2..]).unwrap_err().contains("31 bytes"));
        assert!(parse_sha256(&text.replace('A', "g"))
            .unwrap_err()
            .contains("not hex"));
        assert!(parse_sha256("é".repeat(32).as_str()).is_err());
    }

    #[test]
    fn hex_keys_take_any_bytes() {
        assert_eq!(parse_hex_key("00ff80").unwrap().0, [0, 0xff, 0x80]);
        assert_eq!(parse_hex_key("").unwrap().0, Vec::<u8>::new());
        assert!(parse_hex_key("0").unwrap_err().contains("not hex"));
    }
}
