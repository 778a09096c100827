//! The suffix kube-apiserver appends to a `generateName` to make an object's name.

/// How many characters generateName's suffix has.
pub(crate) const SUFFIX_LEN: usize = 5;

/// [`SUFFIX_LEN`] characters from the alphabet kube-apiserver uses for generateName (no
/// vowels, no lookalikes).
pub(crate) fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..SUFFIX_LEN)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}
