//! `obscura get`: one private retrieval by index or by key, from a database file or a server.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use obscura_pir::keyword::{KeywordClient, KeywordSetup};
use obscura_pir::lwe::{Answer, Client, PublicSetup, Query, Server};
use obscura_pir::wire::{Kind, Reader};
use obscura_pir::{PirClient, PirServer};
use obscura_server::client::HttpClient;
use obscura_server::store::{self, Database};

/// Arguments of `obscura get`.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("target").required(true).args(["index", "key"]))]
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
    /// Fetch from this server (e.g. http://127.0.0.1:8080) instead of a local file.
    #[arg(long)]
    server: Option<String>,
    /// Where public setups downloaded from servers are cached (default: the user's cache folder).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Write the raw record to this file instead of printing it as hex.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// A key that is not in the database: reported on stderr, exit status 2.
#[derive(Debug)]
pub struct NotFound(String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not found: the key {:?} is not in the database", self.0)
    }
}

impl std::error::Error for NotFound {}

/// The default cache folder: `$XDG_CACHE_HOME/obscura` or `~/.cache/obscura`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("obscura"))
}

/// Where the answers come from.
enum Source {
    File(Database),
    Server {
        http: HttpClient,
        name: String,
        setup: Vec<u8>,
    },
}

impl Source {
    /// Whether the source serves a setup of `kind`.
    fn is(&self, kind: Kind) -> bool {
        match self {
            Self::File(database) => match database {
                Database::Index(_) => kind == Kind::LwePublicSetup,
                Database::Keyword(_) => kind == Kind::KeywordSetup,
                Database::TreePir(_) => kind == Kind::TreePirSetup,
            },
            Self::Server { setup, .. } => Reader::open(setup, kind).is_ok(),
        }
    }

    fn answer(&self, setup: &PublicSetup, query: &Query) -> Result<Answer> {
        Ok(match self {
            Self::File(database) => engine(database)?.answer(query)?,
            Self::Server { http, name, .. } => http.query(name, setup, query)?,
        })
    }
}

/// The engine of an index or keyword database.
fn engine(database: &Database) -> Result<&Server> {
    database
        .engine()
        .context("a Merkle tree has no single engine")
}

/// Runs `obscura get`.
pub fn run(args: GetArgs) -> Result<()> {
    let source = match &args.server {
        Some(url) => {
            let http = HttpClient::new(url, args.cache_dir.clone().or_else(default_cache_dir));
            let setup = http.setup_bytes(&args.db)?;
            Source::Server {
                http,
                name: args.db.clone(),
                setup,
            }
        }
        None => Source::File(store::read_database(args.db.as_ref())?),
    };
    if source.is(Kind::TreePirSetup) {
        bail!(
            "{} is a Merkle tree: fetch audit paths with `obscura merkle prove`",
            args.db
        );
    }
    let is_keyword = source.is(Kind::KeywordSetup);
    let record = match (&args.key, args.index) {
        (Some(key), _) => {
            if !is_keyword {
                bail!("{} is an index database: fetch with --index", args.db);
            }
            let setup = match &source {
                Source::File(Database::Keyword(server)) => server.public_setup().clone(),
                Source::Server { setup, .. } => KeywordSetup::from_bytes(setup)?,
                Source::File(Database::Index(_) | Database::TreePir(_)) => {
                    unreachable!("checked above")
                }
            };
            let mut client = KeywordClient::new(setup);
            let (query, state) = client.query(key.as_bytes())?;
            let answer = source.answer(client.setup().lwe(), &query)?;
            client
                .decode(state, &answer)?
                .ok_or_else(|| NotFound(key.clone()))?
        }
        (None, Some(index)) => {
            if is_keyword {
                bail!("{} is a keyword database: fetch with --key", args.db);
            }
            let setup = match &source {
                Source::File(database) => engine(database)?.public_setup().clone(),
                Source::Server { setup, .. } => PublicSetup::from_bytes(setup)?,
            };
            let mut client = Client::new(setup);
            let (query, state) = client.query(index)?;
            let answer = source.answer(client.setup(), &query)?;
            client.decode(state, &answer)?
        }
        (None, None) => unreachable!("clap requires --index or --key"),
    };
    match args.out {
        Some(path) => std::fs::write(&path, &record)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let hex: String = record.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(std::io::stdout(), "{hex}")?;
        }
    }
    Ok(())
}
