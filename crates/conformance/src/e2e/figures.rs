//! The tier's figures as `docs/conformance.md` shows them, between two markers of their own, kept in
//! step by the e2e test as the corpus test keeps its own.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::e2e::baseline::Baseline;
use crate::e2e::skips::Skip;
use crate::report;

pub const DOCS_BEGIN: &str = "<!-- e2e figures: written by the e2e test, do not edit by hand -->";
pub const DOCS_END: &str = "<!-- end of e2e figures -->";

/// What a whole run counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figures {
    /// The specs of the focus (sig-api-machinery) in the suite.
    pub in_suite: usize,
    /// Of those, kept from running by the skips file.
    pub skipped: usize,
    /// Run on the real control plane: the rest.
    pub run_on_real: usize,
    pub passed_on_real: usize,
    /// Run on the embedded server: those that passed on the real one.
    pub run_on_embedded: usize,
    pub passed_on_embedded: usize,
    /// Failing on the embedded server, each listed in the baseline.
    pub baselined: usize,
}

/// The section: the counts, the skips with how many specs each keeps out, then the baseline.
pub fn docs_section(
    release: &str,
    figures: &Figures,
    skips: &[(&Skip, usize)],
    baseline: &Baseline,
) -> String {
    let mut out = String::new();
    let rows = [
        (
            format!("sig-api-machinery specs in the e2e suite of {release}"),
            figures.in_suite,
        ),
        ("skipped (`e2e/skips.yaml`)".to_owned(), figures.skipped),
        ("run on the real control plane".to_owned(), figures.run_on_real),
        ("passed there".to_owned(), figures.passed_on_real),
        (
            "run on the embedded server (those that passed on the real one)".to_owned(),
            figures.run_on_embedded,
        ),
        ("passed there".to_owned(), figures.passed_on_embedded),
        (
            "failed there, each listed in `e2e/baseline.yaml`".to_owned(),
            figures.baselined,
        ),
    ];
    let _ = writeln!(out, "| Specs | Count |\n|---|---:|");
    for (what, count) in rows {
        let _ = writeln!(out, "| {what} | {count} |");
    }
    let _ = writeln!(out, "\n### Skipped\n\n| Pattern | Specs | Why |\n|---|---:|---|");
    for (skip, count) in skips {
        let pattern = skip.pattern.replace('|', "\\|");
        let _ = writeln!(out, "| `{pattern}` | {count} | {} |", skip.reason.trim());
    }
    let _ = writeln!(out, "\n### Failing on the embedded server, by divergence\n");
    if baseline.is_empty() {
        let _ = writeln!(out, "None.");
    }
    // The specs that share a reason share a cause: listed under it, the larger causes first.
    let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (spec, reason) in baseline {
        by_reason.entry(reason.trim()).or_default().push(spec);
    }
    let mut causes: Vec<(&str, Vec<&str>)> = by_reason.into_iter().collect();
    causes.sort_by_key(|(_, specs)| std::cmp::Reverse(specs.len()));
    for (reason, specs) in causes {
        let _ = writeln!(out, "{reason}:\n");
        for spec in specs {
            let _ = writeln!(out, "- `{spec}`");
        }
        let _ = writeln!(out);
    }
    out
}

/// `doc` with the text between the markers replaced by `section`; `None` when the markers are missing.
pub fn with_section(doc: &str, section: &str) -> Option<String> {
    report::between_markers(doc, DOCS_BEGIN, DOCS_END, section)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_lists_counts_skips_and_the_baseline_between_the_markers() {
        let figures = Figures {
            in_suite: 10,
            skipped: 4,
            run_on_real: 6,
            passed_on_real: 6,
            run_on_embedded: 6,
            passed_on_embedded: 5,
            baselined: 1,
        };
        let skip = Skip {
            pattern: "Webhook|Aggregator".into(),
            reason: "needs a pod serving it".into(),
        };
        let baseline = Baseline::from([("[sig-api-machinery] W".to_owned(), "ends early".to_owned())]);
        let section = docs_section("v1.33.13", &figures, &[(&skip, 4)], &baseline);
        assert!(section.contains("| passed there | 5 |"), "{section}");
        assert!(section.contains("| `Webhook\\|Aggregator` | 4 | needs a pod serving it |"));
        assert!(
            section.contains("ends early:\n\n- `[sig-api-machinery] W`\n"),
            "{section}"
        );

        let doc = format!("# T\n{DOCS_BEGIN}\nold\n{DOCS_END}\nafter\n");
        let new = with_section(&doc, &section).unwrap();
        assert!(new.ends_with(&format!("{DOCS_END}\nafter\n")));
        assert_eq!(with_section(&new, &section).unwrap(), new);
        assert!(with_section("no markers", "x").is_none());
    }
}
