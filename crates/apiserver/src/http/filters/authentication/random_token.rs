//! Bearer tokens the server makes: its own, and those it issues to service accounts.

/// Random bytes in a generated token: 256 bits, the strength of a kube-apiserver service-account key.
const GENERATED_TOKEN_BYTES: usize = 32;

/// 64 lowercase hex digits from `rand`'s thread-local generator, a CSPRNG (ChaCha) seeded from the OS.
pub fn generate_token() -> String {
    let bytes: [u8; GENERATED_TOKEN_BYTES] = rand::random();
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_64_hex_digits_and_differ() {
        let (a, b) = (generate_token(), generate_token());
        assert_eq!(a.len(), 2 * GENERATED_TOKEN_BYTES);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }
}
