//! Several LWE databases queried together, one query each: TreePIR's colour classes and the
//! batch-code baseline's buckets. Every request carries exactly one query per database, so the
//! server learns nothing from which databases a client "really" needed.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::framing;
use crate::lwe::{Answer, Client, EngineOptions, Layer, PublicSetup, Query, QueryState, Server};
use crate::scheme::{Encode, Message, SetupMessage};
use crate::wire::{Kind, Reader};
use crate::{PirClient, PirError, PirServer};

/// One LWE message per sub-database, in order: a request of one query each (`Shards<Query>`)
/// or its reply (`Shards<Answer>`). Encoded framed ([`crate::framing`]), each part in its own
/// compact envelope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shards<M>(pub Vec<M>);

/// A setup made of one LWE setup per sub-database.
pub trait Sharded {
    /// The sub-databases' setups, in order.
    fn shards(&self) -> &[PublicSetup];

    /// Bytes of a request of one query per sub-database, framed.
    fn framed_query_bytes(&self) -> u64 {
        framed_bytes(self.shards().iter().map(SetupMessage::query_bytes))
    }

    /// Bytes of a reply of one answer per sub-database, framed.
    fn framed_answer_bytes(&self) -> u64 {
        framed_bytes(self.shards().iter().map(SetupMessage::answer_bytes))
    }

    /// The sub-databases' matrix shapes, in order.
    fn shard_matrix_shapes(&self) -> Vec<(usize, usize)> {
        self.shards()
            .iter()
            .flat_map(SetupMessage::matrix_shapes)
            .collect()
    }

    /// The setup of the largest sub-database, if there is one.
    fn largest_shard(&self) -> Option<&Layer> {
        self.shards()
            .iter()
            .max_by_key(|s| s.geometry().records())
            .map(PublicSetup::layer)
    }
}

impl<M: Encode> Encode for Shards<M> {
    /// The kind of each part (the request or reply itself is framed).
    const KIND: Kind = M::KIND;

    fn to_bytes(&self) -> Vec<u8> {
        framing::encode(&self.0.iter().map(M::to_bytes).collect::<Vec<_>>())
    }
}

impl<S, M> Message<S> for Shards<M>
where
    S: Sharded,
    M: Message<PublicSetup>,
{
    fn from_bytes(bytes: &[u8], setup: &S) -> Result<Self, PirError> {
        decode_parts(bytes, setup.shards())
    }
}

/// The framed parts of `bytes`, one per setup of `setups` and each decoded against it.
pub(crate) fn decode_parts<'a, P: 'a, M: Message<P>>(
    bytes: &[u8],
    setups: impl IntoIterator<Item = &'a P, IntoIter: ExactSizeIterator>,
) -> Result<Shards<M>, PirError> {
    let setups = setups.into_iter();
    let parts = framing::decode_exact(bytes, setups.len())
        .map_err(|e| PirError::malformed(M::KIND.describe(), e))?;
    parts
        .into_iter()
        .zip(setups)
        .map(|(part, setup)| M::from_bytes(part, setup))
        .collect::<Result<_, _>>()
        .map(Shards)
}

/// Bytes of a framed request or reply whose parts have the given sizes.
pub(crate) fn framed_bytes(parts: impl Iterator<Item = u64>) -> u64 {
    parts.fold(4, |total, part| total.saturating_add(4 + part))
}

/// Appends each sub-database's encoded setup, with its length (`u64` LE) before it.
pub(crate) fn write_setups(out: &mut Vec<u8>, setups: &[PublicSetup]) {
    out.reserve(setups.iter().map(|s| 8 + s.encoded_bytes()).sum());
    for setup in setups {
        out.extend_from_slice(&(setup.encoded_bytes() as u64).to_le_bytes());
        setup.write(out);
    }
}

/// Reads `count` setups written by [`write_setups`], each checked by `check(index, setup)`;
/// every length is checked against the bytes present before anything is allocated.
pub(crate) fn read_setups(
    reader: &mut Reader<'_>,
    count: usize,
    check: impl Fn(usize, &PublicSetup) -> Result<(), String>,
) -> Result<Vec<PublicSetup>, PirError> {
    let mut setups = Vec::with_capacity(count.min(reader.rest().len() / 8));
    for i in 0..count {
        let len = reader.u64()?;
        let len = usize::try_from(len)
            .map_err(|_| reader.error(format!("sub-database {i} is {len} bytes long")))?;
        let setup = PublicSetup::from_bytes(reader.take(len)?)?;
        check(i, &setup).map_err(|reason| reader.error(reason))?;
        setups.push(setup);
    }
    Ok(setups)
}

/// The server side: one LWE database per shard.
#[derive(Clone)]
pub(crate) struct ShardServers {
    servers: Vec<Server>,
}

impl ShardServers {
    /// Builds one database of `record_bytes`-byte records per entry of `contents` (in parallel),
    /// with `options(records)` for a database of that many records; `progress(done, total)`
    /// counts finished databases.
    pub(crate) fn from_records(
        contents: &[Vec<u8>],
        record_bytes: u64,
        options: &(dyn Fn(u64) -> EngineOptions + Sync),
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let (done, total) = (AtomicU64::new(0), contents.len() as u64);
        let servers = contents
            .par_iter()
            .map(|records| {
                let options = options(records.len() as u64 / record_bytes);
                let server = Server::from_records(records, record_bytes, options, &|_, _| {})?;
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

    /// The databases, in shard order, to update.
    pub(crate) fn servers_mut(&mut self) -> &mut [Server] {
        &mut self.servers
    }

    /// Their public setups, in shard order.
    pub(crate) fn public_setups(&self) -> Vec<PublicSetup> {
        self.servers
            .iter()
            .map(|s| s.public_setup().clone())
            .collect()
    }

    /// The shards' matrices, in shard order.
    pub(crate) fn matrices(&self) -> Vec<&obscura_math::matrix::PlaintextMatrix> {
        self.servers.iter().map(Server::database).collect()
    }

    /// Shards from their setups and stored matrices, in shard order.
    pub(crate) fn from_parts(
        setups: &[PublicSetup],
        matrices: Vec<obscura_math::matrix::PlaintextMatrix>,
        what: &'static str,
    ) -> Result<Self, PirError> {
        check_count(what, matrices.len(), setups.len())?;
        let servers = setups
            .iter()
            .zip(matrices)
            .map(|(setup, matrix)| Server::from_parts(setup.clone(), matrix))
            .collect::<Result<_, _>>()?;
        Ok(Self { servers })
    }

    /// Answers several requests of one query per shard: each shard answers its queries of all
    /// requests in one pass, the shards in parallel.
    pub(crate) fn answer_batch(
        &self,
        requests: &[Shards<Query>],
        what: &'static str,
    ) -> Result<Vec<Shards<Answer>>, PirError> {
        for request in requests {
            check_count(what, request.0.len(), self.servers.len())?;
        }
        let by_shard = self
            .servers
            .par_iter()
            .enumerate()
            .map(|(shard, server)| {
                let queries: Vec<Query> = requests.iter().map(|r| r.0[shard].clone()).collect();
                server.answer_batch(&queries)
            })
            .collect::<Result<Vec<_>, PirError>>()?;
        let mut replies: Vec<Vec<Answer>> = (0..requests.len())
            .map(|_| Vec::with_capacity(self.servers.len()))
            .collect();
        for answers in by_shard {
            for (reply, answer) in replies.iter_mut().zip(answers) {
                reply.push(answer);
            }
        }
        Ok(replies.into_iter().map(Shards).collect())
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
