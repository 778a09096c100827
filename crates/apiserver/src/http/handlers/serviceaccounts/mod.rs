//! A service account's subresources: [`token`], which issues it a token (TokenRequest).

pub(super) mod token;
