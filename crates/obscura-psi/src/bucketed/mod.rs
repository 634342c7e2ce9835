//! Sets larger than memory: both parties split their items into buckets on disk by a shared
//! keyed hash and run the protocol bucket by bucket over one connection, so a party holds one
//! bucket at a time (memory grows with the bucket size, not with the set).
//!
//! # Protocol
//!
//! 1. Each party sends its opening: the session's handshake (protocol, role, options: checked
//!    now, before any input is read), the bucket size it asks for (both must ask for the same)
//!    and a 32-byte nonce from the OS CSPRNG. The bucketing key is derived from both nonces, so
//!    neither party chooses it alone.
//! 2. Each party reads its input once, writing every row to one of 256 files by the top bits
//!    of its keyed hash (SipHash-2-4, a PRF), and sends its row count.
//! 3. Both derive the same [`BucketPlan`]: `B = ⌈max(n_c, n_s) / bucket_items⌉` buckets (at
//!    most [`plan::MAX_BUCKETS`]), the item of hash `h` going to bucket `h · B / 2^64`.
//! 4. For each bucket in turn, each party reads it back from the files that hold its hashes,
//!    removes duplicates, **pads it with random dummy items to the plan's padded size** and runs
//!    the chosen protocol on it (as [`crate::run`] does). A thread of its own reads and prepares
//!    the next bucket while a bucket's session runs (two buckets in memory at most).
//!
//! # What it reveals
//!
//! Beyond the plain protocol: each party's row count (duplicates included) instead of its
//! distinct-item count. Bucket sizes are not revealed: every bucket of a party enters the
//! protocol with the same number of items, a bound that a bucket of distinct items exceeds
//! with probability at most `2^-40` (see [`plan::padded_size`]; padding costs under 1% at
//! 2^20 items per bucket). A bucket that exceeds it anyway ends the session with
//! [`PsiError::BucketOverflow`] rather than reveal its size. Dummies are random and one byte
//! longer than the bucket's longest item (at least 32 bytes), so none equals a real item of
//! the party; one matches a peer's item with probability at most 2^-256 per pair, and matched
//! dummies are dropped.

pub mod plan;
mod spill;

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use obscura_math::sample::OsSampler;

pub use plan::BucketPlan;
pub use spill::MAX_ITEM_BYTES;

use crate::hello::Hello;
use crate::unique::{self, UniqueItems};
use crate::wire::FrameKind;
use crate::{run_unique, Options, PeerError, PsiError, Role, Stage, Transport};

/// Both ways: the session's handshake, the bucket size and a key nonce (the bucketed driver's
/// kinds count from 32).
pub const BUCKET_PLAN: FrameKind = FrameKind::new(32, "bucket-plan");
/// Both ways: the party's row count, once its input is read.
pub const BUCKET_ROWS: FrameKind = FrameKind::new(33, "bucket-rows");

/// A party's items, read once, in order (row numbers count from 0 in that order).
pub trait ItemSource {
    /// Calls `visit` with every item in order; stops at the first error (of reading or of
    /// `visit`).
    fn for_each(
        &self,
        visit: &mut dyn FnMut(&[u8]) -> Result<(), PsiError>,
    ) -> Result<(), PsiError>;
}

impl<I: AsRef<[u8]>> ItemSource for [I] {
    fn for_each(
        &self,
        visit: &mut dyn FnMut(&[u8]) -> Result<(), PsiError>,
    ) -> Result<(), PsiError> {
        self.iter().try_for_each(|item| visit(item.as_ref()))
    }
}

/// How to run a bucketed session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketOptions {
    /// The protocol, role and options of every bucket's session.
    pub session: Options,
    /// The most items per bucket the parties aim for (both must choose the same).
    pub bucket_items: u64,
}

/// Rows of the input, as a set of row numbers (one bit per row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSet {
    words: Vec<u64>,
    len: u64,
}

impl RowSet {
    fn new(rows: u64) -> Self {
        Self {
            words: vec![0; rows.div_ceil(64) as usize],
            len: 0,
        }
    }

    fn insert(&mut self, row: u64) {
        let (word, bit) = ((row / 64) as usize, row % 64);
        if self.words[word] & (1 << bit) == 0 {
            self.words[word] |= 1 << bit;
            self.len += 1;
        }
    }

    /// Whether `row` is in the set.
    pub fn contains(&self, row: u64) -> bool {
        self.words
            .get((row / 64) as usize)
            .is_some_and(|word| word & (1 << (row % 64)) != 0)
    }

    /// The number of rows in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rows in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            (0..64)
                .filter(move |bit| word & (1 << bit) != 0)
                .map(move |bit| w as u64 * 64 + bit)
        })
    }
}

/// What a bucketed session reports to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketedOutcome {
    /// The rows whose item is in the intersection, for a party that learns it.
    pub intersection: Option<RowSet>,
    /// Distinct items in the intersection, for a party that learns it.
    pub intersection_size: Option<u64>,
    /// Rows read (duplicates included).
    pub rows: u64,
    /// Rows dropped because an earlier row of the same bucket holds the same item.
    pub duplicates_dropped: u64,
    /// The peer's row count.
    pub peer_rows: u64,
    /// The plan both parties followed.
    pub plan: BucketPlan,
    /// Bytes sent, frame headers included.
    pub bytes_sent: u64,
    /// Bytes received, frame headers included.
    pub bytes_received: u64,
    /// Time spent reading the input and writing it to disk.
    pub partition_time: Duration,
    /// Time from the start of the session to its end.
    pub elapsed: Duration,
}

/// A progress report of a bucketed session: `(bucket, buckets, stage, done, total)`.
pub type BucketProgress<'a> = &'a (dyn Fn(u64, u64, Stage, u64, u64) + Sync);

/// Runs a bucketed session over `transport` with the items of `source`, keeping the bucket files
/// under `folder` (a temporary sub-folder, removed at the end). See the [module docs](self).
pub fn run_bucketed<T: Transport + ?Sized, S: ItemSource + ?Sized>(
    transport: &mut T,
    source: &S,
    options: BucketOptions,
    folder: &Path,
    progress: BucketProgress<'_>,
) -> Result<BucketedOutcome, PsiError> {
    let started = Instant::now();
    options.session.check()?;
    let (sent_before, received_before) = (transport.bytes_sent(), transport.bytes_received());
    let role = options.session.role;
    let opening = plan::Opening {
        session: Hello {
            protocol: options.session.protocol,
            role,
            items: 0,
            both_learn: options.session.both_learn,
        },
        bucket_items: options.bucket_items,
        nonce: random_bytes(&mut OsSampler::new())?,
    };
    let key = plan::agree_key(transport, &opening)?;
    let partition_started = Instant::now();
    let spilled = spill::SpilledRows::write(folder, &key, source)?;
    let partition_time = partition_started.elapsed();
    let rows = spilled.rows();
    let (plan, peer_rows) = plan::agree_plan(transport, role, rows, options.bucket_items)?;

    let padded = plan.padded_size(role);
    let peer_role = match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    };
    let learns = role == Role::Client || options.session.both_learn;
    let mut found = learns.then(|| (RowSet::new(rows), 0u64));
    let mut duplicates_dropped = 0;
    let buckets = plan.buckets();
    std::thread::scope(|scope| -> Result<(), PsiError> {
        // Bucket `b + 1` is prepared aside while bucket `b`'s session runs.
        let spawn = |b: u64| {
            let (spilled, plan) = (&spilled, &plan);
            std::thread::Builder::new()
                .name(format!("bucket-{b}"))
                .spawn_scoped(scope, move || prepare_aside(spilled, plan, b, padded))
                .map_err(PsiError::Thread)
        };
        let mut next: Option<std::thread::ScopedJoinHandle<'_, Result<PreparedBucket, PsiError>>> =
            None;
        for b in 0..buckets {
            let prepared = match next.take() {
                Some(aside) => aside
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?,
                // The first bucket: nothing to overlap, so on the whole pool.
                None => prepare(&spilled, &plan, b, padded)?,
            };
            let PreparedBucket {
                bucket,
                first_rows,
                dummies,
            } = prepared;
            next = (b + 1 < buckets).then(|| spawn(b + 1)).transpose()?;
            let items = bucket.items();
            let mut unique = UniqueItems::from_first_rows(&items, first_rows);
            duplicates_dropped += unique.duplicates() as u64;
            unique.extend_distinct(&dummies);
            let real = items.len();
            transport.bucket(b);
            let outcome = run_unique(
                transport,
                &unique,
                options.session,
                &|stage, done, total| progress(b, buckets, stage, done, total),
            )?;
            let expected = plan.padded_size(peer_role);
            if outcome.peer_items != expected {
                return Err(PeerError::BucketSize {
                    bucket: b,
                    items: outcome.peer_items,
                    expected,
                }
                .into());
            }
            if let (Some(intersection), Some((set, size))) = (outcome.intersection, found.as_mut())
            {
                let real_rows: Vec<usize> = intersection
                    .rows
                    .into_iter()
                    .filter(|&row| row < real)
                    .collect();
                // Distinct matched items, by the index of their value (no hashing of the items).
                let mut matched = vec![false; unique.len()];
                for row in real_rows {
                    set.insert(bucket.rows[row]);
                    matched[unique.value_of_row()[row]] = true;
                }
                *size += matched.iter().filter(|&&m| m).count() as u64;
            }
        }
        Ok(())
    })?;
    let (intersection, intersection_size) = found.unzip();
    Ok(BucketedOutcome {
        intersection,
        intersection_size,
        rows,
        duplicates_dropped,
        peer_rows,
        plan,
        bytes_sent: transport.bytes_sent() - sent_before,
        bytes_received: transport.bytes_received() - received_before,
        partition_time,
        elapsed: started.elapsed(),
    })
}

/// A bucket read back, de-duplicated and with its padding: what its session needs.
struct PreparedBucket {
    bucket: spill::Bucket,
    /// [`unique::first_rows`] of its items.
    first_rows: Vec<usize>,
    dummies: Vec<Vec<u8>>,
}

/// [`prepare`] on a one-thread pool on the calling thread, so that it takes at most one core
/// from the session it overlaps.
fn prepare_aside(
    spilled: &spill::SpilledRows,
    plan: &BucketPlan,
    b: u64,
    padded: u64,
) -> Result<PreparedBucket, PsiError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()
        .map_err(|e| PsiError::Thread(std::io::Error::other(e)))?
        .install(|| prepare(spilled, plan, b, padded))
}

/// Reads bucket `b` of `plan` and prepares its session on the current rayon pool; refuses a
/// bucket of more than `padded` distinct items.
fn prepare(
    spilled: &spill::SpilledRows,
    plan: &BucketPlan,
    b: u64,
    padded: u64,
) -> Result<PreparedBucket, PsiError> {
    let bucket = spilled.read(plan, b)?;
    let items = bucket.items();
    let first_rows = unique::first_rows(&items);
    let distinct = first_rows
        .iter()
        .enumerate()
        .filter(|&(row, &first)| row == first)
        .count() as u64;
    if distinct > padded {
        return Err(PsiError::BucketOverflow {
            bucket: b,
            items: distinct,
            bound: padded,
        });
    }
    let longest = items.iter().map(|item| item.len()).max().unwrap_or(0);
    let dummies = dummy_items(padded - distinct, longest, &mut OsSampler::new())?;
    Ok(PreparedBucket {
        bucket,
        first_rows,
        dummies,
    })
}

fn random_bytes(rng: &mut OsSampler) -> Result<[u8; 32], PsiError> {
    let mut bytes = [0u8; 32];
    for word in bytes.chunks_exact_mut(8) {
        word.copy_from_slice(&rng.next_u64()?.to_le_bytes());
    }
    Ok(bytes)
}

/// `count` distinct random items, each one byte longer than `longest` (and at least 32 bytes),
/// so that none equals a real item.
fn dummy_items(count: u64, longest: usize, rng: &mut OsSampler) -> Result<Vec<Vec<u8>>, PsiError> {
    let len = longest.max(31) + 1;
    let mut dummies = HashSet::with_capacity(count as usize);
    while (dummies.len() as u64) < count {
        let mut dummy = Vec::with_capacity(len.next_multiple_of(8));
        while dummy.len() < len {
            dummy.extend_from_slice(&rng.next_u64()?.to_le_bytes());
        }
        dummy.truncate(len);
        dummies.insert(dummy);
    }
    Ok(dummies.into_iter().collect())
}
