//! The PostgreSQL pool, the SQL PostgresWriter runs, the ledger of the rows it wrote, and the batching
//! row writer in front of them.

mod batch;
mod checked_tables;
mod config;
mod connector;
mod ledger;
mod metrics;
mod password;
mod pool;
mod root_certificates;
mod rows;
mod server_verifiers;
mod statement;
mod table_creation;
mod table_name;
#[cfg(feature = "dev")]
pub mod throwaway;
mod tls;
mod url_tls;

pub use batch::RowWriter;
pub use config::{DatabaseConfig, parse_connection_string};
pub use ledger::{LEDGER_TABLE, OwnedRow, Released};
pub use metrics::DatabaseMetrics;
pub use pool::Pool;
pub use rows::{Row, RowStore, TableState, UpsertOutcome};
pub use server_verifiers::AnyServerCertificate;
pub use table_name::TableName;
pub use tls::SslMode;
