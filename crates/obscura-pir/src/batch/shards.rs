//! Several LWE databases queried together, one query each: TreePIR's colour classes and the
//! batch-code baseline's buckets. Every request carries exactly one query per database, so the
//! server learns nothing from which databases a client "really" needed.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::lwe::{Answer, Client, PublicSetup, Query, QueryState, Server, SetupOptions};
use crate::{PirClient, PirError, PirServer};

/// The server side: one LWE database per shard.
pub(crate) struct ShardServers {
    servers: Vec<Server>,
}

impl ShardServers {
    /// Sets up one database of `record_bytes`-byte records per entry of `contents` (in parallel);
    /// `progress(done, total)` counts finished databases.
    pub(crate) fn setup(
        contents: &[Vec<u8>],
        record_bytes: u64,
        options: SetupOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let (done, total) = (AtomicU64::new(0), contents.len() as u64);
        let servers = contents
            .par_iter()
            .map(|records| {
                let server = Server::setup(records, record_bytes, options, &|_, _| {})?;
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                Ok(server)
            })
            .collect::<Result<Vec<_>, PirError>>()?;
        Ok(Self { servers })
    }

    /// Shards from databases set up (or loaded) before, in shard order.
    pub(crate) fn from_servers(servers: Vec<Server>) -> Self {
        Self { servers }
    }

    /// The databases, in shard order.
    pub(crate) fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// Their public setups, in shard order.
    pub(crate) fn public_setups(&self) -> Vec<PublicSetup> {
        self.servers
            .iter()
            .map(|s| s.public_setup().clone())
            .collect()
    }

    /// Answers one query per shard, in parallel; `what` names the request in errors.
    pub(crate) fn answer(
        &self,
        queries: &[Query],
        what: &'static str,
    ) -> Result<Vec<Answer>, PirError> {
        check_count(what, queries.len(), self.servers.len())?;
        self.servers
            .par_iter()
            .zip(queries)
            .map(|(server, query)| server.answer(query))
            .collect()
    }
}

/// The client side: one LWE client per shard.
pub(crate) struct ShardClients {
    clients: Vec<Client>,
}

impl ShardClients {
    /// Clients for the databases of `setups`.
    pub(crate) fn new(setups: &[PublicSetup]) -> Self {
        Self {
            clients: setups.iter().cloned().map(Client::new).collect(),
        }
    }

    /// One query per shard for the record at `targets[shard]`, each with a fresh secret.
    pub(crate) fn query(
        &mut self,
        targets: &[u64],
    ) -> Result<(Vec<Query>, Vec<QueryState>), PirError> {
        self.clients
            .iter_mut()
            .zip(targets)
            .map(|(client, &target)| client.query(target))
            .collect::<Result<Vec<_>, _>>()
            .map(|pairs| pairs.into_iter().unzip())
    }

    /// The records the answers carry, for the shards where `wanted` is true (`None` elsewhere);
    /// `what` names the answers in errors.
    pub(crate) fn decode(
        &self,
        states: Vec<QueryState>,
        answers: &[Answer],
        wanted: impl Fn(usize) -> bool,
        what: &'static str,
    ) -> Result<Vec<Option<Vec<u8>>>, PirError> {
        check_count(what, answers.len(), self.clients.len())?;
        self.clients
            .iter()
            .zip(states)
            .zip(answers)
            .enumerate()
            .map(|(shard, ((client, state), answer))| {
                wanted(shard)
                    .then(|| client.decode(state, answer))
                    .transpose()
            })
            .collect()
    }
}

fn check_count(what: &'static str, got: usize, shards: usize) -> Result<(), PirError> {
    if got != shards {
        return Err(PirError::malformed(
            what,
            format!("{got} messages for {shards} databases"),
        ));
    }
    Ok(())
}
