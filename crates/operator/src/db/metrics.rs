//! The database's metrics: rows written and deleted, statement latency, rows per batched statement,
//! the pool's connections and orphan sweeps. Labels name operations, never rows, so cardinality stays
//! fixed.

use std::time::Duration;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabels {
    /// `upsert`, `delete`, `schema`, `list` or `sweep`.
    pub operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabels {
    /// `in_use` or `idle`.
    pub state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SweepLabels {
    /// `success` or `error`.
    pub result: &'static str,
}

#[derive(Clone, Debug)]
pub struct DatabaseMetrics {
    pub rows_written: Counter,
    pub rows_deleted: Counter,
    pub query_seconds: Family<OperationLabels, Histogram>,
    pub batch_rows: Family<OperationLabels, Histogram>,
    pub pool_connections: Family<PoolLabels, Gauge>,
    pub pool_max: Gauge,
    /// Orphan sweeps finished, by result.
    pub orphan_sweeps: Family<SweepLabels, Counter>,
}

impl DatabaseMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = DatabaseMetrics {
            query_seconds: Family::new_with_constructor(|| {
                Histogram::new([
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                ])
            }),
            batch_rows: Family::new_with_constructor(|| {
                Histogram::new([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0])
            }),
            rows_written: Counter::default(),
            rows_deleted: Counter::default(),
            pool_connections: Family::default(),
            pool_max: Gauge::default(),
            orphan_sweeps: Family::default(),
        };
        let db = registry.sub_registry_with_prefix("postgres_writer");
        db.register(
            "rows_written",
            "Rows inserted or updated in PostgreSQL",
            metrics.rows_written.clone(),
        );
        db.register(
            "rows_deleted",
            "Rows deleted from PostgreSQL",
            metrics.rows_deleted.clone(),
        );
        db.register(
            "query_duration_seconds",
            "Time per SQL statement, by operation",
            metrics.query_seconds.clone(),
        );
        db.register(
            "batch_rows",
            "Rows per batched statement, by operation",
            metrics.batch_rows.clone(),
        );
        db.register(
            "pool_connections",
            "Connections of the pool, in use or idle",
            metrics.pool_connections.clone(),
        );
        db.register(
            "pool_max_connections",
            "The pool's connection limit",
            metrics.pool_max.clone(),
        );
        db.register(
            "orphan_sweeps",
            "Orphan sweeps finished, by result",
            metrics.orphan_sweeps.clone(),
        );
        // Shown at zero from the start, as controller-runtime shows its counters: with the sweep off
        // they stay there, which is what happened.
        for result in ["success", "error"] {
            let _ = metrics.orphan_sweeps.get_or_create(&SweepLabels { result });
        }
        metrics
    }

    /// Counts a finished orphan sweep.
    pub fn count_sweep(&self, succeeded: bool) {
        let result = if succeeded { "success" } else { "error" };
        self.orphan_sweeps.get_or_create(&SweepLabels { result }).inc();
    }

    pub fn observe(&self, operation: &'static str, rows: usize, elapsed: Duration) {
        let labels = OperationLabels { operation };
        self.query_seconds
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.batch_rows.get_or_create(&labels).observe(rows as f64);
    }

    /// Copies the pool's current state into the gauges (called before each scrape).
    pub fn record_pool(&self, status: deadpool_postgres::Status) {
        let idle = status.available.min(status.size);
        self.pool_connections
            .get_or_create(&PoolLabels { state: "in_use" })
            .set((status.size - idle) as i64);
        self.pool_connections
            .get_or_create(&PoolLabels { state: "idle" })
            .set(idle as i64);
        self.pool_max.set(status.max_size as i64);
    }
}
