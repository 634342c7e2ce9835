//! The `treepir-setup` and `treepir-e2e` presets (`docs/workloads.md`, "Batch PIR of Merkle
//! proofs"): TreePIR's colouring and table-free client indexing against the batch-code
//! baseline's placement and indexing, and whole Merkle proofs retrieved with both on the same
//! LWE engine.

pub mod report;

use anyhow::{ensure, Context, Result};
use obscura_pir::batch::coloring::{self, Coloring, MAX_COLORED_HEIGHT};
use obscura_pir::batch::merkle::{leaf_hash, Hash, MerkleTree};
use obscura_pir::batch::pbc::{self, bucket_count, PbcProofClient, PbcServer, Placement};
use obscura_pir::batch::swapped;
use obscura_pir::batch::treepir::{TreePirClient, TreePirServer};
use obscura_pir::lwe::{Answer, EngineOptions, Query, Server};
use obscura_pir::{PirError, PirServer};

use crate::lwe::layout_name;
use crate::lwe::report::Report;
use crate::measure::{generate, median, timed};
use crate::memory::peak_of;
use crate::report::Params;
use obscura_math::threads::Pools;
use report::{
    PbcSetupRow, ProofBytes, ProofScheme, ProofSeconds, TreePir, TreePirE2eRow, TreePirReport,
    TreePirSetupRow,
};

/// Leaves whose TreePIR indexing is timed and checked per height.
const INDEXING_LEAVES: u64 = 1001;

/// Leaves whose PBC indexing is timed and checked per height (each re-hashes the whole tree).
const PBC_INDEXING_LEAVES: u64 = 3;

/// The largest height whose class lists are built to check the indexing (2^21 nodes).
const CLASSES_MAX_HEIGHT: u32 = 20;

/// The largest height at which the baseline is placed: 3 · 2^25 entries; at 30 it would take
/// 3 · 2^31.
const PBC_MAX_HEIGHT: u32 = 24;

/// The largest height `treepir-e2e` accepts: the tree, its sub-databases and three copies for
/// the baseline take about 10 GiB at 24.
const E2E_MAX_HEIGHT: u32 = 24;

/// Proofs retrieved per height and scheme.
const PROOFS: u64 = 3;

/// The baseline's public hash seed.
const PBC_SEED: u64 = 11;

/// Runs `treepir-setup` at every height of `heights`.
pub fn setup(heights: &[u32], pools: &Pools, base: &Report) -> Result<TreePirReport> {
    check_heights(heights, MAX_COLORED_HEIGHT)?;
    let rows = heights
        .iter()
        .map(|&h| setup_row(h, pools).with_context(|| format!("height {h}")))
        .collect::<Result<_>>()?;
    let treepir = TreePir {
        setup: rows,
        ..TreePir::default()
    };
    Ok(TreePirReport::new(base, treepir))
}

/// Runs `treepir-e2e` at every height of `heights`, sub-databases set up with `options`.
pub fn e2e(
    heights: &[u32],
    options: EngineOptions,
    pools: &Pools,
    base: &Report,
) -> Result<TreePirReport> {
    check_heights(heights, E2E_MAX_HEIGHT)?;
    let rows = heights
        .iter()
        .map(|&h| e2e_row(h, options, pools).with_context(|| format!("height {h}")))
        .collect::<Result<_>>()?;
    let treepir = TreePir {
        layout: Some(layout_name(options.layout)),
        e2e: rows,
        ..TreePir::default()
    };
    Ok(TreePirReport::new(base, treepir))
}

/// Refuses heights outside `1 ..= max`.
fn check_heights(heights: &[u32], max: u32) -> Result<()> {
    ensure!(
        heights.iter().all(|h| (1..=max).contains(h)),
        "--heights must be between 1 and {max} for this preset"
    );
    Ok(())
}

/// `count` deterministic pseudo-random leaves of the tree of height `h`.
fn sample_leaves(h: u32, count: u64) -> Result<Vec<u64>> {
    let words = generate(count, 8)?;
    Ok(words
        .chunks_exact(8)
        .map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes")) % (1 << h))
        .collect())
}

/// TreePIR's colouring and indexing at height `h`, and the baseline's up to [`PBC_MAX_HEIGHT`].
fn setup_row(h: u32, pools: &Pools) -> Result<TreePirSetupRow> {
    let (coloring, coloring_seconds) = timed(|| Coloring::balanced(h));
    let coloring = coloring?;
    let classes = (h <= CLASSES_MAX_HEIGHT).then(|| coloring.classes());
    let mut times = Vec::new();
    let mut correct = true;
    for m in sample_leaves(h, INDEXING_LEAVES)? {
        let (positions, seconds) =
            timed(|| coloring::path_positions(h, &coloring::balanced_sizes(h), m));
        times.push(seconds);
        correct &= indexing_agrees(&coloring, classes.as_deref(), m, &positions?);
    }
    let pbc = (h <= PBC_MAX_HEIGHT)
        .then(|| pbc_setup_row(h, pools))
        .transpose()?;
    Ok(TreePirSetupRow {
        height: h,
        nodes: coloring::nodes(h),
        coloring_seconds,
        indexing_seconds: median(times),
        indexing_leaves: INDEXING_LEAVES,
        classes_checked: classes.is_some(),
        correct: correct && pbc.as_ref().is_none_or(|(_, correct)| *correct),
        pbc: pbc.map(|(row, _)| row),
    })
}

/// Whether `positions`, the indexing of leaf `m`, gives every node on its path the colour
/// `coloring` gives it, each colour once, and (with `classes`) the node's place in its class.
fn indexing_agrees(
    coloring: &Coloring,
    classes: Option<&[Vec<u64>]>,
    m: u64,
    positions: &[(u8, u64)],
) -> bool {
    let h = coloring.height();
    let mut seen = vec![false; h as usize];
    positions.len() == h as usize
        && swapped::path_nodes(h, m)
            .into_iter()
            .zip(positions)
            .all(|(v, &(color, position))| {
                coloring.color(v) == color
                    && !std::mem::replace(&mut seen[usize::from(color)], true)
                    && classes.is_none_or(|classes| {
                        classes[usize::from(color)].get(position as usize) == Some(&v)
                    })
            })
}

/// The baseline's placement and indexing at height `h`, and whether every assignment was valid.
fn pbc_setup_row(h: u32, pools: &Pools) -> Result<(PbcSetupRow, bool)> {
    let placement = Placement::new(coloring::nodes(h), bucket_count(h as usize), PBC_SEED);
    let (contents, setup_seconds) = timed(|| placement.bucket_contents());
    let (mut times, mut unmatched, mut correct) = (Vec::new(), 0, true);
    for m in sample_leaves(h, PBC_INDEXING_LEAVES)? {
        let items = pbc::proof_items(h, m);
        let (places, seconds) = timed(|| pools.one.install(|| pbc_index(&placement, &items)));
        match places {
            Some(places) => {
                times.push(seconds);
                correct &= pbc_places_valid(&placement, &contents, &items, &places);
            }
            None => unmatched += 1,
        }
    }
    let row = PbcSetupRow {
        buckets: placement.buckets(),
        setup_seconds,
        indexing_seconds: median(times),
        indexing_leaves: PBC_INDEXING_LEAVES,
        unmatched,
    };
    Ok((row, correct))
}

/// The baseline client's indexing of a batch: each item's bucket and its position there;
/// `None` when the batch cannot be matched to buckets.
fn pbc_index(placement: &Placement, items: &[u64]) -> Option<Vec<(usize, u64)>> {
    let buckets = placement.assign(items)?;
    Some(
        items
            .iter()
            .zip(buckets)
            .map(|(&item, bucket)| (bucket, placement.position(bucket, item)))
            .collect(),
    )
}

/// Whether `places` give the items distinct buckets among their candidates, and positions
/// where those buckets' contents hold them.
fn pbc_places_valid(
    placement: &Placement,
    contents: &[Vec<u64>],
    items: &[u64],
    places: &[(usize, u64)],
) -> bool {
    let mut buckets: Vec<usize> = places.iter().map(|&(bucket, _)| bucket).collect();
    buckets.sort_unstable();
    buckets.dedup();
    buckets.len() == items.len()
        && items
            .iter()
            .zip(places)
            .all(|(&item, &(bucket, position))| {
                placement.candidates(item).contains(&bucket)
                    && contents[bucket].get(position as usize) == Some(&item)
            })
}

/// Both schemes on the tree of `2^h` random 32-byte leaves, sub-databases set up with `options`.
fn e2e_row(h: u32, options: EngineOptions, pools: &Pools) -> Result<TreePirE2eRow> {
    let data = generate(1 << h, 32)?;
    let leaves: Vec<&[u8]> = data.chunks_exact(32).collect();
    let (tree, tree_seconds) = timed(|| pools.all.install(|| MerkleTree::from_leaves(&leaves)));
    let picked = sample_leaves(h, PROOFS)?;
    let (treepir, treepir_correct) = treepir_scheme(&tree, &leaves, &picked, options, pools)?;
    let (pbc, pbc_correct) = pbc_scheme(&tree, &leaves, &picked, options, pools)?;
    Ok(TreePirE2eRow {
        height: h,
        leaves: tree.len(),
        tree_seconds,
        treepir,
        pbc,
        correct: treepir_correct && pbc_correct,
    })
}

/// One measured proof retrieval.
struct Proof {
    seconds: ProofSeconds,
    bytes: ProofBytes,
    correct: bool,
}

/// TreePIR set up on `tree`, proofs of the `picked` leaves retrieved and checked.
fn treepir_scheme(
    tree: &MerkleTree,
    leaves: &[&[u8]],
    picked: &[u64],
    options: EngineOptions,
    pools: &Pools,
) -> Result<(ProofScheme, bool)> {
    let ((server, setup), peak) = peak_of(|| {
        timed(|| {
            pools
                .all
                .install(|| TreePirServer::from_tree(tree, options, &|_, _| {}))
        })
    });
    let server = server?;
    let mut client = TreePirClient::new(server.public_setup().clone());
    let proofs = picked
        .iter()
        .map(|&m| {
            let leaf = leaf_hash(leaves[m as usize]);
            measure_proof(
                server.databases(),
                pools,
                &mut client,
                |client| client.query(m),
                |queries| server.answer(queries),
                |client, state, answers| Ok(client.decode(state, answers, &leaf)?),
                tree.audit_path(m),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(scheme(server.databases(), (setup, peak), &proofs, 0))
}

/// The baseline set up on the swapped tree of `tree` (3 copies in ⌈1.5h⌉ buckets), proofs of
/// the `picked` leaves retrieved and checked; a leaf whose path cannot be matched to buckets is
/// counted and skipped.
fn pbc_scheme(
    tree: &MerkleTree,
    leaves: &[&[u8]],
    picked: &[u64],
    options: EngineOptions,
    pools: &Pools,
) -> Result<(ProofScheme, bool)> {
    let ((server, setup), peak) = peak_of(|| {
        timed(|| {
            pools
                .all
                .install(|| PbcServer::for_merkle_tree(tree, PBC_SEED, options))
        })
    });
    let server = server?;
    let placement = *server.public_setup().placement();
    let mut client = PbcProofClient::new(server.public_setup().clone(), tree.len(), tree.root())?;
    let (mut proofs, mut unmatched) = (Vec::new(), 0);
    for &m in picked {
        if placement
            .assign(&pbc::proof_items(tree.height(), m))
            .is_none()
        {
            unmatched += 1;
            continue;
        }
        let leaf = leaf_hash(leaves[m as usize]);
        proofs.push(measure_proof(
            server.databases(),
            pools,
            &mut client,
            |client| client.query(m),
            |queries| server.answer(queries),
            |client, state, answers| Ok(client.decode(state, answers, &leaf)?),
            tree.audit_path(m),
        )?);
    }
    Ok(scheme(
        server.databases(),
        (setup, peak),
        &proofs,
        unmatched,
    ))
}

/// Measures one audit-path request: `query` makes it (one thread), the sub-databases answer it (see
/// [`serve`]), `decode` turns the answers into a verified audit path (one thread), which is
/// correct if it equals `expected`.
fn measure_proof<C: Send + Sync, S: Send>(
    databases: &[Server],
    pools: &Pools,
    client: &mut C,
    query: impl FnOnce(&mut C) -> Result<(Vec<Query>, S), PirError> + Send,
    answer: impl FnOnce(&[Query]) -> Result<Vec<Answer>, PirError> + Send,
    decode: impl FnOnce(&C, S, &[Answer]) -> Result<Vec<Hash>> + Send,
    expected: Option<Vec<Hash>>,
) -> Result<Proof> {
    let (request, query_seconds) = timed(|| pools.one.install(|| query(client)));
    let (queries, state) = request?;
    let (answers, mut seconds) = serve(databases, &queries, pools, answer)?;
    let (path, decode_seconds) = timed(|| pools.one.install(|| decode(client, state, &answers)));
    (seconds.query, seconds.decode) = (query_seconds, decode_seconds);
    Ok(Proof {
        seconds,
        bytes: ProofBytes {
            query: queries.iter().map(|q| q.to_bytes().len() as u64).sum(),
            answer: answers.iter().map(|a| a.to_bytes().len() as u64).sum(),
            ..ProofBytes::default()
        },
        correct: path.ok() == expected,
    })
}

/// The server times of one request: each sub-database answering its query alone on one thread
/// (the slowest and the total), and `answer` answering the whole request on all threads (wall
/// time), whose answers are returned.
fn serve(
    databases: &[Server],
    queries: &[Query],
    pools: &Pools,
    answer: impl FnOnce(&[Query]) -> Result<Vec<Answer>, PirError> + Send,
) -> Result<(Vec<Answer>, ProofSeconds)> {
    let mut seconds = ProofSeconds::default();
    for (database, query) in databases.iter().zip(queries) {
        let (answered, elapsed) = timed(|| pools.one.install(|| database.answer(query)));
        answered?;
        seconds.server_max = seconds.server_max.max(elapsed);
        seconds.server_total += elapsed;
    }
    let (answers, wall) = timed(|| pools.all.install(|| answer(queries)));
    seconds.answer = wall;
    Ok((answers?, seconds))
}

/// A scheme's figures: its sub-databases' parameters, hints and storage, the setup's time and
/// peak memory and the median of each step over `proofs`; and whether every proof was correct.
fn scheme(
    databases: &[Server],
    (setup, setup_peak_bytes): (f64, Option<u64>),
    proofs: &[Proof],
    unmatched: u64,
) -> (ProofScheme, bool) {
    let step = |of: fn(&ProofSeconds) -> f64| {
        median(proofs.iter().map(|proof| of(&proof.seconds)).collect())
    };
    let seconds = ProofSeconds {
        setup,
        query: step(|s| s.query),
        server_max: step(|s| s.server_max),
        server_total: step(|s| s.server_total),
        answer: step(|s| s.answer),
        decode: step(|s| s.decode),
    };
    let setups = databases.iter().map(Server::public_setup);
    let bytes = ProofBytes {
        hint: setups.clone().map(|s| s.to_bytes().len() as u64).sum(),
        storage: setups
            .clone()
            .map(|s| s.geometry().records() * s.geometry().record_bytes())
            .sum(),
        ..proofs
            .first()
            .map_or(ProofBytes::default(), |proof| proof.bytes)
    };
    let figures = ProofScheme {
        databases: databases.len(),
        params: databases
            .first()
            .map_or(Params::default(), |db| Params::of(db.public_setup())),
        seconds,
        bytes,
        proofs: proofs.len() as u64,
        unmatched,
        setup_peak_bytes,
    };
    (figures, proofs.iter().all(|proof| proof.correct))
}
