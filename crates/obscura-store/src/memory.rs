//! Size checks before a build or a load: a setup that needs more memory than the machine has
//! (or than a caller's limit) is refused before it allocates anything, and so is a database file
//! larger than the memory available to hold it; a setup whose hint or file dwarfs its data gets
//! a warning.

use obscura_pir::lwe::{Footprint, Layout};

use crate::store;

/// Below this a hint or a file draws no warning, however large against the data.
const WARN_FLOOR: u64 = 64 << 20;

/// A hint or file more than this many times the data draws a warning (above [`WARN_FLOOR`]).
const WARN_RATIO: u64 = 4;

/// The size of the database file a setup of `footprint` writes.
pub fn file_bytes(footprint: &Footprint) -> u64 {
    store::file_len(footprint.setup_bytes(), footprint.matrix_bytes())
}

/// A byte count in binary units, e.g. `12.0 GiB`.
pub fn human(bytes: u64) -> String {
    let mut value = bytes as f64;
    for unit in ["B", "KiB", "MiB", "GiB"] {
        if value < 1024.0 {
            return format!("{value:.1} {unit}");
        }
        value /= 1024.0;
    }
    format!("{value:.1} TiB")
}

/// The memory a build may use, and a phrase that says so: `max_memory` when given, else the
/// memory the system reports available (`MemAvailable`, or `MemTotal`, of /proc/meminfo);
/// `None` where neither is known (no check then).
fn limit(max_memory: Option<u64>, limit_name: &str) -> Option<(u64, String)> {
    if let Some(max) = max_memory {
        return Some((max, format!("{limit_name} allows {}", human(max))));
    }
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
            .map(|kib| kib.saturating_mul(1024))
    };
    let (bytes, what) = field("MemAvailable")
        .map(|bytes| (bytes, "available"))
        .or_else(|| field("MemTotal").map(|bytes| (bytes, "in all")))?;
    Some((bytes, format!("this machine has {} {what}", human(bytes))))
}

/// Whether `bytes` of memory fit what a build may use (see [`Plan::check`]); anything fits where
/// the system does not say what it has.
pub fn fits(bytes: u64, max_memory: Option<u64>) -> bool {
    limit(max_memory, "").is_none_or(|(limit, _)| bytes <= limit)
}

/// Refuses to hold a file of `bytes` in memory when the machine has less available (a
/// database is served from memory, see [`crate::store::read_database`]).
pub fn check_resident(bytes: u64) -> Result<(), MemoryError> {
    match limit(None, "") {
        Some((limit, allowed)) if bytes > limit => Err(MemoryError {
            needed: bytes,
            limit,
            message: format!("holding it needs {} of memory but {allowed}", human(bytes)),
        }),
        _ => Ok(()),
    }
}

/// The named layouts other than `chosen` (square, one per column) whose footprint
/// `footprint_of` gives, named by `name` and cheapest first: the [`Plan::alternatives`] of a
/// build whose layout is free.
pub fn alternatives(
    chosen: Layout,
    footprint_of: impl Fn(Layout) -> Option<Footprint>,
    name: impl Fn(Layout) -> String,
) -> Vec<(String, Footprint)> {
    let mut alternatives: Vec<(String, Footprint)> = [Layout::Square, Layout::OnePerColumn]
        .into_iter()
        .filter(|&layout| layout != chosen)
        .filter_map(|layout| Some((name(layout), footprint_of(layout)?)))
        .collect();
    alternatives.sort_by_key(|(_, footprint)| footprint.peak_bytes());
    alternatives
}

/// A build, or a database's loading, refused because it needs more memory than it may use.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct MemoryError {
    /// Bytes it needs.
    pub needed: u64,
    /// Bytes it may use.
    pub limit: u64,
    /// What it needs and why, with a layout that fits where there is one.
    pub message: String,
}

/// What a build will cost, checked before it starts.
pub struct Plan {
    /// The setup's footprint.
    pub footprint: Footprint,
    /// Bytes the build holds besides the setup (its input, read into memory).
    pub input_bytes: u64,
    /// Bytes of data the database serves (the warning compares the hint and file with it).
    pub data_bytes: u64,
    /// The caller's limit, if any (else the memory the system has available).
    pub max_memory: Option<u64>,
    /// How messages name the caller's limit (e.g. `--max-memory`).
    pub limit_name: &'static str,
    /// Other layouts worth naming (as the caller names them), with their footprints, best first.
    pub alternatives: Vec<(String, Footprint)>,
}

impl Plan {
    /// Refuses a build that needs more memory than the limit, naming the figures and a layout
    /// that fits; returns a warning when the hint or the file exceeds both `WARN_RATIO` (4) times
    /// the data and `WARN_FLOOR` (64 MiB).
    pub fn check(&self) -> Result<Option<String>, MemoryError> {
        let (f, file) = (&self.footprint, file_bytes(&self.footprint));
        let needed = f.peak_bytes().saturating_add(self.input_bytes);
        let figures = format!(
            "hint {}, file {}, for {} of data",
            human(f.hint_bytes()),
            human(file),
            human(self.data_bytes)
        );
        if let Some((limit, allowed)) = limit(self.max_memory, self.limit_name) {
            if needed > limit {
                let fitting = self.alternatives.iter().find(|(_, other)| {
                    other.peak_bytes().saturating_add(self.input_bytes) <= limit
                });
                let advice = match fitting {
                    Some((layout, other)) => format!(
                        "; {layout} would need {} (file {})",
                        human(other.peak_bytes().saturating_add(self.input_bytes)),
                        human(file_bytes(other))
                    ),
                    None => String::new(),
                };
                return Err(MemoryError {
                    needed,
                    limit,
                    message: format!(
                        "this build needs about {} of memory ({figures}) but {allowed}{advice}",
                        human(needed)
                    ),
                });
            }
        }
        let bound = self.data_bytes.saturating_mul(WARN_RATIO).max(WARN_FLOOR);
        if f.hint_bytes() > bound || file > bound {
            let advice = match self.alternatives.first() {
                Some((layout, other)) if file_bytes(other) < file => format!(
                    "; {layout} would make the hint {} and the file {}",
                    human(other.hint_bytes()),
                    human(file_bytes(other))
                ),
                _ => String::new(),
            };
            return Ok(Some(format!(
                "the setup is large against its data ({figures}){advice}"
            )));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{write_database, Database};
    use obscura_pir::keyword::{KeywordOptions, KeywordServer};
    use obscura_pir::lwe::{EngineOptions, Layout, Server};

    /// The predicted file size is the size of the file written, to the byte.
    #[test]
    fn file_size_is_predicted_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let options = EngineOptions {
            layout: Layout::Square,
            ..EngineOptions::default()
        };
        let data = vec![7u8; 5000];
        let index = Server::from_records(&data, 33, options, &|_, _| {}).unwrap();
        let footprint = Server::footprint(5000, 33, options).unwrap();
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
            .map(|i| (vec![i], vec![i; usize::from(i % 5)]))
            .collect();
        let keyword_options = KeywordOptions::default();
        let keyword = KeywordServer::from_pairs(&pairs, keyword_options, &|_, _| {}).unwrap();
        let keyword_footprint = KeywordServer::footprint(20, 4, false, keyword_options).unwrap();
        for (database, footprint) in [
            (Database::from(index), footprint),
            (Database::from(keyword), keyword_footprint),
        ] {
            let path = dir.path().join("db.obs");
            write_database(&path, &database).unwrap();
            let written = std::fs::metadata(&path).unwrap().len();
            assert_eq!(file_bytes(&footprint), written, "{:?}", database.kind());
        }
    }
}
