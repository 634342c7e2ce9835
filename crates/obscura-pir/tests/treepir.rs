//! TreePIR and the batch-code baseline end to end on the LWE engine: every retrieved audit path
//! is the RFC 6962 one and verifies against the root; a wrong leaf or a mismatched answer is
//! refused.

use obscura_pir::batch::merkle::{leaf_hash, verify_audit_path, Hash, MerkleTree};
use obscura_pir::batch::pbc::{PbcClient, PbcServer};
use obscura_pir::batch::swapped;
use obscura_pir::batch::treepir::{TreePirClient, TreePirServer, TreePirSetup};
use obscura_pir::lwe::{EngineOptions, Layout};
use obscura_pir::PirError;

fn leaves(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("certificate {i}").into_bytes())
        .collect()
}

fn check_tree(n: usize, layout: Layout, leaves_to_check: &[u64]) {
    let data = leaves(n);
    let tree = MerkleTree::from_leaves(&data);
    let options = EngineOptions {
        layout,
        ..EngineOptions::default()
    };
    let server = TreePirServer::from_tree(&tree, options, &|_, _| {}).unwrap();
    let h = tree.height();
    assert_eq!(server.databases().len(), h as usize);
    // No node is stored twice: the sub-databases hold the 2^(h+1) - 2 non-root nodes.
    let stored: u64 = server
        .databases()
        .iter()
        .map(|db| db.public_setup().geometry().records())
        .sum();
    assert_eq!(stored, (2u64 << h) - 2);
    let mut client = TreePirClient::new(server.public_setup().clone());
    for &m in leaves_to_check {
        let (queries, state) = client.query(m).unwrap();
        assert_eq!(queries.len(), h as usize);
        let answers = server.answer(&queries).unwrap();
        let path = client
            .decode(state, &answers, &leaf_hash(&data[m as usize]))
            .unwrap();
        assert_eq!(Some(path), tree.audit_path(m), "n = {n}, leaf {m}");
    }
}

#[test]
fn every_leaf_of_small_trees() {
    for n in [1, 2, 3, 5, 7, 8, 9, 16, 33, 100, 129] {
        let all: Vec<u64> = (0..n as u64).collect();
        check_tree(n, Layout::Square, &all);
    }
}

#[test]
fn larger_trees_and_both_layouts() {
    check_tree(1000, Layout::OnePerColumn, &[0, 1, 511, 512, 998, 999]);
    check_tree(5000, Layout::Square, &[0, 4095, 4096, 4999]);
}

#[test]
fn wrong_leaves_and_bad_requests_are_refused() {
    let data = leaves(50);
    let tree = MerkleTree::from_leaves(&data);
    let server = TreePirServer::from_tree(&tree, EngineOptions::default(), &|_, _| {}).unwrap();
    let mut client = TreePirClient::new(server.public_setup().clone());
    let (queries, state) = client.query(7).unwrap();
    let answers = server.answer(&queries).unwrap();
    assert!(matches!(
        client.decode(state, &answers, &leaf_hash(&data[8])),
        Err(PirError::InvalidProof(_))
    ));
    assert!(matches!(
        client.query(50),
        Err(PirError::IndexOutOfRange { .. })
    ));
    assert!(server.answer(&queries[1..]).is_err());
    // Answers of another request decode to another path, which does not verify.
    let (queries_3, _) = client.query(3).unwrap();
    let (_, state_7) = client.query(7).unwrap();
    let answers_3 = server.answer(&queries_3).unwrap();
    assert!(client
        .decode(state_7, &answers_3, &leaf_hash(&data[7]))
        .is_err());
}

/// The baseline retrieves the same proofs from three copies of the swapped tree in 1.5h buckets.
#[test]
fn batch_code_baseline_retrieves_the_same_proofs() {
    for n in [2usize, 5, 64, 300] {
        let data = leaves(n);
        let tree = MerkleTree::from_leaves(&data);
        let h = tree.height();
        let entries: Vec<u8> = (2..2u64 << h)
            .flat_map(|v| swapped::entry(&tree, h, v))
            .collect();
        let server = PbcServer::from_records(
            &entries,
            32,
            h as usize,
            11,
            EngineOptions::default(),
            &|_, _| {},
        )
        .unwrap();
        let stored: u64 = server
            .databases()
            .iter()
            .map(|db| db.public_setup().geometry().records())
            .sum();
        assert!(stored >= 3 * ((2u64 << h) - 2), "three copies at least");
        let mut client = PbcClient::new(server.public_setup().clone());
        let mut retrieved = 0;
        for m in 0..n as u64 {
            let items: Vec<u64> = swapped::path_nodes(h, m).iter().map(|v| v - 2).collect();
            let Ok((queries, state)) = client.query(&items) else {
                continue; // an unmatched batch fails before anything is sent (rare)
            };
            assert_eq!(queries.len(), server.databases().len());
            let records = client
                .decode(state, &server.answer(&queries).unwrap())
                .unwrap();
            let by_level: Vec<Hash> = records
                .iter()
                .rev()
                .map(|r| r.as_slice().try_into().unwrap())
                .collect();
            let path = swapped::audit_path(n as u64, m, &by_level);
            let leaf = leaf_hash(&data[m as usize]);
            assert_eq!(
                verify_audit_path(m, n as u64, &leaf, &path, &tree.root()),
                Ok(())
            );
            assert_eq!(Some(path), tree.audit_path(m));
            retrieved += 1;
        }
        assert!(
            retrieved * 10 >= n * 9,
            "n = {n}: only {retrieved} batches matched"
        );
    }
}

/// A client that knows only the leaf index fetches the leaf's hash privately (second request),
/// then its proof, for every leaf of trees with and without promoted levels, one leaf included.
#[test]
fn leaf_hashes_are_fetched_privately_and_then_verified() {
    for n in [1usize, 2, 5, 7, 37] {
        let data = leaves(n);
        let tree = MerkleTree::from_leaves(&data);
        let server = TreePirServer::from_tree(&tree, EngineOptions::default(), &|_, _| {}).unwrap();
        let mut client = TreePirClient::new(server.public_setup().clone());
        for m in 0..n as u64 {
            let (queries, state) = client.query_leaf_hash(m).unwrap();
            assert_eq!(queries.len(), tree.height() as usize);
            let hash = client
                .decode_leaf_hash(state, &server.answer(&queries).unwrap())
                .unwrap();
            assert_eq!(hash, leaf_hash(&data[m as usize]), "n = {n}, leaf {m}");
            let (queries, state) = client.query(m).unwrap();
            let path = client
                .decode(state, &server.answer(&queries).unwrap(), &hash)
                .unwrap();
            assert_eq!(Some(path), tree.audit_path(m));
        }
        assert!(client.query_leaf_hash(n as u64).is_err());
    }
}

/// The public setup survives its encoding, a server rebuilt from its parts answers, and
/// truncated or altered encodings are refused without panicking.
#[test]
fn setup_encoding_round_trips_and_refuses_damage() {
    use obscura_pir::lwe::Server;
    let data = leaves(11);
    let tree = MerkleTree::from_leaves(&data);
    let built = TreePirServer::from_tree(&tree, EngineOptions::default(), &|_, _| {}).unwrap();
    let bytes = built.public_setup().to_bytes();
    let setup = TreePirSetup::from_bytes(&bytes).unwrap();
    assert_eq!(&setup, built.public_setup());
    assert_eq!(
        (setup.leaves(), setup.root(), setup.height()),
        (11, &tree.root(), 4)
    );

    let parts = || -> Vec<Server> {
        built
            .databases()
            .iter()
            .map(|db| Server::from_parts(db.public_setup().clone(), db.database().clone()).unwrap())
            .collect()
    };
    let mut fewer = parts();
    fewer.pop();
    assert!(TreePirServer::from_parts(setup.clone(), fewer).is_err());
    let mut swapped_parts = parts();
    swapped_parts.swap(0, 1);
    assert!(TreePirServer::from_parts(setup.clone(), swapped_parts).is_err());
    let server = TreePirServer::from_parts(setup.clone(), parts()).unwrap();
    let mut client = TreePirClient::new(setup);
    let (queries, state) = client.query(10).unwrap();
    let path = client
        .decode(
            state,
            &server.answer(&queries).unwrap(),
            &leaf_hash(&data[10]),
        )
        .unwrap();
    assert_eq!(Some(path), tree.audit_path(10));

    for cut in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
        assert!(
            TreePirSetup::from_bytes(&bytes[..cut]).is_err(),
            "cut {cut}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(TreePirSetup::from_bytes(&longer).is_err());
    // The leaf count, the height, the version, the root, a length, and the magic and record
    // count of a sub-database.
    for position in [40, 48, 49, 57, 89, 97, 144] {
        let mut altered = bytes.clone();
        altered[position] ^= 1;
        assert!(TreePirSetup::from_bytes(&altered).is_err(), "{position}");
    }
    let mut huge = bytes[..48].to_vec();
    huge[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(TreePirSetup::from_bytes(&huge).is_err());
}

/// The bytes of a setup of no sub-databases with a matching digest.
fn bare_setup(leaves: u64, height: u8) -> Vec<u8> {
    use sha2::{Digest as _, Sha256};
    let root = [9u8; 32];
    let mut hash = Sha256::new();
    hash.update(b"obscura/treepir/setup/v2");
    hash.update(leaves.to_le_bytes());
    hash.update(u32::from(height).to_le_bytes());
    hash.update(0u64.to_le_bytes());
    hash.update(root);
    let digest: [u8; 32] = hash.finalize().into();
    let mut bytes = Vec::new();
    obscura_pir::wire::write_header(&mut bytes, obscura_pir::wire::Kind::TREEPIR_SETUP, &digest);
    bytes.extend_from_slice(&leaves.to_le_bytes());
    bytes.push(height);
    bytes.extend_from_slice(&0u64.to_le_bytes());
    bytes.extend_from_slice(&root);
    bytes
}

/// A setup that claims a tree of no leaves, or more leaves than its height holds, is refused
/// even with a matching digest; one leaf at height 0 is a tree.
#[test]
fn a_setup_of_no_leaves_or_too_many_is_refused() {
    for (leaves, height, reason) in [
        (0, 0, "at least one leaf"),
        (3, 1, "3 leaves do not fit a tree of height 1"),
    ] {
        let refused = TreePirSetup::from_bytes(&bare_setup(leaves, height));
        assert!(
            matches!(&refused, Err(PirError::Malformed { reason: r, .. }) if r.contains(reason)),
            "{:?}",
            refused.err()
        );
    }
    let one = TreePirSetup::from_bytes(&bare_setup(1, 0)).unwrap();
    assert_eq!((one.leaves(), one.height(), one.capacity()), (1, 0, 1));
}
