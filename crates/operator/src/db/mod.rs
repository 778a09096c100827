//! The PostgreSQL pool and the row store PostgresWriter writes through.

mod config;
mod rows;
pub mod throwaway;

pub use config::DatabaseConfig;
pub use rows::{Row, RowStore, TableName, TableState, UpsertOutcome};

pub type Pool = deadpool_postgres::Pool;
