//! RR22 VOLE-PSI.

mod ea_code;
mod gf128;
mod iknp;
mod okvs;
mod pprf;
mod vole;
