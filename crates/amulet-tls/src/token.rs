//! Bearer tokens (docs/security.md): for clients where certificates are
//! awkward. A token is `amt1.ID.SECRET`: a public id naming it in the
//! cluster's access configuration and a 256-bit random secret of which the
//! cluster keeps only the SHA-256 digest. Clients send it as
//! `authorization: Bearer amt1.ID.SECRET` gRPC metadata.

use ring::rand::SecureRandom;
use std::fmt;

/// The prefix naming the token format.
pub const TOKEN_PREFIX: &str = "amt1";
const ID_BYTES: usize = 8;
const SECRET_BYTES: usize = 32;

/// A token: its id and its secret. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    /// The public id (16 hex digits).
    pub id: String,
    secret: Vec<u8>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({}.<secret>)", self.id)
    }
}

/// Why a presented token string is not a token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenFormatError {
    /// Not `amt1.ID.SECRET` with hex parts of the right lengths.
    #[error("not an Amulet token (amt1.ID.SECRET)")]
    Malformed,
}

impl Token {
    /// A new token from the system's secure random source.
    pub fn generate() -> Token {
        let rng = ring::rand::SystemRandom::new();
        let mut id = [0u8; ID_BYTES];
        let mut secret = vec![0u8; SECRET_BYTES];
        rng.fill(&mut id).expect("the system random source works");
        rng.fill(&mut secret)
            .expect("the system random source works");
        Token {
            id: hex(&id),
            secret,
        }
    }

    /// Parses a presented token (total: any string is a token or an error).
    pub fn parse(text: &str) -> Result<Token, TokenFormatError> {
        let mut parts = text.trim().split('.');
        let (Some(TOKEN_PREFIX), Some(id), Some(secret), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenFormatError::Malformed);
        };
        let id_bytes = unhex(id).ok_or(TokenFormatError::Malformed)?;
        let secret = unhex(secret).ok_or(TokenFormatError::Malformed)?;
        if id_bytes.len() != ID_BYTES || secret.len() != SECRET_BYTES {
            return Err(TokenFormatError::Malformed);
        }
        Ok(Token {
            id: id.to_ascii_lowercase(),
            secret,
        })
    }

    /// The token as clients present it. Secret: never log it.
    pub fn expose(&self) -> String {
        format!("{TOKEN_PREFIX}.{}.{}", self.id, hex(&self.secret))
    }

    /// SHA-256 of the secret: what the cluster keeps.
    pub fn digest(&self) -> [u8; 32] {
        let d = ring::digest::digest(&ring::digest::SHA256, &self.secret);
        d.as_ref().try_into().expect("SHA-256 is 32 bytes")
    }
}

/// The token in `authorization` metadata (`Bearer TOKEN`), if any:
/// `Some(Err)` for one that is there and malformed.
pub fn bearer(header: &str) -> Result<Token, TokenFormatError> {
    let rest = header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .ok_or(TokenFormatError::Malformed)?;
    Token::parse(rest)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_a_token_round_trips_and_its_debug_hides_the_secret() {
        let token = Token::generate();
        let text = token.expose();
        assert_eq!(Token::parse(&text).unwrap(), token);
        assert_eq!(bearer(&format!("Bearer {text}")).unwrap(), token);
        assert!(!format!("{token:?}").contains(&text[22..]));
        assert_ne!(Token::generate(), token);
        assert_eq!(token.digest(), Token::parse(&text).unwrap().digest());
    }

    #[test]
    fn security_malformed_tokens_are_errors() {
        let good = Token::generate().expose();
        for bad in [
            "",
            "amt1",
            "amt1..",
            "amt2.0011223344556677.00",
            &good[..good.len() - 1],
            &format!("{good}.x"),
            "amt1.zz11223344556677.0011",
            "amt1.é011223344556677.0011",
        ] {
            assert_eq!(
                Token::parse(bad),
                Err(TokenFormatError::Malformed),
                "{bad:?}"
            );
        }
        assert!(bearer(&good).is_err(), "without Bearer");
    }
}
