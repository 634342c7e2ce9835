//! [`RateLimited`]: a writer that delivers its bytes no faster than a link of a given rate, to
//! measure a protocol on a simulated 100 Mbps or 10 Mbps network over a fast local connection.
//!
//! Writes are queued, at most [`QUEUE_BYTES`] of them (as a socket's send buffer holds them), and
//! a background thread hands them to the inner writer when a link of the chosen rate, plus an
//! optional one-way latency, would have delivered them: the piece queued at time `t` starts on
//! the link at `max(t, end of the previous piece)`, takes `8 · len / rate` seconds, and reaches
//! the inner writer `latency` later. The schedule is computed, not measured, so a late wake-up of
//! the thread never slows the link down. A write returns as soon as its bytes are queued, so the
//! sender computes while its earlier bytes are on the wire, as with a real socket; when the queue
//! is full, writes wait.
//!
//! ```
//! use obscura_psi::transport::limited::RateLimited;
//! use obscura_psi::kinds;
//! use obscura_psi::transport::{memory, StreamTransport, Transport};
//! use std::num::NonZeroU64;
//! use std::time::Duration;
//!
//! let timeout = Duration::from_secs(10);
//! let (writer, reader) = memory::pipe(timeout);
//! let (unused_writer, unused_reader) = memory::pipe(timeout);
//! let rate = NonZeroU64::new(100_000_000).expect("not zero"); // 100 Mbps
//! let mut sender = StreamTransport::new(unused_reader, RateLimited::new(writer, rate)?);
//! let mut receiver = StreamTransport::new(reader, unused_writer);
//! sender.send(kinds::HELLO, b"paced")?;
//! assert_eq!(receiver.recv(kinds::HELLO, 16)?, b"paced");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, Write};
use std::num::NonZeroU64;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Bytes a [`RateLimited`] writer queues before writes wait: Linux's default largest TCP send
/// buffer.
pub const QUEUE_BYTES: usize = 4 << 20;

/// The largest piece the link delivers at once: a finer piece lets the reader start earlier.
const MAX_PIECE_BYTES: usize = 64 << 10;

/// The smallest piece the link cuts a write into.
const MIN_PIECE_BYTES: usize = 1 << 10;

/// Link time per piece: the pieces of a long write arrive at least this often.
const PIECES_PER_SECOND: u64 = 100;

/// A writer that delivers to an inner writer at a given rate in bits per second (and optionally
/// after a one-way latency), from a background thread. Give it to
/// [`StreamTransport::new`](super::StreamTransport::new) as the writing half to model a slow
/// link; wrap each party's writer to limit both directions.
///
/// [`flush`](Write::flush) does not wait for delivery (the queued bytes are delivered in order,
/// also after the writer is dropped); an error of the inner writer is returned, with its kind,
/// by every later `write` and `flush`.
pub struct RateLimited {
    queue: SyncSender<Piece>,
    failure: Arc<Mutex<Option<(io::ErrorKind, String)>>>,
    piece_bytes: usize,
}

/// Bytes queued at one time.
struct Piece {
    bytes: Vec<u8>,
    queued: Instant,
}

impl RateLimited {
    /// A writer that delivers to `inner` at `bits_per_second`. Fails only if the delivery
    /// thread cannot be started.
    pub fn new<W: Write + Send + 'static>(
        inner: W,
        bits_per_second: NonZeroU64,
    ) -> io::Result<Self> {
        Self::with_latency(inner, bits_per_second, Duration::ZERO)
    }

    /// A writer that delivers to `inner` at `bits_per_second`, each byte `latency` after it
    /// has crossed the link. Fails only if the delivery thread cannot be started.
    pub fn with_latency<W: Write + Send + 'static>(
        inner: W,
        bits_per_second: NonZeroU64,
        latency: Duration,
    ) -> io::Result<Self> {
        let piece_bytes = usize::try_from(bits_per_second.get() / 8 / PIECES_PER_SECOND)
            .unwrap_or(MAX_PIECE_BYTES)
            .clamp(MIN_PIECE_BYTES, MAX_PIECE_BYTES);
        let (queue, pieces) = sync_channel(QUEUE_BYTES / piece_bytes);
        let failure = Arc::new(Mutex::new(None));
        let link = Delivery {
            inner,
            bits_per_second,
            latency,
            failure: failure.clone(),
        };
        std::thread::Builder::new()
            .name("rate-limited link".into())
            .spawn(move || link.run(pieces))?;
        Ok(Self {
            queue,
            failure,
            piece_bytes,
        })
    }

    /// The inner writer's error, if it failed.
    fn failure(&self) -> Option<io::Error> {
        let failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        failure
            .as_ref()
            .map(|(kind, message)| io::Error::new(*kind, message.clone()))
    }
}

impl Write for RateLimited {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(error) = self.failure() {
            return Err(error);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let len = buf.len().min(self.piece_bytes);
        let piece = Piece {
            bytes: buf[..len].to_vec(),
            queued: Instant::now(),
        };
        self.queue.send(piece).map_err(|_| {
            self.failure().unwrap_or_else(|| {
                io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the link's delivery thread stopped",
                )
            })
        })?;
        Ok(len)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.failure().map_or(Ok(()), Err)
    }
}

/// The delivery thread's side of the link.
struct Delivery<W> {
    inner: W,
    bits_per_second: NonZeroU64,
    latency: Duration,
    failure: Arc<Mutex<Option<(io::ErrorKind, String)>>>,
}

impl<W: Write> Delivery<W> {
    /// Delivers pieces on schedule until the writer is dropped and the queue drained, or the
    /// inner writer fails (the error is kept for the writer, and the queue closed).
    fn run(mut self, pieces: Receiver<Piece>) {
        let mut link_free = None::<Instant>;
        for piece in pieces {
            let start = link_free.map_or(piece.queued, |free| free.max(piece.queued));
            let end = start + self.transmission(piece.bytes.len());
            link_free = Some(end);
            let due = end + self.latency;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if let Err(error) = self
                .inner
                .write_all(&piece.bytes)
                .and_then(|()| self.inner.flush())
            {
                let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
                *failure = Some((error.kind(), error.to_string()));
                return;
            }
        }
    }

    /// The time `len` bytes take on the link.
    fn transmission(&self, len: usize) -> Duration {
        let nanos = len as u128 * 8 * 1_000_000_000 / u128::from(self.bits_per_second.get());
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::kinds;
    use crate::transport::{memory, StreamTransport, Transport, TransportError};

    const TIMEOUT: Duration = Duration::from_secs(10);

    fn rate(bits_per_second: u64) -> NonZeroU64 {
        NonZeroU64::new(bits_per_second).unwrap()
    }

    /// Writes `data` through a link of `bits_per_second` and `latency` into a pipe; returns
    /// what came out and the time until its last byte did.
    fn send_through(data: &[u8], bits_per_second: u64, latency: Duration) -> (Vec<u8>, f64) {
        let (writer, mut reader) = memory::pipe(TIMEOUT);
        let started = Instant::now();
        let mut link = RateLimited::with_latency(writer, rate(bits_per_second), latency).unwrap();
        link.write_all(data).unwrap();
        link.flush().unwrap();
        drop(link);
        let mut received = Vec::new();
        reader.read_to_end(&mut received).unwrap();
        (received, started.elapsed().as_secs_f64())
    }

    #[test]
    fn n_bytes_at_rate_r_take_8n_over_r_seconds_and_arrive_unchanged() {
        let data: Vec<u8> = (0..150_000u32).map(|i| (i * 31 % 251) as u8).collect();
        // 150 kB at 8 Mbit/s: 0.15 s.
        let (received, seconds) = send_through(&data, 8_000_000, Duration::ZERO);
        assert_eq!(received, data);
        assert!(
            (0.149..0.5).contains(&seconds),
            "150 kB at 8 Mbit/s took {seconds} s"
        );
        // The same bytes in many small writes take as long.
        let (writer, mut reader) = memory::pipe(TIMEOUT);
        let started = Instant::now();
        let mut link = RateLimited::new(writer, rate(8_000_000)).unwrap();
        for chunk in data.chunks(100) {
            link.write_all(chunk).unwrap();
        }
        drop(link);
        let mut received = Vec::new();
        reader.read_to_end(&mut received).unwrap();
        let seconds = started.elapsed().as_secs_f64();
        assert_eq!(received, data);
        assert!(
            (0.149..0.5).contains(&seconds),
            "small writes took {seconds} s"
        );
    }

    #[test]
    fn writes_return_before_delivery() {
        let (writer, _reader) = memory::pipe(TIMEOUT);
        let mut link = RateLimited::new(writer, rate(1_000_000)).unwrap();
        let started = Instant::now();
        // 100 kB at 1 Mbit/s is 0.8 s on the link, but fits in the queue.
        link.write_all(&[7; 100_000]).unwrap();
        link.flush().unwrap();
        assert!(started.elapsed() < Duration::from_millis(400));
    }

    #[test]
    fn latency_delays_every_byte() {
        let (received, seconds) = send_through(b"ping", 1_000_000_000, Duration::from_millis(60));
        assert_eq!(received, b"ping");
        assert!((0.06..0.5).contains(&seconds), "took {seconds} s");
    }

    #[test]
    fn frames_cross_a_limited_link_both_ways() {
        let (a_writer, b_reader) = memory::pipe(TIMEOUT);
        let (b_writer, a_reader) = memory::pipe(TIMEOUT);
        let link = |writer| RateLimited::new(writer, rate(80_000_000)).unwrap();
        let mut a = StreamTransport::new(a_reader, link(a_writer));
        let mut b = StreamTransport::new(b_reader, link(b_writer));
        let payload: Vec<u8> = (0..=255).cycle().take(200_000).collect();
        a.send(kinds::CLIENT_POINTS, &payload).unwrap();
        assert_eq!(b.recv(kinds::CLIENT_POINTS, 1 << 20).unwrap(), payload);
        b.send(kinds::CLIENT_TAGS, b"tags").unwrap();
        assert_eq!(a.recv(kinds::CLIENT_TAGS, 16).unwrap(), b"tags");
        assert_eq!(a.bytes_sent(), b.bytes_received());
    }

    /// A writer whose peer never reads: every write times out.
    struct Stalled;

    impl Write for Stalled {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::TimedOut.into())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_inner_error_reaches_the_sender_with_its_kind() {
        let (_writer, reader) = memory::pipe(TIMEOUT);
        let link = RateLimited::new(Stalled, rate(1_000_000_000)).unwrap();
        let mut transport = StreamTransport::new(reader, link);
        let deadline = Instant::now() + Duration::from_secs(2);
        let error = loop {
            match transport.send(kinds::HELLO, b"hello") {
                Err(error) => break error,
                Ok(()) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                Ok(()) => panic!("the failure never reached the sender"),
            }
        };
        assert!(
            matches!(error, TransportError::SendTimeout { kind: kinds::HELLO }),
            "{error}"
        );
    }
}
