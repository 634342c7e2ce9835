//! [`TcpTransport`]: frames over a TCP connection with read and write timeouts.

use std::io::{self, BufReader, BufWriter};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::StreamTransport;

/// A [`StreamTransport`] over a TCP connection (buffered both ways).
pub type TcpTransport = StreamTransport<BufReader<TcpStream>, BufWriter<TcpStream>>;

/// Socket buffer size of each direction: a few frames' headers and small frames per system call.
const BUFFER_BYTES: usize = 1 << 16;

/// Pause between two connection attempts while the peer is not listening yet.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Pause between two looks for a connecting peer while accepting.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// Sets the socket options every PSI connection uses: every read and every write fails after
/// `timeout` (which must not be zero) without progress, and small frames are not delayed
/// (`TCP_NODELAY`). For transports built by hand around a socket (a paced link, say).
pub fn configure(stream: &TcpStream, timeout: Duration) -> io::Result<()> {
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)
}

/// Wraps a connected socket, [`configure`]d with `timeout`, buffered both ways.
pub fn from_stream(stream: TcpStream, timeout: Duration) -> io::Result<TcpTransport> {
    configure(&stream, timeout)?;
    let reader = BufReader::with_capacity(BUFFER_BYTES, stream.try_clone()?);
    Ok(StreamTransport::new(
        reader,
        BufWriter::with_capacity(BUFFER_BYTES, stream),
    ))
}

/// Waits at most `timeout` for one connection on `listener` and wraps it with `timeout`;
/// returns the transport and the peer's address. When no peer connects in time the error is of
/// kind [`io::ErrorKind::TimedOut`]. The listener is left blocking, as it was made.
pub fn accept(listener: &TcpListener, timeout: Duration) -> io::Result<(TcpTransport, SocketAddr)> {
    listener.set_nonblocking(true)?;
    let accepted = accept_until(listener, Instant::now() + timeout);
    listener.set_nonblocking(false)?;
    let (stream, peer) = accepted?;
    // On some systems an accepted socket inherits the listener's non-blocking mode.
    stream.set_nonblocking(false)?;
    Ok((from_stream(stream, timeout)?, peer))
}

/// Polls the non-blocking `listener` until a peer connects or `deadline` passes.
fn accept_until(listener: &TcpListener, deadline: Instant) -> io::Result<(TcpStream, SocketAddr)> {
    loop {
        match listener.accept() {
            Ok(accepted) => return Ok(accepted),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no peer connected within the time limit",
                    ));
                }
                std::thread::sleep(ACCEPT_POLL.min(left));
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// Connects to `addr`, trying again until `timeout` has passed (so the peer may start listening
/// after we start), and wraps the connection with `timeout`. The error is the last attempt's.
pub fn connect(addr: impl ToSocketAddrs, timeout: Duration) -> io::Result<TcpTransport> {
    let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
    let deadline = Instant::now() + timeout;
    let mut last_error = io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to");
    loop {
        for addr in &addrs {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(last_error);
            }
            match TcpStream::connect_timeout(addr, left) {
                Ok(stream) => return from_stream(stream, timeout),
                Err(error) => last_error = error,
            }
        }
        if addrs.is_empty() || Instant::now() + RETRY_PAUSE >= deadline {
            return Err(last_error);
        }
        std::thread::sleep(RETRY_PAUSE);
    }
}
