//! Read leases on served database files: the kernel tells the server before another process
//! writes to or truncates a file it serves from a memory mapping.
//!
//! A served matrix is read straight from a shared mapping of its file. If another process
//! truncated the file, reading the lost pages would kill the server with `SIGBUS`; if it wrote
//! into the file, an answer could mix bytes of two versions. A Linux read lease
//! (`fcntl(F_SETLEASE, F_RDLCK)`) prevents both: when another process opens the file for writing
//! or truncates it, the kernel holds that process back (for up to
//! `/proc/sys/fs/lease-break-time` seconds, 45 by default) and sends this process `SIGIO`. The
//! watcher thread of this module then revokes the file: it waits for the answers reading the
//! mapping to finish, marks the file changed so that no answer reads it again, and releases the
//! lease, which lets the writer go on. A database replaced by renaming a new file over the old
//! one (what `obscura build --out` does) breaks no lease: the old file stays served, unchanged,
//! until the server reloads.
//!
//! Where a lease cannot be taken (another OS, a file system without leases, a file owned by
//! another user without `CAP_LEASE`), [`Lease::take`] says why and the caller falls back to
//! checking the file's size before each pass.

use std::fs::File;
use std::io;
use std::sync::{Mutex, Once, Weak};

/// Something the lease watcher revokes when its file's lease is broken.
pub trait Revocable: Send + Sync {
    /// Checks this file's lease and, if another process wants to write the file, stops serving
    /// it and releases the lease.
    fn revoke_if_broken(&self);
}

/// A read lease held on an open file (released when the file is closed).
pub struct Lease(());

impl Lease {
    /// Takes a read lease on `file`, which must be open read-only. Fails with `WouldBlock` when
    /// the file is open for writing somewhere, and with the OS's reason when leases are
    /// unavailable. Its holder must then be [`watch`]ed, or a break goes unanswered.
    pub fn take(file: &File) -> io::Result<Self> {
        start_watcher()?;
        os::set_read_lease(file)?;
        Ok(Self(()))
    }

    /// Whether the lease is still held intact: `false` once another process has asked to write
    /// or truncate the file.
    pub fn intact(&self, file: &File) -> bool {
        os::holds_read_lease(file)
    }

    /// Releases the lease, letting a waiting writer go on.
    pub fn release(&self, file: &File) {
        os::release_lease(file);
    }
}

/// Every file with a lease, checked on each `SIGIO`.
static WATCHED: Mutex<Vec<Weak<dyn Revocable>>> = Mutex::new(Vec::new());

/// Has `holder` (which holds a [`Lease`], and is already alive: the files that are gone are
/// forgotten here) revoked when its lease breaks. A break between the lease's taking and this
/// call is caught by checking `holder` once more after it is registered.
pub fn watch(holder: &std::sync::Arc<dyn Revocable>) {
    {
        let mut all = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|w| w.strong_count() > 0);
        all.push(std::sync::Arc::downgrade(holder));
    }
    holder.revoke_if_broken();
}

/// Installs the `SIGIO` handler (whose default action would end the process) and starts the
/// thread that revokes broken leases, once per process.
fn start_watcher() -> io::Result<()> {
    static START: Once = Once::new();
    static FAILED: Mutex<Option<String>> = Mutex::new(None);
    START.call_once(|| {
        let started = signal_hook::iterator::Signals::new([signal_hook::consts::SIGIO]).and_then(
            |mut signals| {
                std::thread::Builder::new()
                    .name("obscura-lease-watcher".into())
                    .spawn(move || {
                        for _ in signals.forever() {
                            revoke_broken();
                        }
                    })
            },
        );
        if let Err(error) = started {
            *FAILED.lock().unwrap_or_else(|e| e.into_inner()) = Some(error.to_string());
        }
    });
    match FAILED.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(reason) => Err(io::Error::other(format!(
            "cannot watch for lease breaks: {reason}"
        ))),
        None => Ok(()),
    }
}

/// Revokes every watched file whose lease is broken, and forgets the files that are gone.
fn revoke_broken() {
    let alive: Vec<_> = {
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        watched.retain(|w| w.strong_count() > 0);
        watched.iter().filter_map(Weak::upgrade).collect()
    };
    for file in alive {
        file.revoke_if_broken();
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod os {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;

    pub fn set_read_lease(file: &File) -> io::Result<()> {
        // SAFETY: `fcntl(F_SETLEASE)` takes an open descriptor and an integer; `file` owns the
        // descriptor for the duration of the call.
        let result = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) };
        if result == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn holds_read_lease(file: &File) -> bool {
        // SAFETY: as above; `F_GETLEASE` only reads the lease state (`F_UNLCK` while a break
        // is pending).
        let state = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLEASE) };
        state == libc::F_RDLCK
    }

    pub fn release_lease(file: &File) {
        // SAFETY: as above. Failure leaves the lease to expire after the break time.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use std::fs::File;
    use std::io;

    pub fn set_read_lease(_file: &File) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "file leases are available on Linux only",
        ))
    }

    pub fn holds_read_lease(_file: &File) -> bool {
        false
    }

    pub fn release_lease(_file: &File) {}
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;

    /// Holds a leased file and says whether it was revoked.
    struct Holder {
        file: File,
        lease: Lease,
        revoked: Arc<AtomicBool>,
    }

    impl Revocable for Holder {
        fn revoke_if_broken(&self) {
            if !self.lease.intact(&self.file) {
                self.revoked.store(true, Ordering::SeqCst);
                self.lease.release(&self.file);
            }
        }
    }

    /// A writer that arrives between a lease's taking and its holder's watching is let go at
    /// once, not after the kernel's lease-break time (45 s by default).
    #[test]
    fn a_lease_broken_before_its_holder_is_watched_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("served");
        std::fs::write(&path, b"served bytes").unwrap();
        let file = File::open(&path).unwrap();
        let lease =
            Lease::take(&file).expect("this test needs file leases (Linux, a local file system)");
        let writer = std::thread::spawn(move || {
            let started = Instant::now();
            std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            started.elapsed()
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while lease.intact(&file) {
            assert!(
                Instant::now() < deadline,
                "the writer never broke the lease"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let revoked = Arc::new(AtomicBool::new(false));
        let holder: Arc<dyn Revocable> = Arc::new(Holder {
            file,
            lease,
            revoked: revoked.clone(),
        });
        watch(&holder);
        assert!(revoked.load(Ordering::SeqCst));
        let waited = writer.join().unwrap();
        assert!(
            waited < Duration::from_secs(10),
            "the writer waited {waited:?}"
        );
    }
}
