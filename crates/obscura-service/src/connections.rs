//! The open connections of a service, so that a full server can make room for a new client.
//!
//! Every connection is tracked with the time it last moved a byte and whether a request of it
//! is being answered. When the server holds its maximum of open connections and another client
//! connects, it closes the connection that has made the least recent progress among those not
//! being answered: a client that sends its headers and then a few body bytes, or that holds an
//! idle keep-alive connection, gives way to a new client, instead of new clients waiting in the
//! kernel's accept queue until the stalled ones time out.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// One open connection, as the table sees it.
pub struct Tracker {
    /// Milliseconds since the table started when the connection last read or wrote a byte.
    last_progress_ms: AtomicU64,
    /// Whether a request of this connection has been read in full and is being answered.
    answering: AtomicBool,
    /// Wakes the connection's task to close it.
    evict: Notify,
    table: Arc<Table>,
}

impl Tracker {
    /// Marks that the connection moved bytes now.
    fn progress(&self) {
        self.last_progress_ms
            .store(self.table.now_ms(), Ordering::Relaxed);
    }

    /// Marks whether a request of this connection is being answered (its body read in full):
    /// such a connection is never closed to make room.
    pub fn set_answering(&self, answering: bool) {
        self.answering.store(answering, Ordering::Relaxed);
        self.progress();
    }

    /// Completes when the table asks this connection to close.
    pub async fn evicted(&self) {
        self.evict.notified().await;
    }
}

/// The open connections.
pub struct Table {
    started: Instant,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Tracker>>>,
}

/// Removes a connection from its table when the connection ends.
pub struct Registration {
    id: u64,
    tracker: Arc<Tracker>,
}

impl Registration {
    /// The connection's tracker.
    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.tracker
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.tracker
            .table
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl Table {
    /// An empty table.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Tracks a new connection until the returned registration is dropped.
    pub fn register(self: &Arc<Self>) -> Registration {
        let tracker = Arc::new(Tracker {
            last_progress_ms: AtomicU64::new(self.now_ms()),
            answering: AtomicBool::new(false),
            evict: Notify::new(),
            table: self.clone(),
        });
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tracker.clone());
        Registration { id, tracker }
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Asks the connection with the least recent progress that is not being answered to close;
    /// `false` when every open connection is being answered.
    pub fn evict_stalest(&self) -> bool {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let stalest = open
            .values()
            .filter(|t| !t.answering.load(Ordering::Relaxed))
            .min_by_key(|t| t.last_progress_ms.load(Ordering::Relaxed));
        match stalest {
            Some(tracker) => {
                // Not a candidate again while it closes.
                tracker.answering.store(true, Ordering::Relaxed);
                tracker.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A byte stream that reports every byte it moves to its connection's tracker.
pub struct Tracked<S> {
    inner: S,
    tracker: Arc<Tracker>,
}

impl<S> Tracked<S> {
    /// Wraps `inner`, reporting to `tracker`.
    pub fn new(inner: S, tracker: Arc<Tracker>) -> Self {
        Self { inner, tracker }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.tracker.progress();
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.tracker.progress();
        }
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.tracker.progress();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_stalest_idle_connection_is_evicted_first() {
        let table = Table::new();
        let old = table.register();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let busy_old = table.register();
        busy_old.tracker().set_answering(true);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let fresh = table.register();
        assert_eq!(table.len(), 3);
        // The answering connection is older than `fresh` but never a candidate.
        assert!(table.evict_stalest());
        tokio::time::timeout(std::time::Duration::from_secs(1), old.tracker().evicted())
            .await
            .expect("the oldest idle connection is told to close");
        assert!(table.evict_stalest());
        tokio::time::timeout(std::time::Duration::from_secs(1), fresh.tracker().evicted())
            .await
            .expect("then the next idle one");
        // Only connections being answered (or already closing) are left.
        assert!(!table.evict_stalest());
        drop((old, fresh));
        assert_eq!(table.len(), 1);
        drop(busy_old);
        assert!(table.is_empty());
    }
}
