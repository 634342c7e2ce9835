//! Streamed setups: the matrix written band by band and the hint summed over the bands are
//! those of the in-memory setup, and every record comes back; failures on either side end the
//! setup with an error, not a hang.

mod common;

use common::data;
use std::io::{Cursor, Read};

use obscura_math::hint::hint_product;
use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::lwe::{Client, EngineOptions, Layout, Server, StreamError, StreamedBuild};
use obscura_pir::params::{MatrixKind, ParamSet};
use obscura_pir::{PirClient, PirServer};

/// Streams a setup of `data` in bands of about `band_bytes`, returning the plan, the setup and
/// the matrix bytes in the order they were handed on.
fn stream(
    data: &[u8],
    record_bytes: u64,
    options: EngineOptions,
    band_bytes: u64,
) -> (StreamedBuild, obscura_pir::lwe::PublicSetup, Vec<u8>) {
    let plan = StreamedBuild::plan(data.len() as u64, record_bytes, options)
        .unwrap()
        .with_band_bytes(band_bytes);
    let mut written = Vec::new();
    let columns = std::sync::Mutex::new(Vec::new());
    let setup = plan
        .run(
            &mut Cursor::new(data),
            &mut |bytes| {
                written.extend_from_slice(bytes);
                Ok(())
            },
            &|done, total| columns.lock().unwrap().push((done, total)),
        )
        .unwrap();
    let cols = plan.geometry().cols();
    let columns = columns.into_inner().unwrap();
    assert!(columns.is_sorted(), "progress grows");
    assert_eq!(
        columns.last(),
        Some(&(cols, cols)),
        "progress ends at the last column"
    );
    (plan, setup, written)
}

#[test]
fn streamed_setups_retrieve_every_record_and_match_the_in_memory_matrix() {
    // Shapes whose in-memory setup keeps the planned digits, compared byte for byte.
    let mut same_digits = 0;
    for (record_bytes, records, layout, set, matrix, band_bytes) in [
        (
            32,
            5000,
            Layout::Square,
            ParamSet::Ypir1024,
            MatrixKind::Negacyclic,
            1,
        ),
        (
            1,
            70_000,
            Layout::OnePerColumn,
            ParamSet::Ypir1024,
            MatrixKind::Negacyclic,
            100_000,
        ),
        (
            100,
            3000,
            Layout::PerColumn(3),
            ParamSet::Frodo1774,
            MatrixKind::Uniform,
            1,
        ),
        (
            7,
            9000,
            Layout::OnePerColumn,
            ParamSet::Hintless1408,
            MatrixKind::Uniform,
            1 << 30,
        ),
    ] {
        let len = records * record_bytes - record_bytes / 2;
        let data = data(len, (records + record_bytes) as u64);
        let options = EngineOptions {
            params: set,
            layout,
            matrix: Some(matrix),
            value_bytes: None,
            capacity: None,
        };
        let what = format!("{record_bytes} B x {records}, {layout:?}, {set:?}");
        let (plan, setup, written) = stream(&data, record_bytes as u64, options, band_bytes);
        let g = *setup.geometry();
        assert_eq!(g, *plan.geometry(), "{what}");
        assert_eq!(written.len() as u64, plan.matrix_bytes(), "{what}");
        assert_eq!(setup.to_bytes().len() as u64, plan.setup_bytes(), "{what}");
        let database = PlaintextMatrix::from_vec(g.rows() as usize, g.cols() as usize, written)
            .expect("the matrix has its shape");
        assert_eq!(
            setup.hint(),
            &hint_product(&database, &setup.matrix_a(), &|_, _| {}),
            "{what}"
        );
        let in_memory =
            Server::from_records(&data, record_bytes as u64, options, &|_, _| {}).unwrap();
        if in_memory.public_setup().geometry().log_p() == g.log_p() {
            assert_eq!(
                in_memory.database().as_bytes(),
                database.as_bytes(),
                "{what}"
            );
            same_digits += 1;
        }
        let server = Server::from_parts(setup.clone(), database).unwrap();
        let mut client = Client::new(setup);
        let last = records as u64 - 1;
        for index in [0, 1, last / 3, last / 2, last - 1, last] {
            let (query, state) = client.query(index).unwrap();
            let got = client
                .decode(state, &server.answer(&query).unwrap())
                .unwrap();
            let start = index as usize * record_bytes;
            let end = (start + record_bytes).min(data.len());
            assert_eq!(got, &data[start..end], "{what}, record {index}");
        }
    }
    assert!(
        same_digits >= 3,
        "only {same_digits} shapes compared with the in-memory matrix"
    );
}

/// A reader that fails after `left` bytes.
struct Failing {
    left: usize,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("the disk went away"));
        }
        let n = buf.len().min(self.left);
        buf[..n].fill(7);
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn a_failing_reader_or_writer_ends_the_setup_with_its_error() {
    let options = EngineOptions {
        layout: Layout::OnePerColumn,
        ..EngineOptions::default()
    };
    let plan = StreamedBuild::plan(1 << 20, 16, options)
        .unwrap()
        .with_band_bytes(1);
    assert!(
        plan.matrix_bytes() > 3 * 2048 * plan.geometry().rows(),
        "several bands"
    );
    for left in [0, 100_000, (1 << 20) - 1] {
        let error = plan
            .run(&mut Failing { left }, &mut |_| Ok(()), &|_, _| {})
            .unwrap_err();
        assert!(
            matches!(&error, StreamError::Read(e) if e.to_string().contains("went away")),
            "{error}"
        );
    }
    let error = plan
        .run(
            &mut Cursor::new(data(1 << 20, 3)),
            &mut |_| Err(std::io::Error::other("disk full")),
            &|_, _| {},
        )
        .unwrap_err();
    assert!(
        matches!(&error, StreamError::Write(e) if e.to_string().contains("disk full")),
        "{error}"
    );
    let error = plan
        .run(
            &mut Cursor::new(vec![0u8; 1000]),
            &mut |_| Ok(()),
            &|_, _| {},
        )
        .unwrap_err();
    assert!(matches!(error, StreamError::Read(_)), "{error}");
}
