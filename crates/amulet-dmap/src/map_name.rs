//! The name of a map: validated once, on creation and on decode.

use crate::MapError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest map name, in bytes.
pub const MAP_NAME_BYTES_MAX: usize = 128;

/// A map's name: 1 to 128 bytes of ASCII letters, digits, `_`, `-` and `.`,
/// so it is safe in logs, metrics labels and file names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct MapName(String);

impl MapName {
    /// Checks `name` and wraps it.
    pub fn new(name: impl Into<String>) -> Result<MapName, MapError> {
        let name = name.into();
        let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if name.is_empty() || name.len() > MAP_NAME_BYTES_MAX || !name.chars().all(valid_char) {
            return Err(MapError::BadMapName(name));
        }
        Ok(MapName(name))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for MapName {
    type Error = MapError;
    fn try_from(name: String) -> Result<MapName, MapError> {
        MapName::new(name)
    }
}

impl From<MapName> for String {
    fn from(name: MapName) -> String {
        name.0
    }
}

impl fmt::Display for MapName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(MapName::new("users.v2-a_b").is_ok());
        assert!(matches!(MapName::new(""), Err(MapError::BadMapName(_))));
        assert!(matches!(MapName::new("a b"), Err(MapError::BadMapName(_))));
        assert!(matches!(MapName::new("ä"), Err(MapError::BadMapName(_))));
        assert!(MapName::new("x".repeat(MAP_NAME_BYTES_MAX)).is_ok());
        assert!(matches!(
            MapName::new("x".repeat(MAP_NAME_BYTES_MAX + 1)),
            Err(MapError::BadMapName(_))
        ));
    }

    #[test]
    fn decoding_checks_the_name() {
        let bytes = postcard::to_allocvec(&"bad name".to_string()).unwrap();
        assert!(postcard::from_bytes::<MapName>(&bytes).is_err());
        let bytes = postcard::to_allocvec(&"good".to_string()).unwrap();
        assert_eq!(
            postcard::from_bytes::<MapName>(&bytes).unwrap().as_str(),
            "good"
        );
    }
}
