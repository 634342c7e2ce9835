//! A Merkle tree grown by appended leaves while served: consistency proofs from every earlier
//! size, served as JSON and verified by the client library, which fetches the new setup when
//! the served tree has grown past the one it holds.

mod common;

use std::path::Path;

use obscura_client::blocking::Client;
use obscura_client::http::HttpClient;
use obscura_client::ClientError;
use obscura_pir::batch::merkle::{self, Hash, MerkleTree};
use obscura_pir::batch::treepir::TreePirServer;
use obscura_pir::lwe::EngineOptions;
use obscura_registry::Registry;
use obscura_store::changes::read_for;
use obscura_store::store::{self, Database};
use obscura_store::update::update_file;

/// Leaves `leaf 0`, `leaf 1`, ...
fn leaves(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("leaf {i}").into_bytes()).collect()
}

/// Appends `new` to the tree in the file at `path`, as `obscura update` does.
fn append(path: &Path, new: &[Vec<u8>]) {
    let file = new.join(&b'\n');
    update_file(
        path,
        |listing| read_for(listing.lookup, listing.items, &file),
        &Registry::default(),
        0,
        &|_, _| {},
    )
    .unwrap();
}

/// The body and status of `GET path` of the service at `url`.
fn get(url: &str, path: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut reply = agent.get(format!("{url}{path}")).call().unwrap();
    let status = reply.status().as_u16();
    (status, reply.body_mut().read_to_string().unwrap())
}

#[test]
fn a_growing_tree_proves_every_earlier_version_is_its_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.obs");
    let all = leaves(90);
    let options = EngineOptions {
        capacity: Some(128),
        ..EngineOptions::default()
    };
    let tree = MerkleTree::from_leaves(&all[..20]);
    let server = TreePirServer::from_tree(&tree, options, &|_, _| {}).unwrap();
    store::write_database(&path, &Database::from(server)).unwrap();
    let service = common::serve_file(&path);
    let url = service.url();
    let mut client = Client::connect(HttpClient::new(&url, None), "log").unwrap();
    let mut heads: Vec<(u64, Hash)> = vec![(20, tree.root())];
    for end in [21, 40, 64, 90] {
        append(&path, &all[heads.last().unwrap().0 as usize..end]);
        assert!(common::reload(&service, &path).is_empty());
        let grown = MerkleTree::from_leaves(&all[..end]);
        // The client holds the previous version's setup: it fetches the new one and proves
        // every earlier head against it.
        for &(first, root) in &heads {
            let proved = client.consistency(first, &root).unwrap();
            assert_eq!((proved.second, proved.root), (end as u64, grown.root()));
            assert_eq!(Some(proved.proof), grown.consistency_proof(first));
        }
        assert_eq!(client.session().listing().items, end as u64);
        heads.push((end as u64, grown.root()));
        let path = client
            .audit_path(end as u64 - 1, Some(merkle::leaf_hash(&all[end - 1])), None)
            .unwrap();
        assert_eq!(path.root, grown.root());
    }
    // A head the tree never had is refused.
    let error = client.consistency(20, &heads[2].1).unwrap_err();
    assert!(matches!(error, ClientError::Inconsistent { .. }), "{error}");
    // The route refuses what is not a proof request.
    for (query, reason) in [
        ("?first=0", "first must be 1 to 90"),
        ("?first=91", "first must be 1 to 90"),
        ("?first=x", "?first=LEAVES"),
        ("", "?first=LEAVES"),
    ] {
        let (status, body) = get(&url, &format!("/v1/databases/log/consistency{query}"));
        assert_eq!(status, 400, "{query}");
        assert!(body.contains(reason), "{query}: {body}");
    }
    let (status, body) = get(&url, "/v1/databases/log/consistency?first=20");
    assert_eq!(status, 200);
    let info: obscura_client::api::ConsistencyInfo = serde_json::from_str(&body).unwrap();
    assert_eq!((info.first, info.second), (20, 90));
    assert_eq!(info.root, hex::encode(heads[4].1));
}
