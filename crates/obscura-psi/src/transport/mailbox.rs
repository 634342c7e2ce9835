//! [`MailboxTransport`]: frames as files in a folder both parties can reach, for two parties that
//! can only exchange files (two batch jobs, two organisations with a shared bucket and no open
//! port).
//!
//! Each frame is one file named by the session, the attempt, the bucket, the round and the
//! direction, `SESSION.aATTEMPT.bBUCKET.rROUND.client-to-server` (numbers zero-padded, so a
//! listing sorts in order); the round counts a direction's frames within a bucket. A file is
//! written under a temporary name (a dot and the sender's process id in front) and renamed,
//! so the reader sees it whole or not at all, and the reader removes it once read. The file's
//! content is the frame as a stream carries it (kind byte, `u32` payload length, payload): the
//! kind and length are checked on the header before anything is allocated, and the file's size
//! against the length. The reader polls for the next name (every 50 µs at first, backing off
//! to every 2 ms), so it works on any file system, network ones included, and waits at most the
//! transport's timeout.
//!
//! A session's attempt runs once in a folder: opening one takes a lock file for this party's
//! role (`SESSION.aATTEMPT.server.lock`) and refuses if it exists, and the lock stays after the
//! run. So frames left by a run that stopped are never read by a later one: rerun with the next
//! attempt (or another session name) on both sides.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::frame::{read_frame, HEADER_BYTES};
use super::{FrameKind, Transport, TransportError};
use crate::Role;

/// The longest session name (letters, digits, `-` and `_`).
pub const MAX_SESSION_CHARS: usize = 64;

/// The first and the longest wait between two looks for the next frame's file.
const POLL: (Duration, Duration) = (Duration::from_micros(50), Duration::from_millis(2));

/// A [`Transport`] over a shared folder (see the [module docs](self)).
pub struct MailboxTransport {
    folder: PathBuf,
    session: String,
    attempt: u32,
    role: Role,
    bucket: u64,
    /// Frames sent and received in the current bucket.
    rounds: (u64, u64),
    timeout: Duration,
    sent: u64,
    received: u64,
}

/// Why a mailbox session cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MailboxError {
    /// The session name is empty, too long, or has characters other than letters, digits, `-`
    /// and `_`.
    #[error("the session name {0:?} must be 1 to {MAX_SESSION_CHARS} letters, digits, '-' or '_'")]
    SessionName(String),
    /// The attempt number is zero.
    #[error("attempts count from 1")]
    Attempt,
    /// This attempt of the session was already started in the folder with this role.
    #[error(
        "attempt {attempt} of session {session:?} was already started in this folder by a \
         {role} ({lock} exists): start attempt {next} on both sides, or use another session name",
        lock = .lock.display(),
        next = .attempt + 1
    )]
    AlreadyRan {
        /// The session.
        session: String,
        /// The attempt.
        attempt: u32,
        /// This party's role.
        role: Role,
        /// The lock file.
        lock: PathBuf,
    },
    /// The folder cannot be used.
    #[error("{}", path.display())]
    Folder {
        /// The folder or the lock file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Whether `session` can name a mailbox session: 1 to [`MAX_SESSION_CHARS`] letters, digits,
/// `-` or `_` (so it is one file-name component on every system).
pub fn check_session_name(session: &str) -> Result<(), MailboxError> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if session.is_empty() || session.len() > MAX_SESSION_CHARS || !session.chars().all(valid) {
        return Err(MailboxError::SessionName(session.to_owned()));
    }
    Ok(())
}

impl MailboxTransport {
    /// Opens attempt `attempt` (from 1) of `session` in `folder` for this party's `role`; every
    /// read waits at most `timeout` for the peer's next frame.
    pub fn open(
        folder: &Path,
        session: &str,
        attempt: u32,
        role: Role,
        timeout: Duration,
    ) -> Result<Self, MailboxError> {
        check_session_name(session)?;
        if attempt == 0 {
            return Err(MailboxError::Attempt);
        }
        let lock = folder.join(format!("{session}.a{attempt}.{role}.lock"));
        match OpenOptions::new().write(true).create_new(true).open(&lock) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                return Err(MailboxError::AlreadyRan {
                    session: session.to_owned(),
                    attempt,
                    role,
                    lock,
                })
            }
            Err(source) => return Err(MailboxError::Folder { path: lock, source }),
        }
        Ok(Self {
            folder: folder.to_path_buf(),
            session: session.to_owned(),
            attempt,
            role,
            bucket: 0,
            rounds: (0, 0),
            timeout,
            sent: 0,
            received: 0,
        })
    }

    /// The file of frame `round` of the current bucket sent by `from`.
    fn frame_path(&self, from: Role, round: u64) -> PathBuf {
        let direction = match from {
            Role::Client => "client-to-server",
            Role::Server => "server-to-client",
        };
        self.folder.join(format!(
            "{}.a{}.b{:06}.r{:06}.{direction}",
            self.session, self.attempt, self.bucket, round
        ))
    }

    /// Opens `path` once it exists, looking again until the timeout.
    fn wait_for(&self, path: &Path, expected: FrameKind) -> Result<File, TransportError> {
        let started = Instant::now();
        let mut pause = POLL.0;
        loop {
            match File::open(path) {
                Ok(file) => return Ok(file),
                Err(error) if error.kind() == ErrorKind::NotFound => {}
                Err(error) => return Err(error.into()),
            }
            if started.elapsed() >= self.timeout {
                return Err(TransportError::Timeout { expected });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(POLL.1);
        }
    }
}

impl Transport for MailboxTransport {
    fn send(&mut self, kind: FrameKind, payload: &[u8]) -> Result<(), TransportError> {
        let path = self.frame_path(self.role, self.rounds.0);
        let name = path.file_name().expect("a frame path names a file");
        let temporary = self.folder.join(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let mut frame = Vec::with_capacity(HEADER_BYTES + payload.len());
        super::frame::write_frame(&mut frame, kind, payload)?;
        File::create(&temporary)
            .and_then(|mut file| file.write_all(&frame))
            .and_then(|()| fs::rename(&temporary, &path))?;
        self.rounds.0 += 1;
        self.sent += frame.len() as u64;
        Ok(())
    }

    fn recv(&mut self, expected: FrameKind, max_len: usize) -> Result<Vec<u8>, TransportError> {
        let peer = match self.role {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        };
        let path = self.frame_path(peer, self.rounds.1);
        let mut file = self.wait_for(&path, expected)?;
        let payload = read_frame(&mut file, expected, max_len)?;
        // A file longer than its frame was not written by a peer of this format.
        if file.read(&mut [0u8])? != 0 {
            return Err(TransportError::TrailingBytes { kind: expected });
        }
        fs::remove_file(&path)?;
        self.rounds.1 += 1;
        self.received += (HEADER_BYTES + payload.len()) as u64;
        Ok(payload)
    }

    fn bucket(&mut self, index: u64) {
        self.bucket = index;
        self.rounds = (0, 0);
    }

    fn bytes_sent(&self) -> u64 {
        self.sent
    }

    fn bytes_received(&self) -> u64 {
        self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    fn pair(folder: &Path, session: &str) -> (MailboxTransport, MailboxTransport) {
        let open = |role| MailboxTransport::open(folder, session, 1, role, Duration::from_secs(5));
        (open(Role::Client).unwrap(), open(Role::Server).unwrap())
    }

    #[test]
    fn frames_arrive_in_order_and_are_removed_once_read() {
        let folder = tempfile::tempdir().unwrap();
        let (mut client, mut server) = pair(folder.path(), "s1");
        client.send(kinds::HELLO, b"one").unwrap();
        client.send(kinds::HELLO, b"two").unwrap();
        server.send(kinds::SERVER_TAGS, &[7; 1000]).unwrap();
        assert_eq!(server.recv(kinds::HELLO, 10).unwrap(), b"one");
        assert_eq!(server.recv(kinds::HELLO, 10).unwrap(), b"two");
        assert_eq!(client.recv(kinds::SERVER_TAGS, 1000).unwrap(), [7; 1000]);
        client.bucket(3);
        server.bucket(3);
        client.send(kinds::BUCKET_ROWS, b"x").unwrap();
        assert!(folder
            .path()
            .join("s1.a1.b000003.r000000.client-to-server")
            .exists());
        assert_eq!(server.recv(kinds::BUCKET_ROWS, 1).unwrap(), b"x");
        assert_eq!((client.bytes_sent(), server.bytes_received()), (22, 22));
        let left: Vec<String> = fs::read_dir(folder.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.ends_with(".lock"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_bad_frame_is_refused_on_its_header_and_a_missing_one_times_out() {
        let folder = tempfile::tempdir().unwrap();
        let open = |session, timeout| {
            MailboxTransport::open(folder.path(), session, 1, Role::Server, timeout).unwrap()
        };
        let write = |name: &str, bytes: &[u8]| fs::write(folder.path().join(name), bytes).unwrap();
        let first = "r000000.client-to-server";
        write(
            &format!("long.a1.b000000.{first}"),
            &[1, 0xff, 0xff, 0xff, 0xff],
        );
        let error = open("long", Duration::from_secs(1)).recv(kinds::HELLO, 100);
        assert!(
            matches!(
                error,
                Err(TransportError::TooLong {
                    len: 4294967295,
                    ..
                })
            ),
            "{error:?}"
        );
        write(&format!("kind.a1.b000000.{first}"), &[2, 0, 0, 0, 0]);
        let error = open("kind", Duration::from_secs(1)).recv(kinds::HELLO, 100);
        assert!(
            matches!(error, Err(TransportError::WrongKind { .. })),
            "{error:?}"
        );
        write(&format!("short.a1.b000000.{first}"), &[1, 3, 0, 0, 0, 1]);
        let error = open("short", Duration::from_secs(1)).recv(kinds::HELLO, 100);
        assert!(
            matches!(error, Err(TransportError::Truncated { .. })),
            "{error:?}"
        );
        write(
            &format!("trailing.a1.b000000.{first}"),
            &[1, 1, 0, 0, 0, 1, 2],
        );
        let error = open("trailing", Duration::from_secs(1)).recv(kinds::HELLO, 100);
        assert!(
            matches!(error, Err(TransportError::TrailingBytes { .. })),
            "{error:?}"
        );
        let started = Instant::now();
        let error = open("silent", Duration::from_millis(100)).recv(kinds::HELLO, 100);
        assert!(
            matches!(error, Err(TransportError::Timeout { .. })),
            "{error:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
    }

    #[test]
    fn an_attempt_runs_once_per_role_and_names_are_checked() {
        let folder = tempfile::tempdir().unwrap();
        let open = |session: &str, attempt, role| {
            MailboxTransport::open(
                folder.path(),
                session,
                attempt,
                role,
                Duration::from_secs(1),
            )
        };
        open("join", 1, Role::Server).unwrap();
        open("join", 1, Role::Client).unwrap();
        let again = open("join", 1, Role::Server).err().unwrap();
        assert!(matches!(again, MailboxError::AlreadyRan { attempt: 1, .. }));
        assert!(
            again.to_string().contains("start attempt 2 on both sides"),
            "{again}"
        );
        open("join", 2, Role::Server).unwrap();
        for bad in ["", "a/b", "../x", "a.b", &"x".repeat(65)] {
            assert!(matches!(
                open(bad, 1, Role::Client),
                Err(MailboxError::SessionName(_))
            ));
        }
        assert!(matches!(
            open("ok", 0, Role::Client),
            Err(MailboxError::Attempt)
        ));
        let missing = MailboxTransport::open(
            &folder.path().join("absent"),
            "join",
            1,
            Role::Client,
            Duration::from_secs(1),
        );
        assert!(matches!(missing, Err(MailboxError::Folder { .. })));
    }
}
