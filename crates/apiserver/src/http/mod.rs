//! Routing, content negotiation and Status errors.
