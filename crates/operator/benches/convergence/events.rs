//! The Events an operator recorded, counted by reason: at convergence, and once settled.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use k8s_openapi::api::events::v1::Event;
use kube::{Api, api::ListParams};

/// A count that has not moved for this long is settled: longer than client-go's pause between two
/// tries of an Event (10 s, +-25%), so a retry still pending is waited for.
const QUIET: Duration = Duration::from_secs(15);
/// The longest the bench waits for Events to settle.
const SETTLE_LIMIT: Duration = Duration::from_secs(120);

/// The Events of namespace `ns` by reason, as one (paged) list sees them. Both operators count a
/// repeat of an Event in its series rather than as another Event, so this counts Events as a user
/// sees them listed.
pub async fn by_reason(client: &kube::Client, ns: &str) -> HashMap<String, usize> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let mut counts = HashMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await.expect("events listed");
        for event in page.items {
            *counts.entry(event.reason.unwrap_or_default()).or_default() += 1;
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return counts,
        }
    }
}

/// How many `reason` Events namespace `ns` holds now.
pub async fn count(client: &kube::Client, ns: &str, reason: &str) -> usize {
    by_reason(client, ns).await.get(reason).copied().unwrap_or(0)
}

/// How many `reason` Events namespace `ns` holds once they stop coming: as soon as `expected` are
/// there, or when the count has not moved for [`QUIET`], or after [`SETTLE_LIMIT`].
pub async fn settled(client: &kube::Client, ns: &str, reason: &str, expected: usize) -> usize {
    let deadline = Instant::now() + SETTLE_LIMIT;
    let mut last = count(client, ns, reason).await;
    let mut moved = Instant::now();
    while last < expected && moved.elapsed() < QUIET && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = count(client, ns, reason).await;
        if now != last {
            last = now;
            moved = Instant::now();
        }
    }
    last
}
