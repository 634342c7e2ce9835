//! Oblivious transfer: the base OTs ([`base`], Masny-Rindal, secure against malicious parties)
//! and one extension of them from AES-expanded seeds ([`extension`]), used as IKNP's correlated
//! OT ([`iknp`], 128 columns, for RR22's VOLE) and as KKRT's batched OPRF ([`kkrt`], 512 columns
//! of the pseudorandom code of [`code`]).

pub(crate) mod base;
pub(crate) mod code;
pub(crate) mod extension;
pub(crate) mod iknp;
pub(crate) mod kkrt;
