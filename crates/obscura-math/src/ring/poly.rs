//! Polynomials of a [`Ring`](super::Ring) as residues, tagged with their form.

use std::marker::PhantomData;

/// The coefficient form: residue `i` is the coefficient of `x^i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coefficients {}

/// The evaluation (NTT) form: residue `i` is the value at `ψ^(2·bitrev(i) + 1)`, for `ψ` the
/// transform's primitive `2n`-th root of unity modulo each prime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evaluations {}

/// The form a [`Poly`] is held in: [`Coefficients`] or [`Evaluations`].
pub trait Form: sealed::Sealed + Clone + std::fmt::Debug {
    /// Whether this is the evaluation form.
    const EVALUATIONS: bool;
}

impl Form for Coefficients {
    const EVALUATIONS: bool = false;
}

impl Form for Evaluations {
    const EVALUATIONS: bool = true;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Coefficients {}
    impl Sealed for super::Evaluations {}
}

/// A polynomial of degree below `n` modulo `q = p0 · p1`, as its `n` residues modulo `p0`
/// followed by its `n` residues modulo `p1`, each in `[0, p)`, in form `F`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Poly<F: Form> {
    pub(super) data: Vec<u32>,
    form: PhantomData<F>,
}

impl<F: Form> Poly<F> {
    /// The zero polynomial of degree `n` (zero in both forms).
    pub fn zero(n: usize) -> Self {
        Self::from_data(vec![0; 2 * n])
    }

    /// A polynomial over residues laid out as [`Poly`] describes.
    pub(super) fn from_data(data: Vec<u32>) -> Self {
        Self {
            data,
            form: PhantomData,
        }
    }

    /// The residues: `n` modulo the first prime, then `n` modulo the second.
    pub fn residues(&self) -> &[u32] {
        &self.data
    }

    /// The degree `n` of the ring it belongs to.
    pub fn degree(&self) -> usize {
        self.data.len() / 2
    }
}

impl<F: Form> zeroize::Zeroize for Poly<F> {
    fn zeroize(&mut self) {
        self.data.zeroize();
    }
}
