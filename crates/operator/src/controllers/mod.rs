//! One file per controller. Each reads top-down as observe, compare, act; pure functions compute the
//! desired state and are unit-tested without a server. The loop around them is [`crate::runtime`]'s;
//! what only controllers share (status conditions, what "matches" means, which children are ours) is
//! here.

mod conditions;
mod drift;
mod ownership;
pub mod postgres_writer;
pub mod vote_config;
pub mod web_app;
