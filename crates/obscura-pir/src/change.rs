//! What a new version of a database changes: records set, appended or deleted by index, keys
//! upserted or removed. A scheme's server applies a batch of changes as one version
//! ([`crate::PirServer::update`]), checked before anything changes.

/// One change of a batch that makes a database's next version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Record `index` (which exists) becomes `value`.
    Set {
        /// The record, from 0.
        index: u64,
        /// Its new bytes.
        value: Vec<u8>,
    },
    /// A new record at `index`: a batch's appends are the indexes just past the last record,
    /// each once.
    Append {
        /// The new record's index.
        index: u64,
        /// Its bytes.
        value: Vec<u8>,
    },
    /// Record `index` becomes absent (indexes never shift: the others keep theirs).
    Delete {
        /// The record, from 0.
        index: u64,
    },
    /// The value under `key` becomes `value`, the key added if it was absent.
    Upsert {
        /// The key.
        key: Vec<u8>,
        /// Its value.
        value: Vec<u8>,
    },
    /// `key` becomes absent.
    Remove {
        /// The key.
        key: Vec<u8>,
    },
}

impl Change {
    /// The operation's name in change files: `set`, `append`, `delete`, `upsert` or `delete`
    /// (of a key).
    pub fn op(&self) -> &'static str {
        match self {
            Self::Set { .. } => "set",
            Self::Append { .. } => "append",
            Self::Delete { .. } | Self::Remove { .. } => "delete",
            Self::Upsert { .. } => "upsert",
        }
    }
}
