//! Figures of a process from its /proc status file, for the benches' memory figures.

/// `field` (`VmRSS`) of the /proc status file at `path`, in KiB.
pub fn status_kib(path: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| {
            rest.trim_start_matches(':')
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{field} in {path}"))
}
