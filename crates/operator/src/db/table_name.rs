//! The name of a table PostgresWriter writes rows into.

use crate::{Error, Result};

/// A table name that is a valid lower-case PostgreSQL identifier (the CRD schema enforces the same).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName(String);

impl TableName {
    pub fn parse(name: &str) -> Result<Self> {
        let valid = !name.is_empty()
            && name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            Ok(TableName(name.to_owned()))
        } else {
            Err(Error::InvalidSpec(format!(
                "table {name:?} is not a valid identifier: use 1-63 lower-case letters, digits and underscores, not starting with a digit"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The identifier quoted for SQL. Parsing admits no `"`, so no escaping is needed.
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.0)
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_identifiers_and_render_quoted() {
        assert_eq!(TableName::parse("students").unwrap().quoted(), "\"students\"");
        assert!(TableName::parse("_t1").is_ok());
        for bad in [
            "",
            "1abc",
            "Students",
            "a-b",
            "x\"; DROP TABLE y; --",
            &"a".repeat(64),
        ] {
            assert!(TableName::parse(bad).is_err(), "{bad}");
        }
    }
}
