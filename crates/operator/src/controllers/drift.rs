//! What "the live child matches" means. Children are written with server-side apply, which can set
//! our fields but never remove a field another manager owns: a key someone added by hand stays however
//! often we apply. So a child matches when every field we set is present with our value; fields we
//! never set are not ours to judge. Comparing whole maps instead would find drift that applying cannot
//! repair, and every resync would apply again and report it again, forever.

use std::collections::BTreeMap;

/// Whether `live` holds each of `ours` with our value; entries others added do not matter.
pub fn holds_all(live: Option<&BTreeMap<String, String>>, ours: &BTreeMap<String, String>) -> bool {
    ours.iter()
        .all(|(key, value)| live.and_then(|live| live.get(key)) == Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn entries_others_add_do_not_matter_and_ours_must_be_there_with_our_value() {
        let ours = map(&[("options.txt", "a:Cats:#FF6B6B\n")]);
        assert!(holds_all(Some(&ours), &ours));
        assert!(
            holds_all(
                Some(&map(&[("options.txt", "a:Cats:#FF6B6B\n"), ("extra", "x")])),
                &ours
            ),
            "a key added by hand is someone else's"
        );
        assert!(
            !holds_all(Some(&map(&[("options.txt", "hacked")])), &ours),
            "our value changed"
        );
        assert!(
            !holds_all(Some(&map(&[("extra", "x")])), &ours),
            "our key removed"
        );
        assert!(!holds_all(None, &ours), "no map at all");
        assert!(holds_all(None, &BTreeMap::new()), "nothing of ours to look for");
    }
}
