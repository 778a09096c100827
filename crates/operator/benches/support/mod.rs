//! What the operator's benchmarks share: free loopback ports, the operator process they drive, and
//! polling with a deadline.

use std::{
    process::Child,
    time::{Duration, Instant},
};

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The operator process, killed when dropped.
pub struct Operator(pub Child);

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `done` every `every` until it holds; panics naming `what` once `limit` has passed.
// Not every bench that shares this module polls (the webhook bench does not).
#[allow(dead_code)]
pub async fn until_every(what: &str, limit: Duration, every: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done().await {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        tokio::time::sleep(every).await;
    }
}
