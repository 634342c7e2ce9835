//! The server's side of KKRT-PSI: the OPRF sender; it learns the intersection only when both
//! learn.

use obscura_math::sample::OsSampler;
use rayon::prelude::*;
use zeroize::Zeroize;

use super::{Session, FRAME_BLOCKS};
use crate::block::random_word;
use crate::chunk::{recv_array, recv_exact, CHUNK_ITEMS};
use crate::cuckoo::{BinHasher, HASHES, SEED_BYTES};
use crate::ot::code::{item_hashes, Row, CODE_WORDS};
use crate::ot::kkrt::{Sender, BLOCK_BYTES, BLOCK_ROWS};
use crate::shuffle::random_permutation;
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::{positions, PsiError, Stage};

/// Items per parallel task when computing tags.
const TASK_ITEMS: usize = 512;
/// Rows of `Q` reserved before the client's frames arrive (more are added as they come, so an
/// announced set size alone cannot make the server reserve memory).
const RESERVED_ROWS: usize = 1 << 21;

/// Runs the server's steps; with both learn, returns which distinct items are in the
/// intersection.
pub(super) fn run<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
    rng: &mut OsSampler,
) -> Result<Option<Vec<bool>>, PsiError> {
    let mut choices: Row = [0; CODE_WORDS];
    for word in &mut choices {
        *word = random_word(rng)?;
    }
    let mut seeds = crate::ot::base::receive_over(transport, &choices, rng)?;
    let sender = Sender::new(choices, &seeds);
    seeds.zeroize();
    choices.zeroize();
    // Our own work first, while the client places its items.
    let hashes = item_hashes(unique.values());
    let order = random_permutation(unique.len(), rng)?;
    let seed: [u8; SEED_BYTES] = recv_array(transport, FrameKind::CuckooSeed)?;
    let hasher = BinHasher::new(&seed, session.bins);
    let rows = receive_extension(session, transport, &sender)?;
    send_tags(session, transport, &sender, &hasher, &hashes, &rows, &order)?;
    positions::receive_if_both_learn(
        session.both_learn,
        transport,
        session.n_client,
        session.n_server,
        &order,
    )
}

/// Receives `U` frame by frame (each exactly the blocks due) and returns the rows of `Q`.
fn receive_extension<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    sender: &Sender,
) -> Result<Vec<Row>, PsiError> {
    let bins = session.bins as usize;
    let blocks = bins / BLOCK_ROWS;
    let mut rows: Vec<Row> = Vec::with_capacity(bins.min(RESERVED_ROWS));
    let mut received = 0;
    while received < blocks {
        let count = (blocks - received).min(FRAME_BLOCKS);
        let u = recv_exact(transport, FrameKind::OtExtension, count * BLOCK_BYTES)?;
        rows.resize((received + count) * BLOCK_ROWS, [0; CODE_WORDS]);
        sender.decode(received as u64, &u, &mut rows[received * BLOCK_ROWS..]);
        received += count;
        (session.progress)(Stage::PeerItems, rows.len() as u64, bins as u64);
    }
    Ok(rows)
}

/// Sends, for our items in the shuffled `order`, the tags `F(h_t(y), y)` of each item's three
/// bins, chunk by chunk.
fn send_tags<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    sender: &Sender,
    hasher: &BinHasher,
    hashes: &[u128],
    rows: &[Row],
    order: &[usize],
) -> Result<(), PsiError> {
    let tag_bytes = session.tag_bytes;
    let item_bytes = HASHES * tag_bytes;
    let mut sent = 0u64;
    for chunk in order.chunks(CHUNK_ITEMS) {
        let mut tags = vec![0u8; chunk.len() * item_bytes];
        chunk
            .par_chunks(TASK_ITEMS)
            .zip(tags.par_chunks_mut(TASK_ITEMS * item_bytes))
            .for_each(|(items, tags)| {
                let hashes: Vec<u128> = items.iter().map(|&item| hashes[item]).collect();
                let mut codes = vec![[0; CODE_WORDS]; items.len()];
                sender.encode_items(&hashes, &mut codes);
                let mut bins = vec![[0; HASHES]; items.len()];
                hasher.bins_of(&hashes, &mut bins);
                // Gathered first, in a loop of independent loads, so that the cache misses of
                // these random rows overlap instead of each stalling a hash computation.
                let q: Vec<Row> = bins
                    .iter()
                    .flatten()
                    .map(|&bin| rows[bin as usize])
                    .collect();
                let items = codes.iter().zip(&bins).zip(q.chunks(HASHES));
                for (((code, bins), q), tags) in items.zip(tags.chunks_mut(item_bytes)) {
                    for ((&bin, q), tag) in bins.iter().zip(q).zip(tags.chunks_mut(tag_bytes)) {
                        sender.evaluate(u64::from(bin), q, code, tag);
                    }
                }
            });
        transport.send(FrameKind::ServerTags, &tags)?;
        sent += chunk.len() as u64;
        (session.progress)(Stage::OwnItems, sent, session.n_server);
    }
    Ok(())
}
