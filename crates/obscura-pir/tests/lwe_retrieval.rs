//! End-to-end retrieval with the LWE engine over many shapes, layouts and parameter sets,
//! compared with the plain records.

mod common;

use common::data;
use obscura_pir::lwe::{Client, EngineOptions, Layout, Server};
use obscura_pir::params::{MatrixKind, ParamSet};
use obscura_pir::{PirClient, PirError, PirServer};

fn expected(data: &[u8], record_bytes: usize, index: u64) -> &[u8] {
    let start = index as usize * record_bytes;
    &data[start..(start + record_bytes).min(data.len())]
}

fn retrieve(server: &Server, client: &mut Client, index: u64) -> Result<Vec<u8>, PirError> {
    let (query, state) = client.query(index)?;
    let answer = server.answer(&query)?;
    client.decode(state, &answer)
}

/// Retrieves the first, last and a spread of records, fresh and preprocessed.
fn check_shape(
    record_bytes: usize,
    records: usize,
    layout: Layout,
    set: ParamSet,
    matrix: MatrixKind,
) {
    // Make the last record short whenever records can be.
    let len = records * record_bytes - record_bytes / 2;
    let data = data(len, (record_bytes * 31 + records) as u64);
    let options = EngineOptions {
        params: set,
        layout,
        matrix: Some(matrix),
        value_bytes: None,
        capacity: None,
    };
    let server = Server::from_records(&data, record_bytes as u64, options, &|_, _| {}).unwrap();
    let mut client = Client::new(server.public_setup().clone());
    let last = records as u64 - 1;
    let mut indices = vec![0, last, last / 2, last / 3, (last * 7) / 9];
    indices.dedup();
    for &index in &indices {
        let got = retrieve(&server, &mut client, index).unwrap();
        assert_eq!(
            got,
            expected(&data, record_bytes, index),
            "fresh query, {record_bytes} B x {records}, {layout:?}, {set:?}, index {index}"
        );
    }
    client.preprocess(indices.len()).unwrap();
    assert_eq!(client.prepared(), indices.len());
    for &index in &indices {
        let got = retrieve(&server, &mut client, index).unwrap();
        assert_eq!(
            got,
            expected(&data, record_bytes, index),
            "prepared query, {record_bytes} B x {records}, {layout:?}, index {index}"
        );
    }
    assert_eq!(client.prepared(), 0);
}

const LAYOUTS: [Layout; 3] = [Layout::OnePerColumn, Layout::Square, Layout::PerColumn(3)];

/// Every record size and count whose database fits in 4 MiB, in every layout.
#[test]
fn all_shapes_and_layouts() {
    for record_bytes in [1, 3, 32, 1024, 4096, 65536] {
        for records in [1, 2, 1000, 1 << 16] {
            if record_bytes * records > 4 << 20 {
                continue;
            }
            for layout in LAYOUTS {
                check_shape(
                    record_bytes,
                    records,
                    layout,
                    ParamSet::default(),
                    MatrixKind::Negacyclic,
                );
            }
        }
    }
}

/// The uniform (plain LWE) matrix over a spread of shapes.
#[test]
fn uniform_matrix_shapes() {
    for (record_bytes, records) in [(1, 1), (3, 1000), (32, 1 << 16), (4096, 2), (65536, 2)] {
        for layout in LAYOUTS {
            check_shape(
                record_bytes,
                records,
                layout,
                ParamSet::default(),
                MatrixKind::Uniform,
            );
        }
    }
}

/// The 64 MiB shapes (1 KiB x 2^16, 64 KiB x 1000) in every layout.
#[test]
fn medium_shapes() {
    for (record_bytes, records) in [(1024, 1 << 16), (65536, 1000)] {
        for layout in LAYOUTS {
            check_shape(
                record_bytes,
                records,
                layout,
                ParamSet::default(),
                MatrixKind::Negacyclic,
            );
        }
    }
}

/// The large shapes: 256 MiB in every layout and matrix kind, and the 4 GiB database of
/// 2^16 records of 64 KiB (about 9 GiB of memory); run by hand with `--ignored`.
#[test]
#[ignore = "large: setups of 256 MiB and 4 GiB"]
fn large_shapes() {
    for layout in LAYOUTS {
        for matrix in MatrixKind::ALL {
            check_shape(4096, 1 << 16, layout, ParamSet::default(), matrix);
        }
    }
    check_shape(
        65536,
        1 << 16,
        Layout::Square,
        ParamSet::default(),
        MatrixKind::Negacyclic,
    );
}

#[test]
fn every_parameter_set() {
    for set in ParamSet::ALL {
        for matrix in MatrixKind::ALL.into_iter().filter(|&m| set.supports(m)) {
            for layout in LAYOUTS {
                check_shape(100, 500, layout, set, matrix);
            }
        }
    }
}

/// At least 10,000 random retrievals across random shapes, without a single failure.
#[test]
fn ten_thousand_random_retrievals() {
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut next = move |bound: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % bound
    };
    let mut total = 0;
    for round in 0..10 {
        let record_bytes = 1 + next(200) as usize;
        let records = 1 + next(3000) as usize;
        let layout = LAYOUTS[round % 3];
        let data = data(records * record_bytes, round as u64);
        let options = EngineOptions {
            layout,
            ..EngineOptions::default()
        };
        let server = Server::from_records(&data, record_bytes as u64, options, &|_, _| {}).unwrap();
        let mut client = Client::new(server.public_setup().clone());
        client.preprocess(500).unwrap();
        for _ in 0..1000 {
            let index = next(records as u64);
            let got = retrieve(&server, &mut client, index).unwrap();
            assert_eq!(got, expected(&data, record_bytes, index));
            total += 1;
        }
    }
    assert_eq!(total, 10_000);
}

#[test]
fn out_of_range_index_is_an_error() {
    let data = data(100, 1);
    let server = Server::from_records(&data, 10, EngineOptions::default(), &|_, _| {}).unwrap();
    let mut client = Client::new(server.public_setup().clone());
    assert!(matches!(
        client.query(10),
        Err(PirError::IndexOutOfRange {
            index: 10,
            records: 10
        })
    ));
}

#[test]
fn empty_database_and_zero_record_size_are_refused() {
    assert!(Server::from_records(&[], 10, EngineOptions::default(), &|_, _| {}).is_err());
    assert!(Server::from_records(&[1, 2], 0, EngineOptions::default(), &|_, _| {}).is_err());
}

#[test]
fn progress_reaches_the_total() {
    let data = data(5000, 2);
    let seen = std::sync::Mutex::new(Vec::new());
    let options = EngineOptions {
        layout: Layout::OnePerColumn,
        ..EngineOptions::default()
    };
    Server::from_records(&data, 10, options, &|done, total| {
        seen.lock().unwrap().push((done, total))
    })
    .unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.last(), Some(&(500, 500)));
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0));
}

/// A batch answered in one pass decodes to the same records as single answers.
#[test]
fn batch_answers_match_single_answers() {
    for layout in LAYOUTS {
        let data = data(3000 * 20, 9);
        let options = EngineOptions {
            layout,
            ..EngineOptions::default()
        };
        let server = Server::from_records(&data, 20, options, &|_, _| {}).unwrap();
        let mut client = Client::new(server.public_setup().clone());
        for k in [1usize, 2, 5, 16, 17] {
            let indices: Vec<u64> = (0..k as u64).map(|i| (i * 577 + 3) % 3000).collect();
            let (queries, states): (Vec<_>, Vec<_>) =
                indices.iter().map(|&i| client.query(i).unwrap()).unzip();
            let answers = server.answer_batch(&queries).unwrap();
            assert_eq!(answers.len(), k);
            for ((state, answer), (query, &index)) in states
                .into_iter()
                .zip(&answers)
                .zip(queries.iter().zip(&indices))
            {
                assert_eq!(answer, &server.answer(query).unwrap());
                assert_eq!(
                    client.decode(state, answer).unwrap(),
                    expected(&data, 20, index)
                );
            }
        }
    }
    let server =
        Server::from_records(&data(100, 1), 10, EngineOptions::default(), &|_, _| {}).unwrap();
    assert!(server.answer_batch(&[]).unwrap().is_empty());
}

/// Variable-length values (empty ones included) come back with their exact length.
#[test]
fn variable_length_values() {
    let values: Vec<Vec<u8>> = (0..300usize).map(|i| data(i * 7 % 50, i as u64)).collect();
    for layout in LAYOUTS {
        let options = EngineOptions {
            layout,
            ..EngineOptions::default()
        };
        let server = Server::from_values(&values, options, &|_, _| {}).unwrap();
        assert_eq!(
            server.public_setup().format(),
            obscura_pir::lwe::RecordFormat::LengthPrefixed
        );
        let mut client = Client::new(server.public_setup().clone());
        for index in [0usize, 1, 7, 50, 299] {
            assert_eq!(
                retrieve(&server, &mut client, index as u64).unwrap(),
                values[index]
            );
        }
    }
    let empty: [&[u8]; 0] = [];
    assert!(Server::from_values(&empty, EngineOptions::default(), &|_, _| {}).is_err());
    assert!(
        Server::from_values(&[vec![0u8; 1 << 20]], EngineOptions::default(), &|_, _| {}).is_err()
    );
}

/// A database gets the largest plaintext modulus its own rows allow: 2^20 columns of spread
/// digits pass at p = 256 where the bound for any data gives p = 128, and digits all at -p/2
/// fall back to p = 128. Both retrieve their records.
#[test]
fn the_plaintext_modulus_follows_the_data() {
    let options = EngineOptions {
        layout: Layout::OnePerColumn,
        ..EngineOptions::default()
    };
    let columns = 1usize << 20;
    assert_eq!(ParamSet::Ypir1024.max_log_p(columns as u64), Some(7));
    for (data, log_p) in [(data(columns, 5), 8), (vec![0x80; columns], 7)] {
        let server = Server::from_records(&data, 1, options, &|_, _| {}).unwrap();
        let setup = server.public_setup();
        assert_eq!(setup.params().log_p, log_p);
        assert!(setup.row_norm() > 0);
        let mut client = Client::new(setup.clone());
        for index in [0, 12_345, columns as u64 - 1] {
            let got = retrieve(&server, &mut client, index).unwrap();
            assert_eq!(
                got,
                expected(&data, 1, index),
                "p = 2^{log_p}, index {index}"
            );
        }
    }
}
