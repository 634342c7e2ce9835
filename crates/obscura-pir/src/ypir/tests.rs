//! End-to-end retrieval with both variants over many shapes, batches, the messages' codecs and
//! checks, and the freshness of every query.

use super::*;
use crate::test_data::data as bytes;
use crate::{PirClient, PirError, PirServer};

fn server(data: &[u8], record_bytes: u64, variant: Variant) -> Server {
    let options = YpirOptions {
        variant: Some(variant),
    };
    Server::from_records(data, record_bytes, options, &|_, _| {}).expect("setup")
}

/// Fetches `index` through encoded messages and checks it against the data.
fn check_record(server: &Server, client: &mut Client, data: &[u8], record_bytes: u64, index: u64) {
    let (query, state) = client.query(index).expect("query");
    let bytes = query.to_bytes();
    assert_eq!(
        bytes.len() as u64,
        Query::encoded_len(server.public_setup())
    );
    let query = Query::from_bytes(&bytes, server.public_setup()).expect("query codec");
    let answer = server.answer(&query).expect("answer");
    let bytes = answer.to_bytes();
    assert_eq!(bytes.len() as u64, Answer::encoded_len(client.setup()));
    let answer = Answer::from_bytes(&bytes, client.setup()).expect("answer codec");
    let start = (index * record_bytes) as usize;
    let end = (start + record_bytes as usize).min(data.len());
    assert_eq!(
        client.decode(state, &answer).expect("decode"),
        &data[start..end],
        "record {index} of {} bytes",
        record_bytes
    );
}

/// Checks the first, middle and last records of a database of `len` bytes in records of
/// `record_bytes` bytes under `variant`.
fn check_database(len: usize, record_bytes: u64, variant: Variant, seed: u64) {
    let data = bytes(len, seed);
    let server = server(&data, record_bytes, variant);
    assert_eq!(server.public_setup().variant(), variant);
    let mut client = Client::new(server.public_setup().clone());
    let records = (len as u64).div_ceil(record_bytes);
    for index in [0, records / 2, records - 1] {
        check_record(&server, &mut client, &data, record_bytes, index);
    }
}

#[test]
fn ypir_sp_records_from_one_byte_to_64_kib_are_retrieved() {
    // One byte; the ypir-small records; a short last record; records of many words; records
    // packed into several ciphertexts (64 KiB is 37,450 words: 19 of them).
    let shapes = [
        (1, 1),
        (3000, 3),
        (1001, 10),
        (40 * 1000, 1000),
        (3 * (64 << 10) - 5, 64 << 10),
    ];
    for (seed, (len, record_bytes)) in shapes.into_iter().enumerate() {
        check_database(len, record_bytes, Variant::YpirSp, seed as u64);
    }
}

#[test]
fn ypir_records_of_one_to_seventy_two_bytes_are_retrieved() {
    // Single bytes over a few first-layer rows; 3-byte records; a short last record; the
    // widest records YPIR takes (72 digits, 135 answer chunks).
    let shapes = [(5000, 1), (3000, 3), (1001, 10), (72 * 30, 72)];
    for (seed, (len, record_bytes)) in shapes.into_iter().enumerate() {
        check_database(len, record_bytes, Variant::Ypir, 10 + seed as u64);
    }
}

#[test]
fn one_byte_records_over_several_ring_blocks_are_retrieved() {
    // Over 2,048 first-layer rows: the packed layer's query spans two ring elements.
    let data = bytes(8 << 20, 21);
    let server = server(&data, 1, Variant::Ypir);
    let Shape::Ypir(shape) = server.public_setup().shape() else {
        panic!("a YPIR shape");
    };
    assert!(shape.rows() > 2048, "{shape:?}");
    let mut client = Client::new(server.public_setup().clone());
    for index in [0, 2048 * shape.per_row() + 7, (8 << 20) - 1] {
        check_record(&server, &mut client, &data, 1, index);
    }
}

#[test]
fn batches_answer_every_query() {
    for (variant, len, record_bytes) in [(Variant::YpirSp, 5000, 5), (Variant::Ypir, 3000, 2)] {
        let data = bytes(len, 31);
        let server = server(&data, record_bytes, variant);
        let mut client = Client::new(server.public_setup().clone());
        let indices = [3u64, 0, 599, 3];
        let (queries, states): (Vec<_>, Vec<_>) =
            indices.iter().map(|&i| client.query(i).unwrap()).unzip();
        let answers = server.answer_batch(&queries).unwrap();
        assert_eq!(answers.len(), indices.len());
        for ((&index, state), answer) in indices.iter().zip(states).zip(&answers) {
            let start = (index * record_bytes) as usize;
            assert_eq!(
                client.decode(state, answer).unwrap(),
                &data[start..start + record_bytes as usize]
            );
        }
        assert!(server.answer_batch(&[]).unwrap().is_empty());
    }
}

#[test]
fn values_of_any_length_come_back_whole() {
    let values: Vec<Vec<u8>> = (0..40).map(|i| bytes(i * 3 % 17, i as u64)).collect();
    for variant in [Variant::YpirSp, Variant::Ypir] {
        let options = YpirOptions {
            variant: Some(variant),
        };
        let server = Server::from_values(&values, options, &|_, _| {}).unwrap();
        let mut client = Client::new(server.public_setup().clone());
        for index in [0usize, 7, 39] {
            let (query, state) = client.query(index as u64).unwrap();
            let answer = server.answer(&query).unwrap();
            assert_eq!(client.decode(state, &answer).unwrap(), values[index]);
        }
    }
}

#[test]
fn every_query_has_fresh_secrets() {
    let data = bytes(600, 41);
    for variant in [Variant::YpirSp, Variant::Ypir] {
        let server = server(&data, 2, variant);
        let mut client = Client::new(server.public_setup().clone());
        let (a, _) = client.query(5).unwrap();
        let (b, _) = client.query(5).unwrap();
        // Same index, nothing in common: the packed query, the keys and the first layer's.
        assert!(a.second.iter().zip(&b.second).all(|(x, y)| x != y));
        assert!(a.keys.iter().zip(&b.keys).filter(|(x, y)| x == y).count() < 4);
        let same_first = a.first.iter().zip(&b.first).filter(|(x, y)| x == y).count();
        assert!(same_first <= a.first.len() / 1000, "{same_first}");
    }
}

#[test]
fn answers_are_twelve_kilobytes_per_ciphertext() {
    let data = bytes(5000, 51);
    let server = server(&data, 1, Variant::Ypir);
    let setup = server.public_setup();
    assert_eq!(
        Answer::encoded_len(setup),
        crate::wire::COMPACT_HEADER_BYTES as u64 + params::CIPHERTEXT_BYTES
    );
    // The packing keys' bodies are 33 polynomials of 2,048 values of 56 bits, less the 242
    // bits of each coefficient that their rounding leaves out.
    let keys = 33 * 2048 * 56 / 8 - 61_952;
    let Shape::Ypir(shape) = setup.shape() else {
        panic!("a YPIR shape");
    };
    let (k1, k2) = (shape.first_dropped(), shape.packed_dropped());
    assert!(k1 > 0 && k2 > 0, "{k1} {k2}");
    let first = (shape.digits() * shape.columns() * u64::from(32 - k1)).div_ceil(8);
    let second = (shape.rows() * u64::from(56 - k2)).div_ceil(8);
    assert_eq!(
        Query::encoded_len(setup),
        crate::wire::COMPACT_HEADER_BYTES as u64 + first + second + keys
    );
}

#[test]
fn setups_round_trip_and_bad_messages_are_refused() {
    let data = bytes(2000, 61);
    for variant in [Variant::YpirSp, Variant::Ypir] {
        let server = server(&data, 4, variant);
        let setup = server.public_setup();
        let decoded = PublicSetup::from_bytes(&setup.to_bytes()).unwrap();
        assert_eq!(&decoded, setup);
        let mut corrupted = setup.to_bytes();
        let last = corrupted.len() - 1;
        corrupted[last] ^= 1;
        assert!(PublicSetup::from_bytes(&corrupted).is_err());
        assert!(PublicSetup::from_bytes(&setup.to_bytes()[..50]).is_err());

        let mut client = Client::new(setup.clone());
        let (query, state) = client.query(1).unwrap();
        let bytes = query.to_bytes();
        assert!(Query::from_bytes(&bytes[..bytes.len() - 1], setup).is_err());
        // A value of the packed query that no value below q rounds to is refused.
        let mut wide = query.clone();
        wide.second[0] = super::packed::rounded_bound(wide.dropped[1]) + 1;
        assert!(Query::from_bytes(&wide.to_bytes(), setup).is_err());
        assert!(matches!(
            server.answer(&wide),
            Err(PirError::Malformed { .. })
        ));
        let mut short = query.clone();
        short.keys.pop();
        assert!(server.answer(&short).is_err());
        assert!(server.answer_phases(&[&short], false).is_err());
        let (answers, phases) = server.answer_phases(&[&query], false).unwrap();
        assert_eq!(answers.len(), 1);
        assert!(phases.second_pass > std::time::Duration::ZERO);

        let answer = server.answer(&query).unwrap();
        let bytes = answer.to_bytes();
        assert!(Answer::from_bytes(&bytes[..bytes.len() - 2], setup).is_err());
        let mut wide = answer.clone();
        wide.masks[0] = 1 << 28;
        assert!(client.decode(state, &wide).is_err());

        // Another database's messages are refused.
        let other = self::server(&data, 4, variant);
        assert!(matches!(
            other.answer(&query),
            Err(PirError::SetupMismatch { .. })
        ));
        assert!(Query::from_bytes(&query.to_bytes(), other.public_setup()).is_err());
        assert!(client.query(500).is_err());
    }
}

#[test]
fn stored_parts_rebuild_the_server() {
    let data = bytes(3000, 71);
    for variant in [Variant::YpirSp, Variant::Ypir] {
        let server = server(&data, 3, variant);
        let setup = server.public_setup().clone();
        let matrices: Vec<_> = server.matrices().into_iter().cloned().collect();
        let rebuilt = Server::from_parts(setup.clone(), matrices.clone()).unwrap();
        let mut client = Client::new(setup.clone());
        check_record(&rebuilt, &mut client, &data, 3, 999);
        let mut fewer = matrices;
        fewer.pop();
        assert!(Server::from_parts(setup, fewer).is_err());
    }
}

/// The variance of a decoded coefficient's error that the failure bound assumes for `shape`.
fn predicted_variance(shape: &YpirSpShape) -> f64 {
    params::packed_variance(
        params::PLAINTEXT_BITS,
        shape.columns(),
        shape.query_dropped(),
        1.0,
    )
}

/// The error of decoded coefficients, measured, stays within the variance the failure bound
/// assumes (rounded keys and query vector included) and is of its order (about half: the bound
/// takes every entry at its largest and the mask's rounding at its worst). The data is random:
/// with equal rows the query's rounding would add one error to every coefficient, and the
/// measure would see a handful of samples of it.
#[test]
fn the_measured_error_matches_the_analysis() {
    let data = bytes(64 * 1000, 91);
    let server = server(&data, 1000, Variant::YpirSp);
    let Shape::YpirSp(shape) = *server.public_setup().shape() else {
        panic!("a YPIR+SP shape");
    };
    let mut client = Client::new(server.public_setup().clone());
    let predicted = predicted_variance(&shape);
    let step = 1i64 << (params::BODY_BITS - params::PLAINTEXT_BITS);
    let (mut sum, mut count) = (0f64, 0usize);
    for index in 0..8 {
        let (query, state) = client.query(index).unwrap();
        let answer = server.answer(&query).unwrap();
        for (mask, body) in answer
            .masks
            .chunks_exact(params::DEGREE)
            .zip(answer.bodies.chunks_exact(params::DEGREE))
        {
            for phase in client.layer.phases(&state.secret, mask, body) {
                // The nearest multiple of the plaintext step is the message.
                let error = (i64::from(phase) + step / 2).rem_euclid(step) - step / 2;
                sum += (error * error) as f64;
                count += 1;
            }
        }
    }
    let measured = sum / count as f64;
    assert!(
        measured < predicted && measured > predicted / 3.0,
        "measured {measured}, predicted {predicted}"
    );
}

/// Words of all ones over 2^15 columns, the most a query vector's rounding can bias: each row's
/// pass sums the rounding errors of 2^15 entries times the largest word. Records come back
/// whole, and the decoded error has mean about zero (with ties rounded up it was 16.8 steps of
/// the body, past the 16 a coefficient tolerates) and the variance the bound assumes.
#[test]
fn words_of_all_ones_over_many_columns_are_retrieved_without_bias() {
    let (records, record_bytes) = (1u64 << 15, 60);
    let data = vec![0xffu8; (records * record_bytes) as usize];
    let shape = YpirSpShape::new(records, record_bytes, 1).expect("a shape");
    assert!(shape.query_dropped() > 0);
    let seed = obscura_math::expand::MatrixSeed::random().expect("a seed");
    let server = Server::build_seeded(
        &data,
        Shape::YpirSp(shape),
        crate::lwe::RecordFormat::Raw,
        seed,
        &|_, _| {},
    )
    .expect("setup");
    let mut client = Client::new(server.public_setup().clone());
    let predicted = predicted_variance(&shape);
    let stride = params::DEGREE / shape.packing().group;
    let step = 1i64 << (params::BODY_BITS - params::PLAINTEXT_BITS);
    let (mut sum, mut squares, mut count) = (0f64, 0f64, 0usize);
    for index in (0..records).step_by(509) {
        let (query, state) = client.query(index).expect("query");
        let answer = server.answer(&query).expect("answer");
        let phases = client
            .layer
            .phases(&state.secret, &answer.masks, &answer.bodies);
        for row in 0..shape.rows() as usize {
            let error = (i64::from(phases[row * stride]) + step / 2).rem_euclid(step) - step / 2;
            sum += error as f64;
            squares += (error * error) as f64;
            count += 1;
        }
        let start = (index * record_bytes) as usize;
        assert_eq!(
            client.decode(state, &answer).expect("decode"),
            &data[start..start + record_bytes as usize],
            "record {index}"
        );
    }
    let (mean, variance) = (sum / count as f64, squares / count as f64);
    assert!(mean.abs() < 0.5, "mean error {mean}");
    assert!(
        variance < 1.2 * predicted,
        "measured {variance}, predicted {predicted}"
    );
}

/// `ypir-sp`'s database (2^15 records of 32 KiB of random bytes, 2^15 columns): 150 records
/// retrieved, every one whole. 1 GiB and about a minute in a release build, so run by hand
/// (`cargo test --release -p obscura-pir -- --ignored ypir_sp_at_a_gibibyte`).
#[test]
#[ignore]
fn ypir_sp_at_a_gibibyte_decodes_every_query() {
    let (records, record_bytes) = (1u64 << 15, 32 << 10);
    let data = bytes((records * record_bytes) as usize, 17);
    let server = server(&data, record_bytes, Variant::YpirSp);
    let mut client = Client::new(server.public_setup().clone());
    for index in (0..records).step_by(219).take(150) {
        check_record(&server, &mut client, &data, record_bytes, index);
    }
}
