//! The temporary files of databases being written, so that no build leaves debris: each is
//! created beside its final file under a recognisable name (`.NAME.XXXXXX.obscura-partial-PID`,
//! the writing process's id at the end), removed when the write fails or its process is
//! interrupted ([`remove_on_signals`]), and one left by a killed process is removed by the next
//! write into the same folder ([`sweep`]) once untouched for [`STALE_AFTER`] (a process of the
//! same id in another PID namespace, e.g. another container sharing the folder, writes its file
//! all along).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What ends the name of every temporary database file, before the writer's process id.
const MARK: &str = ".obscura-partial-";

/// How long a partial file of a process that is gone stays untouched before it is swept.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// The temporary files this process is writing now.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A temporary database file being written; deleted when dropped unless persisted.
pub(crate) struct Partial {
    temp: Option<tempfile::NamedTempFile>,
}

impl Partial {
    /// A new temporary file beside `path` (in its folder), once the partial files that killed
    /// processes left in that folder are removed.
    pub(crate) fn beside(path: &Path) -> std::io::Result<Self> {
        let dir = folder_of(path);
        sweep(dir);
        let name = path
            .file_name()
            .map_or("database".into(), |n| n.to_string_lossy());
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(&format!("{MARK}{}", std::process::id()))
            .tempfile_in(dir)?;
        live().push(temp.path().to_path_buf());
        Ok(Self { temp: Some(temp) })
    }

    /// The open file.
    pub(crate) fn file(&self) -> &std::fs::File {
        self.temp().as_file()
    }

    /// Its path.
    pub(crate) fn path(&self) -> &Path {
        self.temp().path()
    }

    fn temp(&self) -> &tempfile::NamedTempFile {
        self.temp
            .as_ref()
            .expect("a partial file is held until persisted")
    }

    /// Flushes the file to disk, renames it to `path` and flushes the directory, so that once
    /// this returns the new file survives a crash under its name.
    pub(crate) fn persist(mut self, path: &Path) -> std::io::Result<()> {
        let temp = self.temp.take().expect("a partial file is persisted once");
        forget(temp.path());
        temp.as_file().sync_all()?;
        temp.persist(path).map_err(|e| e.error)?;
        sync_folder_of(path)
    }
}

/// Flushes the folder that holds `path` to disk, so that a file renamed into it or removed
/// from it stays so after a crash.
pub(crate) fn sync_folder_of(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(folder_of(path))?.sync_all()
}

/// The folder that holds `path` (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            forget(temp.path());
        }
    }
}

/// Stops tracking `path`.
fn forget(path: &Path) {
    live().retain(|live| live != path);
}

/// The process id that wrote the partial file named `name`, if it is one.
fn writer_of(name: &str) -> Option<i32> {
    let (_, pid) = name.rsplit_once(MARK)?;
    name.starts_with('.').then_some(())?;
    pid.parse().ok()
}

/// Whether process `pid` is running.
#[allow(unsafe_code)]
fn running(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Whether the file of `entry` was last written over [`STALE_AFTER`] ago.
fn untouched(entry: &std::fs::DirEntry) -> bool {
    let modified = entry.metadata().and_then(|m| m.modified());
    modified.is_ok_and(|time| time.elapsed().is_ok_and(|age| age > STALE_AFTER))
}

/// Removes the partial database files in `dir` whose writing process is gone (killed before it
/// could clean up) and that were untouched for [`STALE_AFTER`]; returns how many. Files of
/// running processes are left alone.
pub fn sweep(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            let pid = writer_of(&name.to_string_lossy());
            pid.is_some_and(|pid| !running(pid))
                && untouched(entry)
                && std::fs::remove_file(entry.path()).is_ok()
        })
        .count()
}

/// Removes the partial files this process is writing when it receives SIGINT or SIGTERM, then
/// exits as that signal would (status 128 + its number). For commands that write databases.
pub fn remove_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("obscura-partial-cleanup".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                for path in live().drain(..) {
                    let _ = std::fs::remove_file(path);
                }
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_files_are_recognised_by_name() {
        assert_eq!(writer_of(".db.obs.a1B2c3.obscura-partial-4242"), Some(4242));
        assert_eq!(writer_of("db.obs.obscura-partial-4242"), None);
        assert_eq!(writer_of(".db.obs.tmp"), None);
        assert_eq!(writer_of(".x.obscura-partial-"), None);
    }

    #[test]
    fn a_dead_writers_file_is_swept_and_a_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        // A process id that no process has (above the kernel's pid_max).
        let dead = dir.path().join(".db.obs.abc.obscura-partial-2147483646");
        let recent = dir.path().join(".db.obs.def.obscura-partial-2147483646");
        let alive = dir
            .path()
            .join(format!(".db.obs.abc{MARK}{}", std::process::id()));
        let other = dir.path().join("db.obs");
        let long_ago = std::time::SystemTime::now() - 2 * STALE_AFTER;
        for path in [&dead, &recent, &alive, &other] {
            std::fs::write(path, b"x").unwrap();
            if path != &recent {
                let file = std::fs::File::options().write(true).open(path).unwrap();
                file.set_modified(long_ago).unwrap();
            }
        }
        assert_eq!(sweep(dir.path()), 1);
        assert!(!dead.exists() && recent.exists() && alive.exists() && other.exists());
    }

    #[test]
    fn a_dropped_partial_file_is_deleted_and_a_persisted_one_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        let dropped = Partial::beside(&path).unwrap();
        let temp = dropped.path().to_path_buf();
        assert!(writer_of(&temp.file_name().unwrap().to_string_lossy()).is_some());
        assert!(live().contains(&temp));
        drop(dropped);
        assert!(!temp.exists() && !live().contains(&temp));
        let kept = Partial::beside(&path).unwrap();
        std::io::Write::write_all(&mut kept.file(), b"db").unwrap();
        kept.persist(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"db");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
