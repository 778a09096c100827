//! Prometheus metrics under the names controller-runtime uses, so existing dashboards work. No label
//! carries an object's name: cardinality is bounded by the number of controllers.

use std::time::Duration;

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use crate::db::DatabaseMetrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: String,
}

/// controller-runtime labels its work queues by controller name under `name`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub controller: String,
    /// `success`, `error`, `requeue` or `requeue_after`, as controller-runtime labels them.
    pub result: String,
}

/// controller-runtime labels webhook requests by the webhook's path and the HTTP status code answered.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookCodeLabels {
    pub webhook: String,
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabels {
    pub webhook: String,
}

pub struct Metrics {
    registry: Registry,
    pub reconcile_total: Family<ResultLabels, Counter>,
    pub reconcile_errors_total: Family<ControllerLabels, Counter>,
    pub terminal_reconcile_errors_total: Family<ControllerLabels, Counter>,
    pub reconcile_time_seconds: Family<ControllerLabels, Histogram>,
    pub active_workers: Family<ControllerLabels, Gauge>,
    pub max_concurrent_reconciles: Family<ControllerLabels, Gauge>,
    /// Objects changed and waiting for a reconcile to start.
    pub workqueue_depth: Family<QueueLabels, Gauge>,
    /// Objects whose last reconcile failed and that wait to retry after their back-off.
    pub backoff_objects: Family<ControllerLabels, Gauge>,
    pub database: DatabaseMetrics,
    /// Admission and conversion requests answered, by webhook path and HTTP status.
    pub webhook_requests_total: Family<WebhookCodeLabels, Counter>,
    pub webhook_latency_seconds: Family<WebhookLabels, Histogram>,
    /// Events not recorded: the backlog was full, or the API server refused them.
    pub events_dropped_total: Family<ControllerLabels, Counter>,
    /// Memory held by Events waiting to be written.
    pub event_backlog_bytes: Gauge,
    /// Refresh gauges that mirror someone else's state (the pool) right before a scrape.
    scrape_hooks: std::sync::Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// The `result` label's values, as controller-runtime names them (it also has `requeue`, which a
/// reconcile here never returns).
const RESULTS: &[&str] = &["success", "requeue_after", "error"];

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let reconcile_total = Family::<ResultLabels, Counter>::default();
        let reconcile_errors_total = Family::<ControllerLabels, Counter>::default();
        let terminal_reconcile_errors_total = Family::<ControllerLabels, Counter>::default();
        let reconcile_time_seconds = Family::<ControllerLabels, Histogram>::new_with_constructor(|| {
            // controller-runtime's buckets.
            Histogram::new([
                0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0,
                20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
            ])
        });
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            reconcile_errors_total.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            terminal_reconcile_errors_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_time_seconds.clone(),
        );
        let active_workers = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active_workers.clone(),
        );
        let max_concurrent_reconciles = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent_reconciles.clone(),
        );
        let workqueue_depth = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            workqueue_depth.clone(),
        );
        let backoff_objects = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "controller_backoff_objects",
            "Objects whose last reconcile failed and that wait to retry after their back-off",
            backoff_objects.clone(),
        );
        let database = DatabaseMetrics::register(&mut registry);
        let webhook_requests_total = Family::<WebhookCodeLabels, Counter>::default();
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code",
            webhook_requests_total.clone(),
        );
        let webhook_latency_seconds = Family::<WebhookLabels, Histogram>::new_with_constructor(|| {
            // Prometheus' default buckets, as controller-runtime uses for this histogram.
            Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
        });
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            webhook_latency_seconds.clone(),
        );
        let events_dropped_total = Family::<ControllerLabels, Counter>::default();
        registry.register(
            "controller_events_dropped",
            "Events not recorded: the backlog was full (--event-backlog-mib) or the API server refused them after retries",
            events_dropped_total.clone(),
        );
        let event_backlog_bytes = Gauge::default();
        registry.register(
            "controller_event_backlog_bytes",
            "Memory held by Events waiting to be written to the API server",
            event_backlog_bytes.clone(),
        );
        Self {
            registry,
            reconcile_total,
            reconcile_errors_total,
            terminal_reconcile_errors_total,
            reconcile_time_seconds,
            active_workers,
            max_concurrent_reconciles,
            workqueue_depth,
            backoff_objects,
            database,
            webhook_requests_total,
            webhook_latency_seconds,
            events_dropped_total,
            event_backlog_bytes,
            scrape_hooks: Default::default(),
        }
    }

    /// Runs `hook` before every scrape, to copy state kept elsewhere into gauges.
    pub fn on_scrape(&self, hook: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut hooks) = self.scrape_hooks.lock() {
            hooks.push(Box::new(hook));
        }
    }

    pub fn active_workers(&self, controller: &str) -> Gauge {
        self.active_workers
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .clone()
    }

    pub fn workqueue_depth(&self, controller: &str) -> Gauge {
        self.workqueue_depth
            .get_or_create(&QueueLabels {
                name: controller.to_owned(),
            })
            .clone()
    }

    pub fn backoff_objects(&self, controller: &str) -> Gauge {
        self.backoff_objects
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .clone()
    }

    /// A controller started: its limit set, and its counters shown at zero (as controller-runtime
    /// does), so that a dashboard or an alert on errors sees the series before the first one.
    pub fn started_controller(&self, controller: &str, concurrency: u16) {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.max_concurrent_reconciles
            .get_or_create(&labels)
            .set(i64::from(concurrency));
        for result in RESULTS {
            let _ = self.reconcile_total.get_or_create(&ResultLabels {
                controller: controller.to_owned(),
                result: (*result).to_owned(),
            });
        }
        let _ = self.reconcile_errors_total.get_or_create(&labels);
        let _ = self.terminal_reconcile_errors_total.get_or_create(&labels);
        let _ = self.events_dropped_total.get_or_create(&labels);
    }

    pub fn observe_reconcile(&self, controller: &str, result: &str, elapsed: Duration) {
        let controller = controller.to_owned();
        self.reconcile_total
            .get_or_create(&ResultLabels {
                controller: controller.clone(),
                result: result.to_owned(),
            })
            .inc();
        self.reconcile_time_seconds
            .get_or_create(&ControllerLabels { controller })
            .observe(elapsed.as_secs_f64());
    }

    pub fn observe_error(&self, controller: &str, terminal: bool) {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.reconcile_errors_total.get_or_create(&labels).inc();
        if terminal {
            self.terminal_reconcile_errors_total.get_or_create(&labels).inc();
        }
    }

    /// One webhook request answered with HTTP `code` after `elapsed`.
    pub fn observe_webhook(&self, webhook: &str, code: u16, elapsed: Duration) {
        self.webhook_requests_total
            .get_or_create(&WebhookCodeLabels {
                webhook: webhook.to_owned(),
                code: code.to_string(),
            })
            .inc();
        self.webhook_latency_seconds
            .get_or_create(&WebhookLabels {
                webhook: webhook.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// The Prometheus text exposition of every registered family.
    pub fn encode(&self) -> String {
        if let Ok(hooks) = self.scrape_hooks.lock() {
            hooks.iter().for_each(|hook| hook());
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
