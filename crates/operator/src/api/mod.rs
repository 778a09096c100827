//! The resource types, one file per kind.
