//! The committed inputs of each target: `corpus/<target>/` (seeds and edge cases) and
//! `crashes/<target>/` (inputs that once failed, kept as regressions).

use std::path::{Path, PathBuf};

/// The folder of this crate's corpus and crashes.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The seed corpus folder of `target`.
pub fn corpus_dir(target: &str) -> PathBuf {
    root().join("corpus").join(target)
}

/// The folder of `target`'s saved crashing inputs.
pub fn crashes_dir(target: &str) -> PathBuf {
    root().join("crashes").join(target)
}

/// The files of `dir`, sorted by name (none when it does not exist).
pub fn load(dir: &Path) -> std::io::Result<Vec<(PathBuf, Vec<u8>)>> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut files = Vec::new();
    for entry in listing {
        let path = entry?.path();
        if path.is_file() {
            let bytes = std::fs::read(&path)?;
            files.push((path, bytes));
        }
    }
    files.sort();
    Ok(files)
}

/// Every committed input of `target`: its corpus, then its crashes.
pub fn committed(target: &str) -> std::io::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = load(&corpus_dir(target))?;
    files.extend(load(&crashes_dir(target))?);
    Ok(files)
}

/// Saves `bytes` in `dir` as `<prefix>-<hash of the bytes>` and returns the path.
pub fn save(dir: &Path, prefix: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{prefix}-{:016x}", fnv1a(bytes)));
    std::fs::write(&path, bytes)?;
    Ok(path)
}

/// The 64-bit FNV-1a hash, which names saved inputs.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
