//! DoublePIR's next version without a new setup of the database.
//!
//! The first layer changes as the LWE engine changes a database ([`lwe::Server`]'s update):
//! the changed records' digits are rewritten and `ΔD·A1` is added to its hint, which is read
//! back from the second layer (the second layer's records are that hint's rows). The second
//! layer's matrix is then the digits of the new hint, and its hint — the one clients hold — is
//! computed again with the same seed: a first-layer row with any changed entry changes every
//! word of its hint row, so a change of 1% of the records at random touches every row, and
//! `ΔD2·A2` entry by entry would cost `n` times a product that is itself small (the second
//! layer has about `4n` rows whatever the database's size). Clients download the new setup
//! (its digest is new); no patch is made.

use super::server::{word_digits, Server};
use super::setup::{first_log_failure, second_log_failure, PublicSetup};
use crate::lwe::{self, decode_database, Encoded};
use crate::{Change, PirError};
use obscura_math::matrix::Matrix;

impl Server {
    /// [`crate::PirServer::update`] of DoublePIR: everything is checked (the first layer as
    /// the LWE engine checks a change, both layers' moduli against DoublePIR's failure bounds)
    /// before the server changes. The database moves into the first layer's engine and back,
    /// never copied (a fresh gigabyte can take seconds to map).
    pub(super) fn apply_changes(&mut self, changes: &[Change]) -> Result<(), PirError> {
        let setup = self.public_setup();
        let first_geometry = setup.first().geometry();
        let n = setup.first().params().n();
        let words = decode_database(self.hint_digits(), setup.second().geometry());
        let hint: Vec<u32> = words
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
            .collect();
        let hint = Matrix::from_vec(first_geometry.rows() as usize, n, hint).ok_or_else(|| {
            PirError::malformed("DoublePIR setup", "the second layer holds another hint")
        })?;
        let first_setup = lwe::PublicSetup::with_layer(setup.first().clone(), hint)?;
        let database = self.take_database();
        let mut first = match lwe::Server::trusted_parts(first_setup, database) {
            Ok(first) => first,
            Err((error, database)) => {
                self.restore_database(database);
                return Err(error);
            }
        };
        let next = first.prepare(changes).and_then(|prepared| {
            let next = prepared.next_setup(first.public_setup())?;
            Ok((self.second_layer(&next)?, next, prepared))
        });
        match next {
            Ok(((setup, hint_digits), next, prepared)) => {
                first.commit_to(prepared, next);
                let (_, database) = first.into_parts();
                *self = Self::assemble(setup, database, hint_digits);
                Ok(())
            }
            Err(error) => {
                self.restore_database(first.into_parts().1);
                Err(error)
            }
        }
    }

    /// DoublePIR's setup and second-layer matrix over `first`, the first layer's next version:
    /// the second layer made again from its hint, both checked against their failure bounds.
    fn second_layer(
        &self,
        first: &lwe::PublicSetup,
    ) -> Result<(PublicSetup, obscura_math::matrix::PlaintextMatrix), PirError> {
        let set = first.params().set;
        let g = first.geometry();
        if !set.correct_at(g.log_p(), first.row_norm(), first_log_failure(g)) {
            return Err(PirError::NeedsNewSetup(Box::new(
                PirError::InvalidParameters(format!(
                    "p = 2^{} is not correct for the changed first layer's rows at 2^-{} per digit",
                    g.log_p(),
                    first_log_failure(g)
                )),
            )));
        }
        let setup = self.public_setup();
        let second = setup.second();
        let second_geometry = *second.geometry();
        let encoded = Encoded::measured(
            second_geometry,
            word_digits(first.hint().as_slice(), &second_geometry),
        );
        let failure = second_log_failure(setup.rows_per_query(), &second_geometry);
        if !set.correct_at(second_geometry.log_p(), encoded.row_norm(), failure) {
            return Err(PirError::NeedsNewSetup(Box::new(PirError::InvalidParameters(
                format!(
                    "p = 2^{} is not correct for the second layer's new rows at 2^-{failure} per digit",
                    second_geometry.log_p()
                ),
            ))));
        }
        let second = lwe::Server::next_with_database(second, encoded, &|_, _| {})?;
        let (second_setup, hint_digits) = second.into_parts();
        Ok((
            PublicSetup::new(first.layer().clone(), second_setup)?,
            hint_digits,
        ))
    }
}
