//! The PostgreSQL pool and the row store.
