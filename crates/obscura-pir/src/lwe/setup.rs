//! The public setup: what a client needs before it can query.

use std::ops::Range;
use std::sync::Arc;

use obscura_math::expand::{MatrixSeed, NegacyclicMatrix, PublicMatrix, SeededMatrix, SEED_BYTES};
use obscura_math::matrix::Matrix;
use rayon::prelude::*;
use sha2::{Digest as _, Sha256};

use super::layout::{Geometry, Layout};
use crate::params::{LweParams, MatrixKind, ParamSet};
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// Domain tag of the public matrix `A` under the setup's seed.
const DOMAIN_A: u64 = 0;

/// How a record's bytes are laid out inside its fixed-size slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RecordFormat {
    /// The slot is the record (the last one may be short).
    #[default]
    Raw,
    /// A little-endian `u32` length, the value, zero padding: variable-length values (rows of a
    /// CSV file, JSON lines) in fixed slots, returned with their exact length.
    LengthPrefixed,
}

impl RecordFormat {
    /// The code of the format in binary formats.
    pub fn code(self) -> u8 {
        match self {
            Self::Raw => 1,
            Self::LengthPrefixed => 2,
        }
    }

    /// The format with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        [Self::Raw, Self::LengthPrefixed]
            .into_iter()
            .find(|f| f.code() == code)
    }

    /// The value stored in a decoded slot; [`PirError::Absent`] for a deleted value's slot.
    pub fn value(self, slot: Vec<u8>) -> Result<Vec<u8>, PirError> {
        match self {
            Self::Raw => Ok(slot),
            Self::LengthPrefixed => {
                let prefix = slot
                    .get(..4)
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                    .ok_or_else(|| PirError::malformed("record", "its slot has no length"))?;
                if prefix == ABSENT {
                    return Err(PirError::Absent);
                }
                let len = (prefix as usize)
                    .checked_add(4)
                    .filter(|&end| end <= slot.len())
                    .ok_or_else(|| {
                        PirError::malformed("record", "its length prefix exceeds its slot")
                    })?;
                Ok(slot[4..len].to_vec())
            }
        }
    }
}

/// The length prefix of a deleted value's slot: no value is that long (slots are at most
/// [`super::layout::MAX_RECORD_BYTES`]).
const ABSENT: u32 = u32::MAX;

/// Writes `value` into a slot of values (its length, its bytes, zeros), or for `None` the mark
/// of a deleted value; the slot must be at least 4 bytes longer than the value.
pub(crate) fn fill_value_slot(slot: &mut [u8], value: Option<&[u8]>) {
    slot.fill(0);
    match value {
        Some(value) => {
            slot[..4].copy_from_slice(&(value.len() as u32).to_le_bytes());
            slot[4..4 + value.len()].copy_from_slice(value);
        }
        None => slot[..4].copy_from_slice(&ABSENT.to_le_bytes()),
    }
}

/// Choices made when a server sets up a database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// The LWE parameter set.
    pub params: ParamSet,
    /// How records are laid out in the matrix.
    pub layout: Layout,
    /// How the public matrix is expanded; `None` picks [`MatrixKind::default_for`] the set.
    pub matrix: Option<MatrixKind>,
    /// For a database of values: the longest value its slots hold, at least the longest given
    /// (`None`: the longest given), the plaintext modulus then chosen for any contents. Room
    /// for longer values lets an update set them without a new setup.
    pub value_bytes: Option<u64>,
    /// Records the matrix has room for, at least those given (`None`: those given); the
    /// layout's records per column are chosen for the capacity, and the plaintext modulus for
    /// any contents (not only the rows given). Room lets an update append records without a
    /// new setup. A Merkle tree ([`crate::batch::treepir`]) counts it in leaves.
    pub capacity: Option<u64>,
}

/// One LWE layer as a client sees it, without its hint: the parameters, how records sit in
/// their slots, the geometry, the largest squared row norm of the database (which the plaintext
/// modulus is checked against) and the seed of the public matrix `A`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    params: LweParams,
    format: RecordFormat,
    geometry: Geometry,
    row_norm: u64,
    seed: MatrixSeed,
}

/// An engine of `geometry` under `params`, in words: its matrix, plaintext modulus and
/// parameter set.
pub fn describe(geometry: &Geometry, params: LweParams) -> String {
    format!(
        "{} x {} matrix, p = 2^{}, {} with a {} A",
        geometry.rows(),
        geometry.cols(),
        geometry.log_p(),
        params.set.name(),
        params.matrix.name()
    )
}

impl Layer {
    /// Bytes of an encoded layer: four codes (set, matrix kind, record format, log p), six
    /// `u64` (records, capacity, record bytes, data bytes, records per column, row norm) and
    /// the seed.
    pub(crate) const ENCODED_BYTES: usize = 4 + 6 * 8 + SEED_BYTES;

    /// Assembles a layer; checks that the parameters are correct for the geometry and the row
    /// norm.
    pub fn new(
        set: ParamSet,
        matrix: MatrixKind,
        format: RecordFormat,
        geometry: Geometry,
        row_norm: u64,
        seed: MatrixSeed,
    ) -> Result<Self, PirError> {
        let params = LweParams::new(set, matrix, geometry.log_p(), geometry.cols(), row_norm)?;
        Ok(Self {
            params,
            format,
            geometry,
            row_norm,
            seed,
        })
    }

    /// This layer for a database of `geometry` (of this layer's matrix shape) whose largest
    /// squared row norm is `row_norm`: the same parameters and seed, checked as by
    /// [`Layer::new`].
    pub(crate) fn with_contents(
        &self,
        geometry: Geometry,
        row_norm: u64,
    ) -> Result<Self, PirError> {
        Self::new(
            self.params.set,
            self.params.matrix,
            self.format,
            geometry,
            row_norm,
            self.seed,
        )
    }

    /// The LWE parameters.
    pub fn params(&self) -> LweParams {
        self.params
    }

    /// How records are laid out in their slots.
    pub fn format(&self) -> RecordFormat {
        self.format
    }

    /// The shape of the database.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The seed of the public matrix.
    pub fn seed(&self) -> MatrixSeed {
        self.seed
    }

    /// The largest squared norm of a database row, digits read as signed.
    pub fn row_norm(&self) -> u64 {
        self.row_norm
    }

    /// The public matrix `A` (C x n), expanded on demand.
    pub fn matrix_a(&self) -> PublicMatrix {
        matrix_a(&self.params, self.seed, &self.geometry)
    }

    /// Appends the encoded layer ([`Layer::ENCODED_BYTES`]).
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let g = &self.geometry;
        out.push(self.params.set.code());
        out.push(self.params.matrix.code());
        out.push(self.format.code());
        out.push(g.log_p());
        for value in [
            g.records(),
            g.capacity(),
            g.record_bytes(),
            g.data_bytes(),
            g.per_column(),
            self.row_norm,
        ] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&self.seed.0);
    }

    /// Reads an encoded layer; its parameters are checked as by [`Layer::new`].
    pub(crate) fn read(reader: &mut Reader<'_>) -> Result<Self, PirError> {
        let code = reader.u8()?;
        let set = ParamSet::from_code(code)
            .ok_or_else(|| reader.error(format!("unknown parameter set {code}")))?;
        let code = reader.u8()?;
        let matrix = MatrixKind::from_code(code)
            .ok_or_else(|| reader.error(format!("unknown matrix kind {code}")))?;
        let code = reader.u8()?;
        let format = RecordFormat::from_code(code)
            .ok_or_else(|| reader.error(format!("unknown record format {code}")))?;
        let log_p = reader.u8()?;
        let (records, capacity, record_bytes, data_bytes, per_column, row_norm) = (
            reader.u64()?,
            reader.u64()?,
            reader.u64()?,
            reader.u64()?,
            reader.u64()?,
            reader.u64()?,
        );
        let geometry = Geometry::new(records, record_bytes, data_bytes, per_column, log_p)
            .and_then(|g| g.with_capacity(capacity))
            .map_err(|e| reader.inconsistent(e))?;
        let seed = MatrixSeed(reader.take(SEED_BYTES)?.try_into().expect("seed length"));
        Self::new(set, matrix, format, geometry, row_norm, seed).map_err(|e| reader.inconsistent(e))
    }

    /// Feeds the layer's fields to a digest, in the order they are encoded.
    pub(crate) fn hash_into(&self, hash: &mut Sha256) {
        let g = &self.geometry;
        hash.update([
            self.params.set.code(),
            self.params.matrix.code(),
            self.format.code(),
            g.log_p(),
        ]);
        for value in [
            g.records(),
            g.capacity(),
            g.record_bytes(),
            g.data_bytes(),
            g.per_column(),
            self.row_norm,
        ] {
            hash.update(value.to_le_bytes());
        }
        hash.update(self.seed.0);
    }
}

/// The public setup of a database: its [`Layer`], its version, and the hint `H = D·A` with its
/// hash (SHA-256 over the SHA-256 of each MiB of it, which the setup also carries). Its
/// [`digest`](PublicSetup::digest) names it in every query and answer, and covers the version
/// and the hint's hash, so a query made with the setup of another version is refused instead
/// of decoding against data it does not describe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicSetup {
    layer: Layer,
    version: u64,
    hint_hash: HintHash,
    /// Shared by the setup's copies (a scheme's setup holds its sub-databases' setups beside
    /// their servers), so a copy costs no copy of the hint; an update changes it in place when
    /// no other copy holds it.
    hint: Arc<Matrix>,
    digest: Digest,
}

impl PublicSetup {
    /// Assembles the first version of a setup; checks that the parameters are correct for the
    /// geometry and the row norm, and that the hint has the right shape.
    pub fn new(
        set: ParamSet,
        matrix: MatrixKind,
        format: RecordFormat,
        geometry: Geometry,
        row_norm: u64,
        seed: MatrixSeed,
        hint: Matrix,
    ) -> Result<Self, PirError> {
        Self::with_layer(
            Layer::new(set, matrix, format, geometry, row_norm, seed)?,
            hint,
        )
    }

    /// The first version of a setup of `layer` with `hint`, checked to have the layer's shape.
    pub fn with_layer(layer: Layer, hint: Matrix) -> Result<Self, PirError> {
        Self::versioned(layer, 0, hint)
    }

    /// The next version of this setup, with `layer` (this setup's, with the database's new row
    /// norm: see [`Layer::with_contents`]) and `hint`: a new hint, or this setup's changed in
    /// rows `touched` only, whose hash is then made again from those rows.
    pub(crate) fn next_version(
        &self,
        layer: Layer,
        hint: Matrix,
        touched: Option<&[Range<usize>]>,
    ) -> Result<Self, PirError> {
        let Some(touched) = touched else {
            return Self::versioned(layer, self.version + 1, hint);
        };
        fits(&layer, &hint)?;
        let mut hint_hash = self.hint_hash.clone();
        hint_hash.rehash(&hint, touched);
        Ok(Self::assemble(layer, self.version + 1, hint_hash, hint))
    }

    /// Version `version` of a setup of `layer` with `hint`, checked to have the layer's shape.
    pub(super) fn versioned(layer: Layer, version: u64, hint: Matrix) -> Result<Self, PirError> {
        fits(&layer, &hint)?;
        let hint_hash = HintHash::of(hint.as_slice());
        Ok(Self::assemble(layer, version, hint_hash, hint))
    }

    /// The setup of these parts, with its digest.
    fn assemble(layer: Layer, version: u64, hint_hash: HintHash, hint: Matrix) -> Self {
        Self {
            digest: digest_of(&layer, version, &hint_hash.root),
            layer,
            version,
            hint_hash,
            hint: Arc::new(hint),
        }
    }

    /// Makes this setup its next version in place: `layer` (of the same matrix shape), the hint
    /// changed by `change` in rows `touched` only, the version one more, and the hint's hash
    /// (the pieces those rows lie in) and the digest computed again.
    pub(super) fn advance(
        &mut self,
        layer: Layer,
        change: impl FnOnce(&mut Matrix),
        touched: &[Range<usize>],
    ) {
        debug_assert_eq!(
            (layer.geometry.rows(), layer.params.n()),
            (self.layer.geometry.rows(), self.layer.params.n())
        );
        change(Arc::make_mut(&mut self.hint));
        self.layer = layer;
        self.version += 1;
        self.hint_hash.rehash(&self.hint, touched);
        self.digest = digest_of(&self.layer, self.version, &self.hint_hash.root);
    }

    /// The version: 0 for a database as built, one more for each update.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The layer: parameters, format, geometry, row norm and seed.
    pub fn layer(&self) -> &Layer {
        &self.layer
    }

    /// The LWE parameters.
    pub fn params(&self) -> LweParams {
        self.layer.params
    }

    /// How records are laid out in their slots.
    pub fn format(&self) -> RecordFormat {
        self.layer.format
    }

    /// The shape of the database.
    pub fn geometry(&self) -> &Geometry {
        &self.layer.geometry
    }

    /// The seed of the public matrix.
    pub fn seed(&self) -> MatrixSeed {
        self.layer.seed
    }

    /// The hint `H = D·A`.
    pub fn hint(&self) -> &Matrix {
        &self.hint
    }

    /// The hash of the hint's entries (SHA-256 over the SHA-256 of each MiB of them,
    /// little-endian, row by row), as the server computed it.
    pub fn hint_hash(&self) -> &[u8; 32] {
        &self.hint_hash.root
    }

    /// The hint, taken out of the setup.
    pub(super) fn into_hint(self) -> Matrix {
        Arc::try_unwrap(self.hint).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The largest squared norm of a database row, digits read as signed.
    pub fn row_norm(&self) -> u64 {
        self.layer.row_norm
    }

    /// The digest that names this setup.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The public matrix `A` (C x n), expanded on demand.
    pub fn matrix_a(&self) -> PublicMatrix {
        self.layer.matrix_a()
    }

    /// Bytes of the encoded setup of a database of `geometry` under `set`: the header, the
    /// layer ([`Layer::ENCODED_BYTES`]), the version, the hint's hash, its pieces' hashes and
    /// the hint.
    pub(crate) fn encoded_len(geometry: &Geometry, set: ParamSet) -> u64 {
        let hint = geometry.rows().saturating_mul(set.n() as u64 * 4);
        let pieces = hint.div_ceil(HINT_PIECE_BYTES as u64).saturating_mul(32);
        hint.saturating_add(pieces)
            .saturating_add((wire::HEADER_BYTES + Layer::ENCODED_BYTES + 8 + 32) as u64)
    }

    /// The encoded setup.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_bytes());
        self.write(&mut out);
        out
    }

    /// Bytes of the encoded setup.
    pub(crate) fn encoded_bytes(&self) -> usize {
        Self::encoded_len(&self.layer.geometry, self.layer.params.set) as usize
    }

    /// Appends the encoded setup to `out` (a scheme's setup writes its sub-databases' setups
    /// into its own bytes, with no copy of each).
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        write_head(
            out,
            &self.digest,
            &self.layer,
            self.version,
            &self.hint_hash,
        );
        wire::extend_parallel(out, &wire::le_bytes(self.hint.as_slice()));
        debug_assert_eq!(out.len() - start, self.encoded_bytes(), "encoded_len");
    }

    /// Decodes a setup; every length is checked before allocating and the digest is recomputed
    /// from the fields. The hint's hash is the server's, as encoded: a client that needs the
    /// bytes it holds to be the server's pins the whole setup's SHA-256.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let encoded = Encoded::read(bytes)?;
        let mut reader = Reader::new(&bytes[encoded.hint_at..], Kind::LWE_PUBLIC_SETUP);
        let hint_bytes = encoded.hint_hash.len;
        let hint = reader.words_raw::<u32>(hint_bytes / 4)?;
        reader.finish()?;
        let (rows, n) = (encoded.layer.geometry.rows(), encoded.layer.params.n());
        let hint = Matrix::from_vec(rows as usize, n, hint).expect("length checked");
        Ok(Self::assemble(
            encoded.layer,
            encoded.version,
            encoded.hint_hash,
            hint,
        ))
    }
}

/// An encoded setup read up to its hint: every field decoded and checked as
/// [`PublicSetup::from_bytes`] checks them (lengths, the hint's hash over its pieces' hashes,
/// the digest over the fields), and where the hint's bytes begin.
pub(super) struct Encoded {
    /// The digest the envelope names.
    pub(super) digest: Digest,
    /// The layer.
    pub(super) layer: Layer,
    /// The version.
    pub(super) version: u64,
    /// The hint's hash, as encoded.
    hint_hash: HintHash,
    /// Where the hint's bytes begin.
    hint_at: usize,
}

impl Encoded {
    /// Reads the fields of the encoded setup `bytes`.
    pub(super) fn read(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::LWE_PUBLIC_SETUP)?;
        let layer = Layer::read(&mut reader)?;
        let version = reader.u64()?;
        let root: [u8; 32] = reader.take(32)?.try_into().expect("32 bytes");
        let (rows, n) = (layer.geometry.rows(), layer.params.n());
        let hint_bytes = (rows as usize)
            .checked_mul(n)
            .and_then(|entries| entries.checked_mul(4));
        let pieces = hint_bytes.map(|bytes| bytes.div_ceil(HINT_PIECE_BYTES));
        let expected = hint_bytes
            .zip(pieces)
            .and_then(|(h, p)| h.checked_add(32 * p));
        if expected != Some(reader.rest().len()) {
            return Err(reader.error(format!(
                "the hint and its pieces' hashes have {} bytes where a {rows} x {n} hint takes {}",
                reader.rest().len(),
                expected.map_or("more".into(), |e| e.to_string()),
            )));
        }
        let (hint_bytes, pieces) = (hint_bytes.expect("checked"), pieces.expect("checked"));
        let pieces: Vec<[u8; 32]> = (0..pieces)
            .map(|_| Ok(reader.take(32)?.try_into().expect("32 bytes")))
            .collect::<Result<_, PirError>>()?;
        let hint_hash = HintHash::from_pieces(hint_bytes, pieces);
        if hint_hash.root != root {
            return Err(reader.error("the hint's hash is not the hash of its pieces' hashes"));
        }
        if digest_of(&layer, version, &root) != digest {
            return Err(PirError::malformed(
                "public setup",
                "the parameter digest does not match the contents",
            ));
        }
        Ok(Self {
            digest,
            layer,
            version,
            hint_hash,
            hint_at: bytes.len() - hint_bytes,
        })
    }

    /// The hint's entries in `bytes` (the encoded setup this was read from), to change where
    /// they lie: `None` where its bytes cannot be taken as words in place (not aligned to 4
    /// bytes, or a machine that is not little-endian).
    pub(super) fn hint_words_mut<'a>(&self, bytes: &'a mut [u8]) -> Option<&'a mut [u32]> {
        if cfg!(target_endian = "little") {
            bytemuck::try_cast_slice_mut(&mut bytes[self.hint_at..]).ok()
        } else {
            None
        }
    }

    /// Makes `bytes` (the encoded setup this was read from, its hint changed in place by
    /// [`Encoded::hint_words_mut`]) the encoding of the setup of `layer` (of the same matrix
    /// shape) at `version` with that hint: the hint's hash and the digest computed, the fields
    /// before the hint written. Returns the new hint's hash and digest.
    pub(super) fn rewrite(
        self,
        bytes: &mut [u8],
        layer: &Layer,
        version: u64,
    ) -> Result<([u8; 32], Digest), PirError> {
        let words = self
            .hint_words_mut(bytes)
            .ok_or_else(|| PirError::malformed("public setup", "the hint is not in place"))?;
        let hint_hash = HintHash::of(words);
        let digest = digest_of(layer, version, &hint_hash.root);
        let mut head = Vec::with_capacity(self.hint_at);
        write_head(&mut head, &digest, layer, version, &hint_hash);
        if head.len() != self.hint_at {
            return Err(PirError::malformed(
                "setup patch",
                "the patched setup's fields take another length",
            ));
        }
        bytes[..self.hint_at].copy_from_slice(&head);
        Ok((hint_hash.root, digest))
    }
}

/// Writes the fields of an encoded setup before its hint: the envelope naming `digest`, the
/// layer, the version, the hint's hash and its pieces' hashes.
fn write_head(out: &mut Vec<u8>, digest: &Digest, layer: &Layer, version: u64, hash: &HintHash) {
    wire::write_header(out, Kind::LWE_PUBLIC_SETUP, digest);
    layer.write(out);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&hash.root);
    for piece in hash.pieces.iter() {
        out.extend_from_slice(piece);
    }
}

/// The digest that names the setup of `layer` at `version` with a hint of hash `hint_hash`
/// ([`hint_hash`]).
fn digest_of(layer: &Layer, version: u64, hint_hash: &[u8; 32]) -> Digest {
    let mut hash = Sha256::new();
    hash.update(b"obscura/lwe/setup/v3");
    layer.hash_into(&mut hash);
    hash.update(version.to_le_bytes());
    hash.update(hint_hash);
    hash.finalize().into()
}

/// Whether `hint` has the shape of `layer`'s hint.
fn fits(layer: &Layer, hint: &Matrix) -> Result<(), PirError> {
    if hint.rows() as u64 != layer.geometry.rows() || hint.cols() != layer.params.n() {
        return Err(PirError::InvalidParameters(format!(
            "a {} x {} hint does not fit a {} x {} setup",
            hint.rows(),
            hint.cols(),
            layer.geometry.rows(),
            layer.params.n()
        )));
    }
    Ok(())
}

/// Bytes of each piece of a hint hashed on its own ([`HintHash`]).
const HINT_PIECE_BYTES: usize = 1 << 20;

/// The hash of a hint: SHA-256 over a domain tag, the hint's length in bytes (u64) and the
/// SHA-256 of each [`HINT_PIECE_BYTES`] of its entries (little-endian, row by row; the last
/// piece shorter), which it keeps. The pieces are hashed in parallel on the rayon pool (a
/// single SHA-256 of a 128 MiB hint takes 0.1 s on one core), and a new version hashes again
/// only the pieces its changed rows lie in.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HintHash {
    /// The hint's length in bytes.
    len: usize,
    /// Each piece's SHA-256 (shared by the setup's copies).
    pieces: Arc<Vec<[u8; 32]>>,
    /// The hash over them.
    root: [u8; 32],
}

impl HintHash {
    /// The hash of the hint of entries `hint` (row-major), every piece hashed.
    fn of(hint: &[u32]) -> Self {
        let bytes = wire::le_bytes(hint);
        let pieces = bytes
            .par_chunks(HINT_PIECE_BYTES)
            .map(|piece| Sha256::digest(piece).into())
            .collect();
        Self::from_pieces(bytes.len(), pieces)
    }

    /// The hash of a hint of `len` bytes whose pieces have the SHA-256s `pieces`.
    fn from_pieces(len: usize, pieces: Vec<[u8; 32]>) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"obscura/lwe/hint/v1");
        hash.update((len as u64).to_le_bytes());
        for piece in &pieces {
            hash.update(piece);
        }
        Self {
            len,
            pieces: Arc::new(pieces),
            root: hash.finalize().into(),
        }
    }

    /// The hash of `hint` (of the length this one was made for), which differs from the hint
    /// this one was made of in rows `touched` only.
    fn rehash(&mut self, hint: &Matrix, touched: &[Range<usize>]) {
        let bytes = wire::le_bytes(hint.as_slice());
        debug_assert_eq!(bytes.len(), self.len);
        let row_bytes = 4 * hint.cols();
        let mut stale = vec![false; self.pieces.len()];
        for rows in touched
            .iter()
            .filter(|rows| !rows.is_empty() && row_bytes > 0)
        {
            let first = rows.start * row_bytes / HINT_PIECE_BYTES;
            let last = (rows.end * row_bytes - 1) / HINT_PIECE_BYTES;
            stale[first..=last].fill(true);
        }
        let mut pieces = std::mem::take(Arc::make_mut(&mut self.pieces));
        pieces
            .par_iter_mut()
            .zip(bytes.par_chunks(HINT_PIECE_BYTES))
            .zip(stale.par_iter())
            .filter(|(_, &stale)| stale)
            .for_each(|((hash, piece), _)| *hash = Sha256::digest(piece).into());
        *self = Self::from_pieces(self.len, pieces);
    }
}

/// The public matrix `A` of a setup.
pub(super) fn matrix_a(params: &LweParams, seed: MatrixSeed, geometry: &Geometry) -> PublicMatrix {
    let (rows, n) = (geometry.cols() as usize, params.n());
    match params.matrix {
        MatrixKind::Uniform => PublicMatrix::Uniform(SeededMatrix::new(seed, DOMAIN_A, rows, n)),
        MatrixKind::Negacyclic => PublicMatrix::Negacyclic(
            NegacyclicMatrix::new(seed, DOMAIN_A, rows, n).expect("checked by LweParams::new"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hint of several pieces and a part of one: the hash is the same for the same entries
    /// and changes with an entry of any piece, the last one included, and with the length; a
    /// hash made again for the rows that changed is the hash of the new hint.
    #[test]
    fn a_hint_hash_covers_every_piece_and_is_made_again_for_changed_rows() {
        let n = 64;
        let rows = 3 * HINT_PIECE_BYTES / (4 * n) + 5;
        let entries: Vec<u32> = (0..rows * n)
            .map(|i| (i as u32).wrapping_mul(0x9e37_79b9))
            .collect();
        let hint = Matrix::from_vec(rows, n, entries.clone()).unwrap();
        let hash = HintHash::of(hint.as_slice());
        assert_eq!(hash, HintHash::of(hint.clone().as_slice()));
        assert_eq!(hash.pieces.len(), 4);
        for at in [0, HINT_PIECE_BYTES / 4 + 3, rows * n - 1] {
            let mut changed = entries.clone();
            changed[at] ^= 1 << 31;
            let changed = Matrix::from_vec(rows, n, changed).unwrap();
            let fresh = HintHash::of(changed.as_slice());
            assert_ne!(fresh.root, hash.root, "{at}");
            let row = at / n;
            let mut again = hash.clone();
            again.rehash(&changed, &[0..0, row..row + 1]);
            assert_eq!(again, fresh, "{at}");
            let mut elsewhere = hash.clone();
            let far = (row + rows / 2) % rows;
            elsewhere.rehash(&changed, &[far..far + 1, far..far]);
            assert_ne!(elsewhere, fresh, "{at}");
        }
        let shorter = Matrix::from_vec(rows - 1, n, entries[..(rows - 1) * n].to_vec()).unwrap();
        assert_ne!(HintHash::of(shorter.as_slice()).root, hash.root);
    }
}
