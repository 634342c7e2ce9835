//! Obscura's Python bindings (the `obscura._obscura` extension module): private lookups (PIR)
//! and private joins (PSI) from Python. They hold no cryptography: every call goes to the
//! library crates, with the GIL released while they work. The Python package `obscura`
//! (`python/obscura/`) wraps this module with tqdm progress bars and re-exports it.

#![deny(unsafe_code)]

mod errors;
mod items;
mod pir;
mod progress;
mod psi;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _obscura(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // An OBSCURA_BACKEND this CPU cannot run refuses the import instead of failing later.
    obscura_math::backend::Backend::select()
        .map_err(|error| errors::error(errors::Class::InvalidInput, error))?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(pir::build_index, module)?)?;
    module.add_function(wrap_pyfunction!(pir::build_keyword, module)?)?;
    module.add_function(wrap_pyfunction!(pir::build_merkle, module)?)?;
    module.add_function(wrap_pyfunction!(pir::update, module)?)?;
    module.add_function(wrap_pyfunction!(psi::run_psi, module)?)?;
    module.add_class::<pir::Client>()?;
    module.add_class::<pir::BuildReport>()?;
    module.add_class::<pir::AuditPath>()?;
    module.add_class::<pir::Consistency>()?;
    module.add_class::<psi::PsiResult>()?;
    module.add_class::<psi::EcdhPsiServer>()?;
    module.add_class::<psi::EcdhPsiClient>()?;
    Ok(())
}
