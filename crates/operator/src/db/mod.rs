//! The PostgreSQL pool, the SQL PostgresWriter runs, and the batching row writer in front of it.

mod batch;
mod checked_tables;
mod config;
mod metrics;
mod rows;
pub mod throwaway;

pub use batch::RowWriter;
pub use config::DatabaseConfig;
pub use metrics::DatabaseMetrics;
pub use rows::{Row, RowStore, TableName, TableState, UpsertOutcome};

pub type Pool = deadpool_postgres::Pool;
