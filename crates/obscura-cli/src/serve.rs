//! `obscura serve`: serve database files over HTTP.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use obscura_service::allocator;
use obscura_service::auth::Tokens;
use obscura_service::catalog::{Catalog, Entry};
use obscura_service::gateway::{Gateway, GatewayOptions};
use obscura_service::service::{self, CorsOrigins, Databases, ServiceConfig, Ui};
use obscura_service::tls;
use obscura_store::served::FileStat;

use obscura_math::threads as pools;

use crate::get;
use crate::usage::{self, Usage};

/// Arguments of `obscura serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Database files written by `obscura build`; each is served under its file stem.
    #[arg(required_unless_present = "gateway")]
    databases: Vec<PathBuf>,
    /// Serve the sharded database of this sealed manifest (`obscura shards seal`) from its
    /// shards' servers, given with --shard, as one database named after the manifest (its file
    /// name up to the first dot); SIGHUP serves the manifest's new seal.
    #[arg(long, requires = "shards", conflicts_with_all = ["databases", "watch"])]
    gateway: Option<PathBuf>,
    /// With --gateway: the servers of shard I, `I=URL[,URL...]` (replicas, tried in turn);
    /// once for every shard.
    #[arg(long = "shard", value_name = "I=URL[,URL...]", requires = "gateway")]
    shards: Vec<ShardServers>,
    /// With --gateway: send the bearer token on this file's first line to the shards' servers.
    #[arg(long, requires = "gateway")]
    shard_token_file: Option<PathBuf>,
    /// With --gateway: trust these certificates (PEM) as the roots for https:// shards.
    #[arg(long, requires = "gateway")]
    shard_ca_cert: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Queries answered or waiting at once; more get 503.
    #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_concurrent: usize,
    /// Milliseconds the batcher waits for more queries after the first (0: it answers those
    /// waiting; queries that arrive during a pass are answered together by the next).
    #[arg(long, default_value_t = 0)]
    batch_window_ms: u64,
    /// Time limit of a request, in seconds (a gateway shares it among a shard's replicas).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_secs: u64,
    /// Threads that answer queries (default: all cores).
    #[arg(long, value_parser = usage::threads())]
    threads: Option<usize>,
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Bearer tokens: a file of `DATABASE TOKEN` lines (`* TOKEN` for every database). A
    /// database with a token answers only requests that carry one; SIGHUP reads the file again.
    #[arg(long)]
    tokens: Option<PathBuf>,
    /// Let pages from this web origin (e.g. `https://lookup.example`) call the service, the
    /// `Authorization` header of tokens included; repeat for several, or `*` for any. Without
    /// it browsers refuse pages of other origins.
    #[arg(long = "cors-origin")]
    cors_origins: Vec<String>,
    /// Serve a page at / where a person picks a database, types a key or an index and sees the
    /// value fetched privately by the browser, with the sizes and timings of each step.
    #[arg(long)]
    ui: bool,
    /// Look at the database files every SECONDS and serve their new versions as SIGHUP would
    /// (the tokens file is read again only on SIGHUP).
    #[arg(long, value_name = "SECONDS", value_parser = watch_interval)]
    watch: Option<Duration>,
}

/// The servers of one shard: `I=URL[,URL...]`.
#[derive(Clone, Debug)]
struct ShardServers {
    index: usize,
    urls: Vec<String>,
}

impl std::str::FromStr for ShardServers {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (index, urls) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: give a shard's servers as I=URL[,URL...]"))?;
        let index = index
            .parse()
            .map_err(|_| format!("{index:?} is not a shard index (0, 1, ...)"))?;
        let urls: Vec<String> = urls.split(',').map(str::to_string).collect();
        if urls.iter().any(String::is_empty) {
            return Err(format!("{text:?}: a server URL is empty"));
        }
        Ok(Self { index, urls })
    }
}

/// What a gateway serves: its sealed manifest, each shard's replicas and how it reaches them.
struct GatewaySource {
    manifest: PathBuf,
    replicas: Vec<Vec<String>>,
    options: GatewayOptions,
}

impl GatewaySource {
    /// The gateway `args` ask for, over the shards of `manifest`.
    fn of(args: &ServeArgs, manifest: &Path) -> Result<Self> {
        let mut replicas: Vec<Vec<String>> = Vec::new();
        for ShardServers { index, urls } in &args.shards {
            if replicas.len() <= *index {
                replicas.resize(index + 1, Vec::new());
            }
            if !replicas[*index].is_empty() {
                bail!(Usage(format!(
                    "--shard {index} is given twice: list its replicas in one, I=URL,URL"
                )));
            }
            replicas[*index] = urls.clone();
        }
        let options = GatewayOptions {
            timeout: Duration::from_secs(args.timeout_secs),
            token: args
                .shard_token_file
                .as_deref()
                .map(get::read_token)
                .transpose()?,
            trusted_roots: args
                .shard_ca_cert
                .as_deref()
                .map(get::read_roots)
                .transpose()?,
        };
        Ok(Self {
            manifest: manifest.to_path_buf(),
            replicas,
            options,
        })
    }

    /// The catalog of the gateway: one database, named after the manifest's file name up to
    /// its first dot, with the setup its seal recorded now.
    fn open(&self) -> Result<Catalog> {
        let gateway = Gateway::open(&self.manifest, self.replicas.clone(), &self.options)
            .with_context(|| format!("cannot serve {}", self.manifest.display()))?;
        let mut catalog = Catalog::default();
        catalog.insert(gateway_name(&self.manifest), gateway.into_database())?;
        Ok(catalog)
    }
}

/// The name a gateway serves the database of `manifest` under: the manifest's file name up to
/// its first dot.
fn gateway_name(manifest: &Path) -> String {
    manifest
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.split('.').next())
        .unwrap_or_default()
        .to_string()
}

/// The names database files are served under: their stems.
fn stems(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect()
}

/// A `--watch` interval: a number of seconds from 0.05 to a day.
fn watch_interval(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.05..=86_400.0).contains(&seconds) {
        return Err(format!("{seconds} s is not between 0.05 s and a day"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Runs `obscura serve` until ctrl-c or SIGTERM; SIGHUP reloads the database files.
pub fn run(args: ServeArgs) -> Result<()> {
    let cors = CorsOrigins::parse(&args.cors_origins)
        .map_err(|error| Usage(format!("--cors-origin: {error}")))?;
    allocator::keep_freed_memory();
    rayon::ThreadPoolBuilder::new()
        .num_threads(pools::count(args.threads)?)
        .build_global()
        .context("cannot start the thread pool")?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::read_server_config(cert, key)?),
        _ => None,
    };
    let served = match &args.gateway {
        Some(manifest) => vec![gateway_name(manifest)],
        None => stems(&args.databases),
    };
    let tokens = read_tokens(args.tokens.as_deref(), &served)?;
    let ui = args.ui.then(Ui::embedded).transpose().context("--ui")?;
    let config = ServiceConfig {
        max_concurrent: args.max_concurrent,
        batch_window: Duration::from_millis(args.batch_window_ms),
        request_timeout: Duration::from_secs(args.timeout_secs),
        tokens,
        cors,
        ui,
        ..ServiceConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        // The port first: a taken port is reported before any database is loaded.
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let mut gateway = None;
        let catalog = match &args.gateway {
            Some(manifest) => {
                let source = GatewaySource::of(&args, manifest)?;
                let catalog = source.open()?;
                gateway = Some(source);
                catalog
            }
            None => {
                let paths = args.databases.clone();
                let file_bytes = paths
                    .iter()
                    .filter_map(|path| std::fs::metadata(path).ok())
                    .map(|metadata| metadata.len())
                    .sum();
                eprintln!(
                    "loading {} into memory and verifying it",
                    obscura_store::memory::human(file_bytes)
                );
                tokio::task::spawn_blocking(move || Catalog::open(&paths))
                    .await
                    .context("loading the databases stopped")??
            }
        };
        for entry in catalog.entries() {
            describe(entry);
        }
        let url = format!(
            "{}://{}",
            if tls.is_some() { "https" } else { "http" },
            listener.local_addr()?
        );
        let watching = match args.watch {
            Some(every) => format!(
                ", new versions looked for every {:.2} s",
                every.as_secs_f64()
            ),
            None => String::new(),
        };
        let reloading = if args.gateway.is_some() {
            ", SIGHUP to serve the manifest's new seal"
        } else {
            ", SIGHUP to reload the files"
        };
        eprintln!("serving on {url} (ctrl-c to stop{reloading}{watching})");
        if ui.is_some() {
            eprintln!("the lookup page: {url}/");
        }
        let limits = config.connections;
        let (router, databases) = service::router_with_databases(catalog, config);
        let source = match gateway {
            Some(gateway) => Source::Gateway(gateway),
            None => Source::Files(args.databases.clone().into()),
        };
        let reloads = Reloads::new(databases, source);
        if let Some(every) = args.watch {
            tokio::spawn(reloads.clone().watch(every));
        }
        tokio::spawn(reload_on_hangup(reloads, args.tokens.clone()));
        service::serve(listener, router, limits, tls, service::shutdown_signal())
            .await
            .context("the server failed")
    })?;
    eprintln!("stopped");
    Ok(())
}

/// The grants of the tokens file at `path` (none without one); every database it names must be
/// one of `databases`.
fn read_tokens(path: Option<&Path>, served: &[String]) -> Result<Tokens> {
    let Some(path) = path else {
        return Ok(Tokens::default());
    };
    let tokens = Tokens::read(path)?;
    if let Some(unknown) = tokens
        .databases()
        .find(|name| !served.iter().any(|s| s == name))
    {
        bail!(
            "{}: grants a token for {unknown:?}, which is not served (served: {})",
            path.display(),
            served.join(", ")
        );
    }
    Ok(tokens)
}

/// Prints what a served database is and how big its messages are.
fn describe(entry: &Entry) {
    let info = &entry.info;
    if let Some(h) = info.height {
        eprintln!(
            "{}: Merkle tree of {} leaves, height {h}, public setup {} B, a proof is {h} queries ({} B) and {h} answers ({} B)",
            info.name, info.records, info.hint_bytes, info.query_bytes, info.answer_bytes
        );
        return;
    }
    let layout = info.params.as_ref().map_or(String::new(), |p| {
        format!(", {} per column", p.records_per_column)
    });
    let items = match info.kind.as_str() {
        "keyword" => format!("{} keys, rows of", info.records),
        _ => format!("{} records of", info.records),
    };
    eprintln!(
        "{}: {} database, {items} {} B{layout}, public setup {} B, query {} B, answer {} B",
        info.name,
        info.kind,
        info.record_bytes,
        info.hint_bytes,
        info.query_bytes,
        info.answer_bytes
    );
}

/// What a server serves, and reloads: database files, or a gateway's sealed manifest.
enum Source {
    /// Database files.
    Files(Arc<[PathBuf]>),
    /// The shards of a sealed manifest, through a gateway.
    Gateway(GatewaySource),
}

impl Source {
    /// The names its databases are served under.
    fn names(&self) -> Vec<String> {
        match self {
            Self::Files(paths) => stems(paths),
            Self::Gateway(gateway) => vec![gateway_name(&gateway.manifest)],
        }
    }
}

/// Reloads of what is served. Database files: a file whose change log grew is caught up (its
/// new versions applied to a copy), one that changed otherwise is loaded again, and either is
/// served from then on. A gateway: the manifest's seal is read again, and a new one served
/// (its shards must serve the sealed setups by then; until they do, queries are a 503). Either
/// way requests in flight finish on the old ones. One reload runs at a time.
#[derive(Clone)]
struct Reloads {
    databases: Databases,
    source: Arc<Source>,
    running: Arc<tokio::sync::Mutex<()>>,
}

impl Reloads {
    fn new(databases: Databases, source: Source) -> Self {
        Self {
            databases,
            source: Arc::new(source),
            running: Arc::default(),
        }
    }

    /// Reloads what is served, saying what changed.
    async fn run(&self) {
        let _running = self.running.lock().await;
        let (current, source) = (self.databases.catalog(), self.source.clone());
        let reloaded = tokio::task::spawn_blocking(move || match &*source {
            Source::Files(paths) => {
                current
                    .reload(paths)
                    .map_err(anyhow::Error::from)
                    .map(|(catalog, failures)| {
                        let failures = failures.into_iter().map(anyhow::Error::from).collect();
                        (catalog, failures)
                    })
            }
            Source::Gateway(gateway) => gateway.open().map(|catalog| (catalog, Vec::new())),
        })
        .await;
        let (catalog, failures) = match reloaded {
            Ok(Ok(reloaded)) => reloaded,
            Ok(Err(error)) => {
                return eprintln!("error: reload failed, still serving as before: {error:#}");
            }
            Err(_) => return eprintln!("error: the reload stopped, still serving as before"),
        };
        for failure in failures {
            eprintln!("error: not reloaded, still serving the previous version: {failure:#}");
        }
        let old = self.databases.catalog();
        if let Source::Gateway(gateway) = &*self.source {
            let same = catalog
                .entries()
                .all(|e| old.get(&e.name).is_some_and(|old| old.sha256 == e.sha256));
            if same {
                return eprintln!(
                    "reloaded: {} holds the same seal",
                    gateway.manifest.display()
                );
            }
            for entry in catalog.entries() {
                eprintln!(
                    "reloaded {}: the new seal of {}, setup sha256 {}",
                    entry.name,
                    gateway.manifest.display(),
                    hex::encode(entry.sha256)
                );
                describe(entry);
            }
            return self.databases.replace(catalog);
        }
        let changed: Vec<&Arc<Entry>> = catalog
            .entries()
            .filter(|e| old.get(&e.name).is_none_or(|old| !Arc::ptr_eq(old, e)))
            .collect();
        if changed.is_empty() {
            eprintln!("reloaded: no database changed");
        }
        for entry in changed {
            eprintln!(
                "reloaded {} at version {}: {}",
                entry.name, entry.info.version, entry.arrival
            );
            describe(entry);
        }
        self.databases.replace(catalog);
    }

    /// Reloads the files whenever one of them or its change log changed, looking every
    /// `every`; a file that fails to load is tried again once it changes again.
    async fn watch(self, every: Duration) {
        let look = |paths: &[PathBuf]| -> Vec<Option<FileStat>> {
            paths.iter().map(|path| FileStat::now(path)).collect()
        };
        // A gateway's manifest is read again on SIGHUP only (`--watch` is for files).
        let Source::Files(paths) = &*self.source else {
            return;
        };
        let paths = paths.clone();
        let mut seen = look(&paths);
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let now = look(&paths);
            if now != seen {
                seen = now;
                self.run().await;
            }
        }
    }
}

/// Reads the tokens file again and reloads the database files on every SIGHUP.
#[cfg(unix)]
async fn reload_on_hangup(reloads: Reloads, tokens: Option<PathBuf>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        eprintln!("warning: cannot listen for SIGHUP: the files are not reloaded");
        return;
    };
    while hangups.recv().await.is_some() {
        match read_tokens(tokens.as_deref(), &reloads.source.names()) {
            Ok(tokens) => reloads.databases.replace_tokens(tokens),
            Err(error) => eprintln!("error: {error:#}; the previous tokens stay in force"),
        }
        reloads.run().await;
    }
}

#[cfg(not(unix))]
async fn reload_on_hangup(_reloads: Reloads, _tokens: Option<PathBuf>) {}
