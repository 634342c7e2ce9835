//! Python values as the byte strings the library takes: `bytes`, `bytearray` and `memoryview`
//! as they are, `str` as UTF-8; anything else is refused with its position and type.

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyIterator, PyMemoryView, PyString};

use crate::errors::{error, Class};

/// The bytes of one item, `what` naming it in an error (e.g. "item 3"). A pyarrow scalar is
/// read as its Python value.
pub fn bytes_of(value: &Bound<'_, PyAny>, what: impl FnOnce() -> String) -> PyResult<Vec<u8>> {
    // The common types first: asking anything of a str or bytes costs more than converting it.
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_cow()?.into_owned().into_bytes());
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if let Ok(array) = value.cast::<PyByteArray>() {
        return Ok(array.to_vec());
    }
    if value.cast::<PyMemoryView>().is_ok() {
        let bytes = value.call_method0("tobytes")?;
        return Ok(bytes.cast::<PyBytes>()?.as_bytes().to_vec());
    }
    if value.hasattr("as_py")? {
        let value = value.call_method0("as_py")?;
        if value.cast::<PyString>().is_ok() || value.cast::<PyBytes>().is_ok() {
            return bytes_of(&value, what);
        }
    }
    Err(error(
        Class::InvalidInput,
        format!("{} is {}, not str or bytes", what(), describe(value)),
    ))
}

/// A value's type as messages name it: `None`, or `a float` and so on.
pub fn describe(value: &Bound<'_, PyAny>) -> String {
    if value.is_none() {
        return "None".into();
    }
    let name = value
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "an object".into());
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// The items of any iterable of `str` or `bytes` (a list, a tuple, a generator, a pandas
/// Series or a pyarrow array), in order.
pub fn collect(items: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for (row, item) in iterate(items)?.enumerate() {
        out.push(bytes_of(&item?, || format!("item {row}"))?);
    }
    Ok(out)
}

/// An iterator over `items`, refusing a single `str` or `bytes` (whose characters would each
/// be an item).
pub fn iterate<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyIterator>> {
    if items.is_instance_of::<PyString>() || items.is_instance_of::<PyBytes>() {
        return Err(error(
            Class::InvalidInput,
            format!(
                "the items are {}, whose characters would each be an item: pass a list (or any iterable) of items",
                describe(items)
            ),
        ));
    }
    items.try_iter()
}
