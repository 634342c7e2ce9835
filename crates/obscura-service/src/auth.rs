//! Bearer tokens per database: who may fetch a setup and send queries.
//!
//! A tokens file has one grant per line, `DATABASE TOKEN` (or `* TOKEN` for every database);
//! blank lines and lines starting with `#` are skipped, and a database may have several tokens.
//! A database with a grant answers only requests that carry one of its tokens as
//! `Authorization: Bearer TOKEN` (401 otherwise), and is listed only to them; the others stay
//! open to all. Tokens are compared through their SHA-256 in constant time, so neither their
//! contents nor their lengths leak through timing.

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

/// Shortest token accepted: 16 characters (about 96 bits from a random base64 string).
pub const MIN_TOKEN_CHARS: usize = 16;

/// Why a tokens file was refused.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {reason}")]
pub struct TokensError {
    /// The file.
    pub path: String,
    /// The line, from 1 (0 when the file could not be read).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// The grants of a tokens file.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    by_database: HashMap<String, Vec<[u8; 32]>>,
    everywhere: Vec<[u8; 32]>,
}

impl Tokens {
    /// Reads the tokens file at `path`.
    pub fn read(path: &Path) -> Result<Self, TokensError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokensError {
            path: path.display().to_string(),
            line: 0,
            reason: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses the text of a tokens file (`source` names it in errors).
    pub fn parse(text: &str, source: &str) -> Result<Self, TokensError> {
        let mut tokens = Self::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let error = |reason: String| TokensError {
                path: source.into(),
                line: i + 1,
                reason,
            };
            let mut fields = line.split_whitespace();
            let (Some(database), Some(token), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(error(
                    "expected `DATABASE TOKEN` (or `* TOKEN`): two fields".into(),
                ));
            };
            if token.chars().count() < MIN_TOKEN_CHARS {
                return Err(error(format!(
                    "the token of {database:?} is shorter than {MIN_TOKEN_CHARS} characters: too easy to guess"
                )));
            }
            let hash = hash(token);
            match database {
                "*" => tokens.everywhere.push(hash),
                name => tokens
                    .by_database
                    .entry(name.into())
                    .or_default()
                    .push(hash),
            }
        }
        Ok(tokens)
    }

    /// The databases the grants name, other than `*`.
    pub fn databases(&self) -> impl Iterator<Item = &str> {
        self.by_database.keys().map(String::as_str)
    }

    /// Whether database `name` needs a token.
    pub fn protects(&self, name: &str) -> bool {
        !self.everywhere.is_empty() || self.by_database.contains_key(name)
    }

    /// Whether a request carrying `authorization` (the `Authorization` header's value) may use
    /// database `name`.
    pub fn allows(&self, name: &str, authorization: Option<&str>) -> bool {
        if !self.protects(name) {
            return true;
        }
        let Some(token) = authorization.and_then(bearer) else {
            return false;
        };
        let presented = hash(token);
        let granted = self
            .everywhere
            .iter()
            .chain(self.by_database.get(name).into_iter().flatten());
        // Every grant is compared, so the time does not depend on which one matched.
        granted.fold(0u8, |found, hash| found | presented.ct_eq(hash).unwrap_u8()) == 1
    }
}

/// The token of a `Bearer` authorization (the scheme is case-insensitive).
fn bearer(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str =
        "# grants\nphones  aaaaaaaaaaaaaaaa\nphones bbbbbbbbbbbbbbbbbbbb\n\n* cccccccccccccccc\n";

    #[test]
    fn grants_per_database_and_everywhere() {
        let tokens = Tokens::parse(FILE, "tokens").unwrap();
        assert!(tokens.allows("phones", Some("Bearer aaaaaaaaaaaaaaaa")));
        assert!(tokens.allows("phones", Some("bearer  bbbbbbbbbbbbbbbbbbbb ")));
        assert!(tokens.allows("phones", Some("Bearer cccccccccccccccc")));
        assert!(tokens.allows("other", Some("Bearer cccccccccccccccc")));
        assert!(!tokens.allows("other", Some("Bearer aaaaaaaaaaaaaaaa")));
        assert!(!tokens.allows("phones", Some("Bearer aaaaaaaaaaaaaaab")));
        assert!(!tokens.allows("phones", Some("Basic aaaaaaaaaaaaaaaa")));
        assert!(!tokens.allows("phones", Some("aaaaaaaaaaaaaaaa")));
        assert!(!tokens.allows("phones", None));

        let only_phones = Tokens::parse("phones aaaaaaaaaaaaaaaa", "tokens").unwrap();
        assert!(only_phones.allows("other", None));
        assert!(!only_phones.protects("other"));
        assert_eq!(only_phones.databases().collect::<Vec<_>>(), ["phones"]);
    }

    #[test]
    fn bad_lines_name_their_place() {
        for (text, line, reason) in [
            ("phones", 1, "two fields"),
            ("\n\nphones a b", 3, "two fields"),
            ("phones short", 1, "shorter than 16"),
        ] {
            let error = Tokens::parse(text, "t.txt").unwrap_err();
            assert_eq!(error.line, line, "{text:?}");
            assert!(error.to_string().contains(reason), "{error}");
            assert!(error.to_string().starts_with(&format!("t.txt:{line}:")));
        }
    }
}
