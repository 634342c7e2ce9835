//! A gateway: one database served from its shards, on other servers.
//!
//! The gateway holds the sealed manifest ([`obscura_store::shards`]) and the whole database's
//! public setup, which it serves as any database's (one ETag; clients cannot tell). A query is
//! decoded against that setup, cut into each shard's part ([`ShardPlan::query_part`]), sent to
//! one replica of every shard at once (the queries waiting together go as one batch), and the
//! shards' answers are combined ([`ShardPlan::answer`]) into the answer a server of the whole
//! database gives, bit for bit. The servers see what one server sees: the query.
//!
//! A replica is found by its listing: the database it serves whose setup has the SHA-256 the
//! seal recorded for the shard. A shard's query carries the digest the seal recorded, so a
//! replica holding anything else (another version, another database) refuses it instead of
//! answering. A replica that does not answer, or refuses, is passed over for the next one of
//! its shard; when none of a shard's replicas answers within the time limit, the request fails
//! with [`PirError::Unavailable`] (503), naming the shard and why, and never with a wrong
//! answer. Replicas are tried in turn from one request to the next, so one that comes back is
//! used again.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use obscura_client::http::{ClientOptions, HttpClient};
use obscura_client::{ClientError, Request};
use obscura_pir::framing;
use obscura_pir::lwe::{Answer, PublicSetup, Query, ShardAnswer, ShardPlan, ShardQuery, ShardTag};
use obscura_pir::PirError;
use obscura_registry::{setup_sha256, Database, Remote};
use obscura_store::shards::{Manifest, ShardsError};

use crate::metrics::{render_timings, Timings};

/// How a gateway reaches its shards.
#[derive(Clone, Debug, Default)]
pub struct GatewayOptions {
    /// The time a shard's part of a request may take in all, every replica tried included
    /// (the service's request time limit, so that a shard out of reach is a 503 within it):
    /// each of a shard's `r` replicas is given `1 / (r + 1)` of it.
    pub timeout: Duration,
    /// The bearer token sent to the shards' servers.
    pub token: Option<String>,
    /// The certificates (DER) trusted as roots for `https://` shards.
    pub trusted_roots: Option<Vec<Vec<u8>>>,
}

/// Why a gateway could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The manifest could not be read.
    #[error(transparent)]
    Manifest(#[from] ShardsError),
    /// The manifest was never sealed.
    #[error("{0}: not sealed: run `obscura shards seal` on it and its shards first")]
    NotSealed(String),
    /// The combined setup beside the manifest could not be read.
    #[error("{path}")]
    Setup {
        /// Its file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The combined setup is not the one the manifest's seal recorded.
    #[error("{0}: not the setup the manifest's seal recorded (sealed again since?)")]
    SetupSha256(String),
    /// The combined setup does not decode.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// The shards given are not the plan's.
    #[error("{0}")]
    Shards(String),
}

/// A database served from its shards (see the module's documentation).
pub struct Gateway {
    plan: ShardPlan,
    setup: PublicSetup,
    shards: Vec<ShardLink>,
}

/// One shard as the gateway reaches it.
struct ShardLink {
    index: usize,
    /// What its queries and answers carry.
    tag: ShardTag,
    /// Its setup's SHA-256, hex: how a replica's listing names it.
    setup_sha256: String,
    replicas: Vec<Replica>,
    /// The replica the next request tries first.
    next: AtomicUsize,
    /// Its requests (each to the replicas that answered or refused in turn).
    timings: Timings,
}

/// One server of a shard.
struct Replica {
    url: String,
    http: HttpClient,
    /// The name it serves the shard under, once found in its listing.
    name: Mutex<Option<String>>,
}

impl Gateway {
    /// The gateway of the sealed manifest at `manifest`, whose shard `i` is served at the
    /// base URLs `replicas[i]` (one or more each), reached as `options` say; the database's
    /// setup is read from beside the manifest and checked against the seal. Nothing is asked
    /// of the shards until the first query.
    pub fn open(
        manifest: &Path,
        replicas: Vec<Vec<String>>,
        options: &GatewayOptions,
    ) -> Result<Self, GatewayError> {
        let read = Manifest::read(manifest)?;
        let sealed = read
            .sealed()
            .ok_or_else(|| GatewayError::NotSealed(manifest.display().to_string()))?;
        let plan = read.plan().clone();
        if replicas.len() != plan.shards() || replicas.iter().any(Vec::is_empty) {
            let missing: Vec<String> = (0..plan.shards())
                .filter(|&i| replicas.get(i).is_none_or(Vec::is_empty))
                .map(|i| i.to_string())
                .collect();
            return Err(GatewayError::Shards(format!(
                "{} has {} shards: give each a server with --shard I=URL (missing: {}; given: {})",
                manifest.display(),
                plan.shards(),
                missing.join(", "),
                replicas.len()
            )));
        }
        let path = Manifest::setup_path(manifest);
        let bytes = std::fs::read(&path).map_err(|source| GatewayError::Setup {
            path: path.display().to_string(),
            source,
        })?;
        if hex::encode(setup_sha256(&bytes)) != sealed.setup_sha256 {
            return Err(GatewayError::SetupSha256(path.display().to_string()));
        }
        let setup = PublicSetup::from_bytes(&bytes)?;
        let shards = replicas
            .into_iter()
            .enumerate()
            .map(|(index, urls)| {
                let tag = read
                    .shard_tag(index)
                    .expect("a sealed manifest tags every shard");
                (tag, sealed.shards[index].setup_sha256.clone(), urls)
            })
            .collect();
        Ok(Self::from_parts(plan, setup, shards, options))
    }

    /// The gateway of `plan`'s database, whose whole setup is `setup`, with shard `i` as
    /// `shards[i]`: what its messages are checked against, its setup's SHA-256 (hex) and the
    /// base URLs of its replicas. [`Gateway::open`] takes these from a sealed manifest.
    pub fn from_parts(
        plan: ShardPlan,
        setup: PublicSetup,
        shards: Vec<(ShardTag, String, Vec<String>)>,
        options: &GatewayOptions,
    ) -> Self {
        let shards = shards
            .into_iter()
            .enumerate()
            .map(|(index, (tag, setup_sha256, urls))| {
                let client = ClientOptions {
                    timeout: options.timeout / (urls.len() as u32 + 1),
                    token: options.token.clone(),
                    trusted_roots: options.trusted_roots.clone(),
                    ..ClientOptions::default()
                };
                ShardLink {
                    index,
                    tag,
                    setup_sha256,
                    replicas: urls
                        .into_iter()
                        .map(|url| Replica {
                            http: HttpClient::with_options(&url, client.clone()),
                            url,
                            name: Mutex::new(None),
                        })
                        .collect(),
                    next: AtomicUsize::new(0),
                    timings: Timings::default(),
                }
            })
            .collect();
        Self {
            plan,
            setup,
            shards,
        }
    }

    /// The database it serves.
    pub fn into_database(self) -> Database {
        let setup = self.setup.clone();
        Database::remote(setup, Arc::new(self))
    }

    /// Shard `link`'s answers to `parts` (one per query), in full words, from the first of its
    /// replicas that gives them.
    fn answer_shard(&self, link: &ShardLink, parts: &[&[u32]]) -> Result<Vec<Vec<u32>>, PirError> {
        let started = Instant::now();
        let answered = self.ask_replicas(link, parts);
        link.timings.record(answered.is_err(), started.elapsed());
        answered
    }

    /// [`Gateway::answer_shard`]: each replica in turn until one answers.
    fn ask_replicas(&self, link: &ShardLink, parts: &[&[u32]]) -> Result<Vec<Vec<u32>>, PirError> {
        let queries: Vec<Vec<u8>> = parts
            .iter()
            .map(|part| ShardQuery::new(&link.tag, part).map(|q| q.to_bytes()))
            .collect::<Result<_, _>>()?;
        let count = link.replicas.len();
        let first = link.next.fetch_add(1, Ordering::Relaxed);
        let mut reasons = Vec::new();
        for offset in 0..count {
            let replica = &link.replicas[(first + offset) % count];
            match replica.answer(link, &queries) {
                Ok(answers) => return Ok(answers),
                Err(reason) => reasons.push(format!("{}: {reason}", replica.url)),
            }
        }
        Err(PirError::Unavailable(format!(
            "shard {} of {}: no replica answered ({})",
            link.index,
            self.plan.shards(),
            reasons.join("; ")
        )))
    }
}

impl Replica {
    /// Its answers to the encoded shard `queries` of `link`, in words; why not, in words.
    fn answer(&self, link: &ShardLink, queries: &[Vec<u8>]) -> Result<Vec<Vec<u32>>, String> {
        let name = self.name(link)?;
        match self.send(&name, link, queries) {
            // The name may now hold another version: look again once.
            Err(ClientError::StaleSetup { .. } | ClientError::Status { status: 404, .. }) => {
                *self.name.lock().unwrap_or_else(PoisonError::into_inner) = None;
                let name = self.name(link)?;
                self.send(&name, link, queries)
            }
            sent => sent,
        }
        .map_err(|error| error.to_string())
    }

    /// The name it serves `link`'s shard under: the database of its listing whose setup has
    /// the sealed SHA-256.
    fn name(&self, link: &ShardLink) -> Result<String, String> {
        let mut held = self.name.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(name) = held.as_ref() {
            return Ok(name.clone());
        }
        let listed = self.http.list().map_err(|error| error.to_string())?;
        let name = listed
            .into_iter()
            .find(|info| info.setup_sha256 == link.setup_sha256)
            .map(|info| info.name)
            .ok_or_else(|| {
                format!(
                    "lists no shard {} with the sealed setup (it holds another version or \
                     another database, or needs a token the gateway was not given)",
                    link.index
                )
            })?;
        *held = Some(name.clone());
        Ok(name)
    }

    /// Sends the encoded `queries` to database `name` and reads their answers.
    fn send(
        &self,
        name: &str,
        link: &ShardLink,
        queries: &[Vec<u8>],
    ) -> Result<Vec<Vec<u32>>, ClientError> {
        let answer_bytes = ShardAnswer::encoded_len(&link.tag);
        let bodies = match queries {
            [query] => vec![self.http.send(
                name,
                &Request {
                    route: "query",
                    body: query.clone(),
                    answer_bytes,
                },
            )?],
            _ => {
                let count = queries.len() as u64;
                let framed = self.http.send(
                    name,
                    &Request {
                        route: "batch",
                        body: framing::encode(queries),
                        answer_bytes: count.saturating_mul(answer_bytes + 4).saturating_add(4),
                    },
                )?;
                framing::decode_exact(&framed, queries.len())
                    .map_err(|message| ClientError::Unexpected {
                        url: self.url.clone(),
                        message,
                    })?
                    .into_iter()
                    .map(<[u8]>::to_vec)
                    .collect()
            }
        };
        bodies
            .iter()
            .map(|body| Ok(ShardAnswer::from_bytes(body, &link.tag)?.values().to_vec()))
            .collect()
    }
}

impl Remote for Gateway {
    fn metrics(&self, name: &str) -> String {
        let series: Vec<(String, &Timings)> = self
            .shards
            .iter()
            .map(|link| {
                (
                    format!("database=\"{name}\",shard=\"{}\"", link.index),
                    &link.timings,
                )
            })
            .collect();
        let mut out = String::new();
        render_timings(
            &mut out,
            "obscura_shard",
            "Requests to a shard's replicas",
            &series,
        );
        out
    }

    fn answer(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        let per_shard: Vec<Vec<&[u32]>> = self
            .shards
            .iter()
            .map(|link| {
                queries
                    .iter()
                    .map(|query| self.plan.query_part(link.index, query.values()))
                    .collect::<Result<_, _>>()
            })
            .collect::<Result<_, _>>()?;
        let answers: Vec<Result<Vec<Vec<u32>>, PirError>> = std::thread::scope(|scope| {
            let running: Vec<_> = self
                .shards
                .iter()
                .zip(&per_shard)
                .map(|(link, parts)| scope.spawn(move || self.answer_shard(link, parts)))
                .collect();
            running
                .into_iter()
                .map(|shard| {
                    shard.join().unwrap_or_else(|_| {
                        Err(PirError::Unavailable("a shard's request stopped".into()))
                    })
                })
                .collect()
        });
        let mut answers = answers.into_iter().collect::<Result<Vec<_>, _>>()?;
        (0..queries.len())
            .map(|q| {
                let words: Vec<Vec<u32>> = answers
                    .iter_mut()
                    .map(|shard| std::mem::take(&mut shard[q]))
                    .collect();
                self.plan.answer(&self.setup, &words)
            })
            .collect()
    }
}
