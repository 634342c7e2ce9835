//! End-to-end retrieval over many shapes, the messages' codecs and checks, and the digit
//! decomposition the second layer rests on.

use obscura_math::pack;
use proptest::prelude::*;

use super::setup::{max_rows_per_record, ENTRY_BYTES};
use super::*;
use crate::lwe::{encode_database, EngineOptions, Geometry, Layout};
use crate::params::{MatrixKind, ParamSet};
use crate::test_data::data as bytes;
use crate::{PirClient, PirError, PirServer};

fn server(data: &[u8], record_bytes: u64, options: EngineOptions) -> Server {
    Server::from_records(data, record_bytes, options, &|_, _| {}).expect("setup")
}

/// Fetches `index` through encoded messages and checks it against the data.
fn check_record(server: &Server, client: &mut Client, data: &[u8], record_bytes: u64, index: u64) {
    let (query, state) = client.query(index).expect("query");
    let query = Query::from_bytes(&query.to_bytes(), server.public_setup()).expect("query codec");
    let answer = server.answer(&query).expect("answer");
    let answer = Answer::from_bytes(&answer.to_bytes(), client.setup()).expect("answer codec");
    let start = (index * record_bytes) as usize;
    let end = (start + record_bytes as usize).min(data.len());
    assert_eq!(
        client.decode(state, &answer).expect("decode"),
        &data[start..end],
        "record {index}"
    );
}

#[test]
fn records_of_every_shape_are_retrieved() {
    // (data bytes, record bytes, layout): single bytes, the 3-byte records of the ypir-small
    // workload, records that span rows, a short last record, one record per column, and a
    // first layer of 1,500 rows, past those whose second layer is answered on a transposed copy.
    let shapes = [
        (1, 1, Layout::Square),
        (1500 * 1500, 1, Layout::Square),
        (1000, 1, Layout::Square),
        (3000, 3, Layout::Square),
        (1700, 17, Layout::Square),
        (2999, 300, Layout::Square),
        (600, 3, Layout::OnePerColumn),
        (640, 64, Layout::PerColumn(3)),
    ];
    for (seed, (len, record_bytes, layout)) in shapes.into_iter().enumerate() {
        let data = bytes(len, seed as u64);
        let options = EngineOptions {
            layout,
            ..EngineOptions::default()
        };
        let server = server(&data, record_bytes, options);
        let mut client = Client::new(server.public_setup().clone());
        let records = (len as u64).div_ceil(record_bytes);
        for index in [0, records / 2, records - 1] {
            check_record(&server, &mut client, &data, record_bytes, index);
        }
    }
}

#[test]
fn a_uniform_public_matrix_and_another_set_work_too() {
    let data = bytes(500, 11);
    let options = EngineOptions {
        params: ParamSet::Hintless1408,
        matrix: Some(MatrixKind::Uniform),
        ..EngineOptions::default()
    };
    let server = server(&data, 5, options);
    let mut client = Client::new(server.public_setup().clone());
    for index in [0, 37, 99] {
        check_record(&server, &mut client, &data, 5, index);
    }
}

#[test]
fn values_come_back_with_their_lengths() {
    let values: Vec<Vec<u8>> = (0..50).map(|i| bytes(i % 7, i as u64)).collect();
    let server = Server::from_values(&values, EngineOptions::default(), &|_, _| {}).unwrap();
    let mut client = Client::new(server.public_setup().clone());
    for index in [0usize, 6, 49] {
        let (query, state) = client.query(index as u64).unwrap();
        let answer = server.answer(&query).unwrap();
        assert_eq!(client.decode(state, &answer).unwrap(), values[index]);
    }
}

#[test]
fn progress_grows_on_one_scale_and_the_footprint_covers_the_setup() {
    let data = bytes(5000, 2);
    let reports = std::sync::Mutex::new(Vec::new());
    let server = Server::from_records(&data, 5, EngineOptions::default(), &|done, total| {
        reports.lock().unwrap().push((done, total))
    })
    .unwrap();
    let reports = reports.into_inner().unwrap();
    let total = reports[0].1;
    assert!(reports.iter().all(|&(_, t)| t == total));
    assert!(reports.windows(2).all(|w| w[0].0 <= w[1].0));
    assert_eq!(reports.last(), Some(&(total, total)));

    let footprint = Server::footprint(5000, 5, EngineOptions::default()).unwrap();
    let matrices: u64 = server
        .matrices()
        .iter()
        .map(|m| (m.rows() * m.cols()) as u64)
        .sum();
    let setup = server.public_setup();
    let n = setup.first().params().n() as u64;
    let hints = (setup.first().geometry().rows() + setup.second().geometry().rows()) * n * 4;
    assert!(footprint.matrix_bytes() >= matrices);
    assert!(footprint.hint_bytes() >= hints);
}

#[test]
fn prepared_and_batched_queries_decode() {
    let data = bytes(4000, 3);
    let server = server(&data, 4, EngineOptions::default());
    let mut client = Client::new(server.public_setup().clone());
    client.preprocess(3).unwrap();
    assert_eq!(client.prepared(), 3);
    let indices = [5u64, 999, 5, 640];
    let (queries, states): (Vec<_>, Vec<_>) =
        indices.iter().map(|&i| client.query(i).unwrap()).unzip();
    assert_eq!(client.prepared(), 0);
    let answers = server.answer_batch(&queries).unwrap();
    for ((index, state), answer) in indices.iter().zip(states).zip(&answers) {
        let start = *index as usize * 4;
        assert_eq!(
            client.decode(state, answer).unwrap(),
            &data[start..start + 4]
        );
    }
    assert!(server.answer_batch(&[]).unwrap().is_empty());
}

#[test]
fn the_hint_does_not_grow_with_the_database() {
    let sizes: Vec<u64> = [1000usize, 20000]
        .into_iter()
        .map(|len| {
            let server = server(&bytes(len, 5), 1, EngineOptions::default());
            let setup = server.public_setup();
            let hint = setup.second().hint();
            (hint.rows() * hint.cols()) as u64
        })
        .collect();
    // 4n rows of 8-bit digits (one per byte of a hint row) times n.
    assert_eq!(sizes, [4096 * 1024, 4096 * 1024]);
}

#[test]
fn the_setup_and_the_matrices_make_the_same_server_again() {
    let data = bytes(900, 8);
    let built = server(&data, 3, EngineOptions::default());
    let setup = built.public_setup();
    let bytes = setup.to_bytes();
    assert_eq!(bytes.len() as u64, setup.encoded_len());
    let decoded = PublicSetup::from_bytes(&bytes).unwrap();
    assert_eq!(&decoded, setup);
    let matrices = built.matrices().into_iter().cloned().collect();
    let loaded = <Server as PirServer>::from_parts(decoded, matrices).unwrap();
    let mut client = Client::new(loaded.public_setup().clone());
    check_record(&loaded, &mut client, &data, 3, 123);

    // A changed byte of the first layer or of the second layer's parameters is refused (the
    // hint's own bytes are the store's checksum's to guard).
    for at in [60, 150] {
        let mut tampered = bytes.clone();
        tampered[at] ^= 1;
        assert!(PublicSetup::from_bytes(&tampered).is_err(), "byte {at}");
    }
    assert!(PublicSetup::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    // The matrices of another database do not fit.
    let other = server(&data[..300], 3, EngineOptions::default());
    let matrices = other.matrices().into_iter().cloned().collect();
    assert!(<Server as PirServer>::from_parts(setup.clone(), matrices).is_err());
}

#[test]
fn mismatched_and_malformed_messages_are_refused() {
    let data = bytes(300, 9);
    let (one, two) = (
        server(&data, 3, EngineOptions::default()),
        server(&data, 3, EngineOptions::default()),
    );
    let mut client = Client::new(one.public_setup().clone());
    let (query, state) = client.query(4).unwrap();
    let encoded = query.to_bytes();
    assert!(matches!(
        Query::from_bytes(&encoded, two.public_setup()),
        Err(PirError::SetupMismatch { .. })
    ));
    assert!(matches!(
        two.answer(&query),
        Err(PirError::SetupMismatch { .. })
    ));
    for cut in [0, 5, encoded.len() - 1] {
        assert!(Query::from_bytes(&encoded[..cut], one.public_setup()).is_err());
    }
    let mut longer = encoded.clone();
    longer.push(0);
    assert!(Query::from_bytes(&longer, one.public_setup()).is_err());
    let mut short = query.clone();
    short.second.pop();
    assert!(matches!(
        one.answer(&short),
        Err(PirError::Malformed { .. })
    ));

    let answer = one.answer(&query).unwrap();
    let encoded = answer.to_bytes();
    assert!(Answer::from_bytes(&encoded[..encoded.len() - 2], one.public_setup()).is_err());
    let other = Client::new(two.public_setup().clone());
    assert!(matches!(
        other.decode(state, &answer),
        Err(PirError::SetupMismatch { .. })
    ));
    assert!(matches!(
        client.query(100),
        Err(PirError::IndexOutOfRange { .. })
    ));
}

/// A server and the encodings of its setup, of a query and of its answer.
type Fixture = (Server, Vec<u8>, Vec<u8>, Vec<u8>);

/// A small database whose messages the hostile-input properties mutate, built once.
fn fixture() -> &'static Fixture {
    static FIXTURE: std::sync::OnceLock<Fixture> = std::sync::OnceLock::new();
    FIXTURE.get_or_init(|| {
        let server = server(&bytes(120, 4), 3, EngineOptions::default());
        let mut client = Client::new(server.public_setup().clone());
        let (query, _) = client.query(7).unwrap();
        let answer = server.answer(&query).unwrap();
        let setup = server.public_setup().to_bytes();
        (server, setup, query.to_bytes(), answer.to_bytes())
    })
}

/// `bytes` with the byte at `at` (modulo the length) xored with `flip`, cut to `cut` bytes.
fn mutated(bytes: &[u8], at: usize, flip: u8, cut: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if !out.is_empty() {
        let at = at % out.len();
        out[at] ^= flip;
    }
    out.truncate(cut);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Mutated or cut setups, queries and answers are refused or used without a panic: a
    /// setup that decodes serves a client, a query that decodes is answered, an answer that
    /// decodes is decoded (to any record or an error).
    #[test]
    fn hostile_messages_are_refused_or_used_without_panics(
        at in any::<usize>(),
        flip in any::<u8>(),
        cut in any::<usize>(),
    ) {
        let (server, setup, query, answer) = fixture();
        let setup_bytes = mutated(setup, at % 200, flip, cut.max(150));
        if let Ok(decoded) = PublicSetup::from_bytes(&setup_bytes) {
            let mut client = Client::new(decoded);
            let _ = client.query(0);
        }
        let query_bytes = mutated(query, at, flip, cut);
        if let Ok(decoded) = Query::from_bytes(&query_bytes, server.public_setup()) {
            prop_assert!(server.answer(&decoded).is_ok());
        }
        let answer_bytes = mutated(answer, at, flip, cut);
        if let Ok(decoded) = Answer::from_bytes(&answer_bytes, server.public_setup()) {
            let mut client = Client::new(server.public_setup().clone());
            let (_, state) = client.query(7).unwrap();
            let _ = client.decode(state, &decoded);
        }
    }

    /// The second layer's digits of a word (its little-endian bytes cut into `log_p`-bit
    /// digits, stored centered) read back, modulo p, into the word.
    #[test]
    fn words_survive_their_digits(
        words in proptest::collection::vec(any::<u32>(), 1..40),
        log_p in 1u8..=8,
    ) {
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let g = Geometry::with_log_p(data.len() as u64, ENTRY_BYTES, Layout::OnePerColumn, log_p)
            .unwrap();
        let digits = encode_database(&data, &g);
        let p = 1u16 << log_p;
        for (c, &word) in words.iter().enumerate() {
            let column: Vec<u8> = (0..g.rows() as usize)
                .map(|r| (i16::from(digits.get(r, c) as i8).rem_euclid(p as i16)) as u8)
                .collect();
            let mut back = [0u8; 4];
            pack::unpack_into(&column, u32::from(log_p), 0, &mut back);
            prop_assert_eq!(u32::from_le_bytes(back), word);
        }
    }

    /// The widest record found from the first eight records of a column is the widest of all.
    #[test]
    fn the_widest_record_is_among_the_first_eight(
        records in 1u64..200,
        record_bytes in 1u64..12,
        per_column in 1u64..40,
        log_p in 1u8..=8,
    ) {
        let per_column = per_column.min(records);
        let g = Geometry::new(records, record_bytes, records * record_bytes, per_column, log_p)
            .unwrap();
        let widest = (0..records).map(|i| g.locate(i).unwrap().row_count).max().unwrap();
        prop_assert_eq!(max_rows_per_record(&g), widest);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// After any sequence of updates both layers are those of a build of the final records with
    /// the same seeds (the first layer's digits, the second layer's digits of its hint, the
    /// clients' hint), every version's digest is new, and records decode to their final values.
    #[test]
    fn updates_leave_what_a_build_of_the_final_records_makes(
        records in 2usize..400,
        record_bytes in 1usize..5,
        rounds in proptest::collection::vec(proptest::collection::vec((any::<usize>(), any::<u8>()), 1..9), 1..3),
        seed in any::<u64>(),
    ) {
        let mut data = bytes(records * record_bytes, seed);
        let mut server = server(&data, record_bytes as u64, EngineOptions::default());
        let mut digests = vec![*server.public_setup().digest()];
        for round in &rounds {
            let mut changes: Vec<crate::Change> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for &(pick, byte) in round {
                let index = pick % records;
                if seen.insert(index) {
                    changes.push(crate::Change::Set { index: index as u64, value: vec![byte; record_bytes] });
                    data[index * record_bytes..][..record_bytes].fill(byte);
                }
            }
            prop_assert_eq!(server.update(&changes).unwrap(), None);
            digests.push(*server.public_setup().digest());
        }
        let setup = server.public_setup();
        let first = setup.first();
        let expected = encode_database(&data, first.geometry());
        prop_assert!(server.database() == &expected);
        prop_assert_eq!(first.row_norm(), expected.max_row_norm());
        let first_hint = obscura_math::hint::hint_product(&expected, &first.matrix_a(), &|_, _| {});
        let second = setup.second();
        let digits = super::server::word_digits(first_hint.as_slice(), second.geometry());
        prop_assert!(server.hint_digits() == &digits);
        let second_hint = obscura_math::hint::hint_product(&digits, &second.matrix_a(), &|_, _| {});
        prop_assert_eq!(second.hint(), &second_hint);
        prop_assert_eq!(second.version(), rounds.len() as u64);
        let distinct: std::collections::HashSet<_> = digests.iter().collect();
        prop_assert_eq!(distinct.len(), digests.len());
        let mut client = Client::new(setup.clone());
        for index in [0, records / 2, records - 1] {
            check_record(&server, &mut client, &data, record_bytes as u64, index as u64);
        }
    }
}

#[test]
fn an_update_that_does_not_apply_changes_nothing() {
    let data = bytes(3000, 3);
    let mut server = server(&data, 3, EngineOptions::default());
    let before = (server.public_setup().clone(), server.database().clone());
    let changes = [crate::Change::Set {
        index: 1000,
        value: vec![1; 3],
    }];
    assert!(matches!(
        server.update(&changes),
        Err(PirError::IndexOutOfRange { .. })
    ));
    let changes = [crate::Change::Set {
        index: 3,
        value: vec![1; 2],
    }];
    assert!(matches!(
        server.update(&changes),
        Err(PirError::InvalidParameters(_))
    ));
    assert!(server.public_setup() == &before.0 && server.database() == &before.1);
}

#[test]
fn decoding_a_database_gives_back_its_bytes() {
    for (len, record_bytes, layout, log_p) in [
        (1000u64, 1u64, Layout::Square, 8u8),
        (999, 7, Layout::Square, 5),
        (640, 64, Layout::PerColumn(3), 3),
        (4096, 4096, Layout::OnePerColumn, 6),
    ] {
        let data = bytes(len as usize, len);
        let geometry = Geometry::with_log_p(len, record_bytes, layout, log_p).unwrap();
        let matrix = encode_database(&data, &geometry);
        assert_eq!(
            crate::lwe::decode_database(&matrix, &geometry),
            data,
            "{len} {record_bytes} {log_p}"
        );
    }
}
