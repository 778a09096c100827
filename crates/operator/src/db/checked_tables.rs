//! Tables found compatible recently, so that writing a row does not read the catalog each time. An
//! entry is worth something for [`TTL`] only, so expired entries are dropped (at most once per TTL, to
//! keep recording cheap): the set holds the tables checked in the last two TTLs, however many tables
//! resources have named over the process's life.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use super::TableName;

/// How long a table found compatible is trusted before its columns are read again. A table dropped or
/// altered by hand in between makes a statement fail, which forgets it at once.
pub const TTL: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct CheckedTables {
    checked: HashMap<TableName, Instant>,
    pruned: Instant,
}

impl CheckedTables {
    pub fn new(now: Instant) -> Self {
        Self {
            checked: HashMap::new(),
            pruned: now,
        }
    }

    /// Whether `table` was found compatible less than [`TTL`] before `now`.
    pub fn is_fresh(&self, table: &TableName, now: Instant) -> bool {
        self.checked
            .get(table)
            .is_some_and(|at| now.saturating_duration_since(*at) < TTL)
    }

    /// `table` was found compatible at `now`.
    pub fn record(&mut self, table: TableName, now: Instant) {
        if now.saturating_duration_since(self.pruned) >= TTL {
            self.checked
                .retain(|_, at| now.saturating_duration_since(*at) < TTL);
            self.pruned = now;
        }
        self.checked.insert(table, now);
    }

    pub fn forget(&mut self, table: &TableName) {
        self.checked.remove(table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(i: usize) -> TableName {
        TableName::parse(&format!("t{i}")).unwrap()
    }

    #[test]
    fn a_check_is_trusted_for_the_ttl_and_forgotten_on_demand() {
        let start = Instant::now();
        let mut checked = CheckedTables::new(start);
        checked.record(table(1), start);
        assert!(checked.is_fresh(&table(1), start + TTL / 2));
        assert!(!checked.is_fresh(&table(1), start + TTL));
        assert!(!checked.is_fresh(&table(2), start));
        checked.forget(&table(1));
        assert!(!checked.is_fresh(&table(1), start));
    }

    #[test]
    fn tables_no_longer_written_are_dropped_so_the_set_stays_bounded() {
        let start = Instant::now();
        let mut checked = CheckedTables::new(start);
        // A table per second for ten minutes, as resources naming ever new tables come and go.
        for second in 0..600 {
            checked.record(table(second), start + Duration::from_secs(second as u64));
            assert!(
                checked.checked.len() <= 2 * TTL.as_secs() as usize + 1,
                "{} entries after {second} s",
                checked.checked.len()
            );
        }
        let later = start + Duration::from_secs(600) + TTL;
        checked.record(table(0), later);
        assert_eq!(checked.checked.len(), 1, "only the table checked last is left");
    }
}
