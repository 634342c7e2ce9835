//! Frames over the in-memory and TCP transports: sizes, counters, limits and timeouts.

use obscura_psi::kinds;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use obscura_psi::transport::{memory, tcp, Transport, TransportError, HEADER_BYTES};
use obscura_psi::{run, Options, Protocol, PsiError, Role};

#[test]
fn frames_arrive_whole_and_are_counted() {
    let (mut a, mut b) = memory::pair(Duration::from_secs(5));
    a.send(kinds::CLIENT_POINTS, &[1, 2, 3]).unwrap();
    a.send(kinds::CLIENT_TAGS, &[]).unwrap();
    assert_eq!(b.recv(kinds::CLIENT_POINTS, 3).unwrap(), [1, 2, 3]);
    assert_eq!(b.recv(kinds::CLIENT_TAGS, 0).unwrap(), [0u8; 0]);
    let expected = (2 * HEADER_BYTES + 3) as u64;
    assert_eq!((a.bytes_sent(), b.bytes_received()), (expected, expected));
    assert_eq!((a.bytes_received(), b.bytes_sent()), (0, 0));
}

#[test]
fn limits_are_checked_on_the_header() {
    let (mut a, mut b) = memory::pair(Duration::from_secs(5));
    a.send(kinds::CLIENT_POINTS, &[0; 33]).unwrap();
    assert!(matches!(
        b.recv(kinds::CLIENT_POINTS, 32),
        Err(TransportError::TooLong {
            len: 33,
            max: 32,
            ..
        })
    ));
    // After an error the stream is out of step (the payload was left unread): a new link.
    let (a, mut b) = memory::pair(Duration::from_secs(5));
    drop(a);
    assert!(matches!(
        b.recv(kinds::HELLO, 100),
        Err(TransportError::Closed {
            expected: kinds::HELLO
        })
    ));
}

#[test]
fn sending_to_a_closed_peer_fails() {
    let (mut a, b) = memory::pair(Duration::from_secs(5));
    drop(b);
    assert!(matches!(
        a.send(kinds::HELLO, &[0; 21]),
        Err(TransportError::Io(_))
    ));
}

/// A whole session over loopback TCP.
#[test]
fn tcp_session() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let timeout = Duration::from_secs(30);
    let server_items: Vec<String> = (0..3000).map(|i| format!("item {i}")).collect();
    let client_items: Vec<String> = (2000..2500).map(|i| format!("item {i}")).collect();
    let server = std::thread::spawn(move || {
        let (mut link, _) = tcp::accept(&listener, timeout).unwrap();
        let options = Options {
            protocol: Protocol::Ecdh,
            role: Role::Server,
            both_learn: true,
        };
        run(&mut link, &server_items, options, &|_, _, _| {}).unwrap()
    });
    let mut link = tcp::connect(addr, timeout).unwrap();
    let options = Options {
        protocol: Protocol::Ecdh,
        role: Role::Client,
        both_learn: true,
    };
    let client = run(&mut link, &client_items, options, &|_, _, _| {}).unwrap();
    let server = server.join().unwrap();
    assert_eq!(client.intersection.unwrap().size, 500);
    let server_rows = server.intersection.unwrap().rows;
    assert_eq!(server_rows, (2000..2500).collect::<Vec<_>>());
    assert_eq!(client.bytes_sent, server.bytes_received);
    assert_eq!(client.bytes_received, server.bytes_sent);
}

/// A peer that accepts the connection and then says nothing: the read times out.
#[test]
fn tcp_reads_time_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut link =
        tcp::connect(listener.local_addr().unwrap(), Duration::from_millis(300)).unwrap();
    let (_silent, _) = listener.accept().unwrap();
    let started = Instant::now();
    let options = Options {
        protocol: Protocol::Ecdh,
        role: Role::Client,
        both_learn: false,
    };
    let error = run(&mut link, &["a"], options, &|_, _, _| {}).unwrap_err();
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Timeout {
            expected: kinds::HELLO
        })
    ));
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Nobody listens: connecting retries until its time limit and then reports the refusal.
#[test]
fn tcp_connect_gives_up() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let started = Instant::now();
    let error = tcp::connect(addr, Duration::from_millis(500))
        .err()
        .unwrap();
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
}

/// The peer starts listening after the client started connecting.
#[test]
fn tcp_connect_waits_for_a_late_listener() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let listener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let listener = TcpListener::bind(addr).unwrap();
        listener.accept().unwrap()
    });
    let link = tcp::connect(addr, Duration::from_secs(5));
    assert!(link.is_ok());
    listener.join().unwrap();
}

/// A server whose client never comes stops waiting after the timeout, with a timed-out error,
/// and the listener can accept again afterwards.
#[test]
fn tcp_accept_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    let Err(error) = tcp::accept(&listener, Duration::from_millis(200)) else {
        panic!("nobody connected, yet accept succeeded");
    };
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    let address = listener.local_addr().unwrap();
    let client = std::thread::spawn(move || tcp::connect(address, Duration::from_secs(5)));
    assert!(tcp::accept(&listener, Duration::from_secs(5)).is_ok());
    assert!(client.join().unwrap().is_ok());
}
