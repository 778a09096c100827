//! The PostgreSQL pool, the SQL PostgresWriter runs, the ledger of the rows it wrote, and the batching
//! row writer in front of them.

mod batch;
mod checked_tables;
mod config;
mod ledger;
mod metrics;
mod pool;
mod rows;
mod table_creation;
#[cfg(feature = "dev")]
pub mod throwaway;

pub use batch::RowWriter;
pub use config::DatabaseConfig;
pub use ledger::{LEDGER_TABLE, OwnedRow, Released};
pub use metrics::DatabaseMetrics;
pub use pool::Pool;
pub use rows::{Row, RowStore, TableName, TableState, UpsertOutcome};
