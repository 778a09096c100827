//! A webhook server for tests: HTTPS on a free loopback port, its certificate signed by a throwaway
//! CA whose bundle the test puts in a configuration's `caBundle`, serving whatever routes the test
//! gives it (conversion or admission handlers).

use apiserver::http::tls::Identity;
use base64::Engine;
use tokio::task::JoinHandle;

/// A running webhook server; dropping it (or [`WebhookServer::stop`]) closes the listener.
pub struct WebhookServer {
    /// `https://127.0.0.1:PORT`.
    pub base_url: String,
    /// Base64 of the CA's PEM certificate, as a `caBundle`.
    pub ca_bundle: String,
    task: JoinHandle<()>,
}

impl WebhookServer {
    pub async fn start(routes: axum::Router) -> WebhookServer {
        let identity = Identity::generate().expect("a throwaway CA and serving certificate");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let port = listener.local_addr().expect("bound").port();
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(identity.ca_pem());
        let task = tokio::spawn(async move {
            let _ = axum::serve(identity.listener(listener), routes).await;
        });
        WebhookServer {
            base_url: format!("https://127.0.0.1:{port}"),
            ca_bundle,
            task,
        }
    }

    /// A `clientConfig` calling `path` on this server.
    pub fn client_config(&self, path: &str) -> serde_json::Value {
        serde_json::json!({"url": format!("{}{path}", self.base_url), "caBundle": self.ca_bundle})
    }

    /// Stops serving: calls from then on are refused at connect.
    pub async fn stop(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Admission reviews as a webhook received them, kept for the test to read back.
#[derive(Clone, Default)]
pub struct Recorder {
    reviews: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl Recorder {
    /// A route that records each review and answers with `respond(review)` (the response's `uid` is
    /// filled in).
    pub fn route(&self, respond: fn(&serde_json::Value) -> serde_json::Value) -> axum::routing::MethodRouter {
        let reviews = self.reviews.clone();
        axum::routing::post(
            move |axum::Json(review): axum::Json<serde_json::Value>| async move {
                let mut response = respond(&review);
                response["uid"] = review["request"]["uid"].clone();
                if let Ok(mut reviews) = reviews.lock() {
                    reviews.push(review);
                }
                axum::Json(serde_json::json!({"apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview", "response": response}))
            },
        )
    }

    /// The requests (`review.request`) received so far.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.reviews
            .lock()
            .map(|reviews| reviews.iter().map(|r| r["request"].clone()).collect())
            .unwrap_or_default()
    }

    pub fn clear(&self) {
        if let Ok(mut reviews) = self.reviews.lock() {
            reviews.clear();
        }
    }
}
