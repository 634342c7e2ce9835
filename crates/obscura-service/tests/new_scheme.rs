//! A scheme defined outside Obscura's crates and added to a registry at run time is stored,
//! served over HTTP and queried end to end like the built-in ones; the same scheme registered
//! by one line behind the `test-scheme` feature needs no run-time registration.

use obscura_client::http::HttpClient;
use obscura_pir::lwe::Records;
use obscura_pir::{PirClient, PirServer};
use obscura_registry::{LoadError, Of, Registry};
use obscura_service::catalog::{Catalog, CatalogError};
use obscura_service::service::{BackgroundService, ServiceConfig};
use obscura_store::store::{self, InvalidFile, StoreError};
use obscura_test_scheme::{Whole, WholeClient, WholeQuery, WholeServer};

/// A code no registry line names: the scheme is known only once added at run time.
const UNREGISTERED: u8 = 0xE3;

type Unregistered = Whole<UNREGISTERED>;

#[test]
fn a_scheme_registered_in_one_line_is_stored_served_and_queried() {
    let data: Vec<u8> = (0..40 * 24u32).map(|i| (i * 7 % 251) as u8).collect();
    let records = Records::Raw {
        bytes: &data,
        record_bytes: 24,
    };
    let server = WholeServer::<UNREGISTERED>::build(records, (), &|_, _| {}).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("whole.obs");
    store::write_database(&path, &server.into()).unwrap();

    // Without the registration, the file is refused with a clear reason.
    let refused = Catalog::open(&[&path]).err().unwrap();
    assert!(
        matches!(
            &refused,
            CatalogError::Store(StoreError::Invalid {
                source: InvalidFile::Load(LoadError::UnknownKind(_)),
                ..
            })
        ),
        "{refused:?}"
    );
    let cause = std::error::Error::source(&refused).unwrap().to_string();
    assert!(
        cause.contains("which no scheme of this build serves"),
        "{cause}"
    );

    let registry = Registry::default().with(Of::<Unregistered>::ENTRY);
    let catalog = Catalog::open_with(&[&path], registry).unwrap();
    let service = BackgroundService::start(
        catalog,
        ServiceConfig::default(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    let http = HttpClient::new(&service.url(), None);
    let info = http.list().unwrap().remove(0);
    assert_eq!(
        (info.kind.as_str(), info.records, info.record_bytes),
        ("whole", 40, 24)
    );
    let setup = http.setup::<Unregistered>("whole").unwrap();
    let mut client = WholeClient::<UNREGISTERED>::new(setup.clone());
    for index in [0u64, 17, 39] {
        let (query, state) = client.query(index).unwrap();
        let answer = http.query::<Unregistered>("whole", &setup, &query).unwrap();
        let record = client.decode(state, &answer).unwrap();
        let start = index as usize * 24;
        assert_eq!(record, &data[start..start + 24], "record {index}");
    }
    let queries: Vec<WholeQuery<UNREGISTERED>> = (0..3).map(|_| WholeQuery::new(&setup)).collect();
    let answers = http
        .batch::<Unregistered>("whole", &setup, &queries)
        .unwrap();
    assert_eq!(answers.len(), 3);
    assert!(answers.iter().all(|answer| answer.records() == data));
}
