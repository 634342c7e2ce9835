//! Accepting connections: the connection limit and the room made for new clients, graceful
//! shutdown, and a service on a background thread.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{oneshot, Semaphore};
use tower::ServiceExt;

use super::{router_with_databases, ConnectionLimits, Databases, ServiceConfig};
use crate::catalog::Catalog;
use crate::connections::{Table, Tracked};

/// Serves `router` (HTTP/1.1, over TLS when `tls` is given) on `listener` until `shutdown`
/// completes, then finishes the requests in flight within [`ConnectionLimits::shutdown_grace`].
///
/// At most [`ConnectionLimits::max_open`] connections are open at once; when they are and
/// another client connects, the connection that has moved no byte for the longest time, among
/// those whose requests are not being answered, is closed to make room for it.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnectionLimits,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = GracefulShutdown::new();
    let open = Arc::new(Semaphore::new(limits.max_open.max(1)));
    let table = Table::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let permit = match open.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // Full: close the stalest idle connection (if every one is being answered, wait
                // for one to finish).
                table.evict_stalest();
                tokio::select! {
                    permit = open.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break, // the semaphore is never closed
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        // Answers are small and latency matters: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let registration = table.register();
        let tracker = registration.tracker().clone();
        let service = {
            let tracker = tracker.clone();
            let router = router.clone();
            hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(tracker.clone());
                let (router, tracker) = (router.clone(), tracker.clone());
                async move {
                    let response = router.oneshot(request).await;
                    tracker.set_answering(false);
                    response
                }
            })
        };
        let tls = tls.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let stream = Tracked::new(stream, tracker.clone());
            let run = async {
                match tls {
                    None => drive(stream, service, &limits, watcher).await,
                    // The handshake counts against the header time.
                    Some(acceptor) => {
                        let accepted =
                            tokio::time::timeout(limits.header_timeout, acceptor.accept(stream));
                        if let Ok(Ok(stream)) = accepted.await {
                            drive(stream, service, &limits, watcher).await;
                        }
                    }
                }
            };
            tokio::select! {
                () = run => {}
                () = tracker.evicted() => {}
            }
            drop((registration, permit));
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await;
    Ok(())
}

/// Serves HTTP/1.1 requests on one connection until it closes or the server shuts down.
async fn drive<I, S>(io: I, service: S, limits: &ConnectionLimits, watcher: Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming> + Send + 'static,
    S::Future: Send + 'static,
    S::ResBody: Send + 'static,
    <S::ResBody as hyper::body::Body>::Data: Send,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let _ = watcher
        .watch(builder.serve_connection(TokioIo::new(io), service))
        .await;
}

/// Completes on ctrl-c or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

/// A service running on its own thread and runtime (for demos, tests and embedding); stopped
/// gracefully when dropped.
pub struct BackgroundService {
    address: std::net::SocketAddr,
    scheme: &'static str,
    databases: Databases,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl BackgroundService {
    /// Binds `address` (port 0 picks a free one) and serves `catalog` over plain HTTP until
    /// dropped.
    pub fn start(
        catalog: Catalog,
        config: ServiceConfig,
        address: std::net::SocketAddr,
    ) -> std::io::Result<Self> {
        Self::start_with_tls(catalog, config, address, None)
    }

    /// As [`start`](Self::start), over TLS when `tls` is given.
    pub fn start_with_tls(
        catalog: Catalog,
        config: ServiceConfig,
        address: std::net::SocketAddr,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> std::io::Result<Self> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::bind(address).await {
                    Ok(listener) => listener,
                    Err(error) => {
                        let _ = bound_tx
                            .send(Err(std::io::Error::new(error.kind(), error.to_string())));
                        return Err(error);
                    }
                };
                let limits = config.connections;
                let (router, databases) = router_with_databases(catalog, config);
                let _ = bound_tx.send(listener.local_addr().map(|a| (a, databases)));
                serve(listener, router, limits, tls, async {
                    let _ = stopped.await;
                })
                .await
            })
        });
        let (address, databases) = bound_rx
            .recv()
            .map_err(|_| std::io::Error::other("the service thread stopped"))??;
        Ok(Self {
            address,
            scheme,
            databases,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The base URL of the service, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.address)
    }

    /// The databases it serves, which can be replaced while it runs.
    pub fn databases(&self) -> &Databases {
        &self.databases
    }
}

impl Drop for BackgroundService {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
