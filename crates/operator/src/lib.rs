//! Kubernetes operators for three custom resources, and the manager that runs them. The map:
//! - [`api`]: the resource types (spec, status, CRD attributes), one file per kind.
//! - [`controllers`]: one file per controller, each reading observe, compare, act.
//! - [`db`]: the PostgreSQL pool and the row store PostgresWriter writes through.
//! - [`manager`]: process concerns: CLI, leader election, metrics, probes, back-off, shutdown, dev mode.

pub mod api;
pub mod controllers;
pub mod db;
pub mod error;
pub mod manager;

pub use error::{Error, Result};
