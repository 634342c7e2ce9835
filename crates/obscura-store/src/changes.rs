//! Change files: one JSON object per line, each a [`Change`] of the database's next version.
//!
//! ```text
//! {"op": "set",    "index": 7, "value": "new text"}        a record of a database by index
//! {"op": "append", "index": 1000, "value_hex": "00ff"}     the next index past the last record
//! {"op": "delete", "index": 3}                             the index reads as absent
//! {"op": "upsert", "key": "alice", "value": "..."}         a key of a keyword database
//! {"op": "delete", "key_hex": "616c"}
//! ```
//!
//! A value or key is a JSON string's UTF-8 bytes, the bytes of `value_hex` / `key_hex`, or for
//! any other JSON value its text (as `obscura build` reads a JSON-lines field). Blank lines are
//! skipped; unknown fields, a missing or doubled field and two lines changing one index or key
//! are refused, naming the lines.
//!
//! A Merkle tree changes only by growing: its change file holds the new leaves, one per line,
//! as `obscura merkle build` reads its leaves ([`read_for`] reads a change file as the
//! database's kind asks).

use std::collections::HashMap;
use std::io::BufRead;

use obscura_pir::{Change, Lookup};
use serde_json::{Map, Value};

/// Why a change file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeFileError {
    /// The file could not be read.
    #[error("cannot read the changes")]
    Io(#[from] std::io::Error),
    /// A line is not a valid change.
    #[error("line {line}: {reason}")]
    Line {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Two lines change one record or key.
    #[error("lines {first} and {second} both change {what}")]
    Duplicate {
        /// The first line.
        first: usize,
        /// The later line.
        second: usize,
        /// The record or key (`index 7`, `key "alice"`).
        what: String,
    },
}

/// Reads the change file `data` of a database that `lookup` serves, holding `items` items: a
/// Merkle tree's new leaves, one per line ([`leaf_lines`]), appended from index `items` on;
/// JSON lines of changes ([`read_changes`]) for any other database.
pub fn read_for(lookup: Lookup, items: u64, data: &[u8]) -> Result<Vec<Change>, ChangeFileError> {
    match lookup {
        Lookup::AuditPath => Ok((items..)
            .zip(leaf_lines(data))
            .map(|(index, leaf)| Change::Append {
                index,
                value: leaf.to_vec(),
            })
            .collect()),
        _ => read_changes(data),
    }
}

/// The leaves of a file of one leaf per line: each line's bytes without its ending (`\n` or
/// `\r\n`); an ending at the very end does not start another line.
pub fn leaf_lines(data: &[u8]) -> Vec<&[u8]> {
    if data.is_empty() {
        return Vec::new();
    }
    data.strip_suffix(b"\n")
        .unwrap_or(data)
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .collect()
}

/// Reads the changes of `lines`, checked line by line and against each other.
pub fn read_changes(lines: impl BufRead) -> Result<Vec<Change>, ChangeFileError> {
    let mut changes = Vec::new();
    let mut seen: HashMap<Target, usize> = HashMap::new();
    for (number, line) in lines.lines().enumerate() {
        let line = line?;
        let number = number + 1;
        if line.trim().is_empty() {
            continue;
        }
        let change = parse_line(&line).map_err(|reason| ChangeFileError::Line {
            line: number,
            reason,
        })?;
        let target = Target::of(&change);
        if let Some(&first) = seen.get(&target) {
            return Err(ChangeFileError::Duplicate {
                first,
                second: number,
                what: target.to_string(),
            });
        }
        seen.insert(target, number);
        changes.push(change);
    }
    Ok(changes)
}

/// What a change changes: one record or one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Target {
    Index(u64),
    Key(Vec<u8>),
}

impl Target {
    fn of(change: &Change) -> Self {
        match change {
            Change::Set { index, .. } | Change::Append { index, .. } | Change::Delete { index } => {
                Self::Index(*index)
            }
            Change::Upsert { key, .. } | Change::Remove { key } => Self::Key(key.clone()),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Index(index) => write!(f, "index {index}"),
            Self::Key(key) => match std::str::from_utf8(key) {
                Ok(text) => write!(f, "key {text:?}"),
                Err(_) => write!(f, "key 0x{}", hex::encode(key)),
            },
        }
    }
}

/// Fields a change line may have.
const FIELDS: [&str; 6] = ["op", "index", "key", "key_hex", "value", "value_hex"];

/// The change one line holds, or why it holds none.
fn parse_line(line: &str) -> Result<Change, String> {
    let object: Map<String, Value> =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    if let Some(unknown) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "unknown field {unknown:?} (a change has op, index or key/key_hex, value/value_hex)"
        ));
    }
    let op = match object.get("op") {
        Some(Value::String(op)) => op.as_str(),
        Some(_) => return Err("\"op\" is not a string".into()),
        None => return Err("no \"op\" (set, append, delete or upsert)".into()),
    };
    let index = object
        .get("index")
        .map(|v| {
            v.as_u64()
                .ok_or_else(|| format!("\"index\" is {v}, not a whole number from 0"))
        })
        .transpose()?;
    let key = bytes(&object, "key")?;
    let value = bytes(&object, "value")?;
    let needs = |what: &str| format!("a {op} needs {what}");
    let refuses = |what: &str| format!("a {op} takes no {what}");
    match op {
        "set" | "append" => {
            if key.is_some() {
                return Err(refuses("key"));
            }
            let index = index.ok_or_else(|| needs("an \"index\""))?;
            let value = value.ok_or_else(|| needs("a \"value\" or \"value_hex\""))?;
            Ok(if op == "set" {
                Change::Set { index, value }
            } else {
                Change::Append { index, value }
            })
        }
        "delete" => {
            if value.is_some() {
                return Err(refuses("value"));
            }
            match (index, key) {
                (Some(index), None) => Ok(Change::Delete { index }),
                (None, Some(key)) => Ok(Change::Remove { key }),
                _ => Err("a delete needs either an \"index\" or a \"key\"".into()),
            }
        }
        "upsert" => {
            if index.is_some() {
                return Err(refuses("index"));
            }
            let key = key.ok_or_else(|| needs("a \"key\" or \"key_hex\""))?;
            let value = value.ok_or_else(|| needs("a \"value\" or \"value_hex\""))?;
            Ok(Change::Upsert { key, value })
        }
        other => Err(format!(
            "unknown op {other:?} (set, append, delete or upsert)"
        )),
    }
}

/// The bytes of field `name` (a string's UTF-8 bytes or other JSON's text) or of `{name}_hex`.
fn bytes(object: &Map<String, Value>, name: &str) -> Result<Option<Vec<u8>>, String> {
    let hex_name = format!("{name}_hex");
    match (object.get(name), object.get(&hex_name)) {
        (Some(_), Some(_)) => Err(format!("both \"{name}\" and \"{hex_name}\"")),
        (Some(Value::String(text)), None) => Ok(Some(text.clone().into_bytes())),
        (Some(Value::Null), None) => Err(format!("\"{name}\" is null")),
        (Some(other), None) => Ok(Some(other.to_string().into_bytes())),
        (None, Some(Value::String(text))) => hex::decode(text)
            .map(Some)
            .map_err(|e| format!("\"{hex_name}\" is not hex: {e}")),
        (None, Some(_)) => Err(format!("\"{hex_name}\" is not a string")),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Change>, ChangeFileError> {
        read_changes(text.as_bytes())
    }

    #[test]
    fn lines_drop_their_endings_only() {
        let cases: [(&[u8], Vec<&[u8]>); 6] = [
            (b"", vec![]),
            (b"\n", vec![b""]),
            (b"a", vec![b"a"]),
            (b"a\nb\n", vec![b"a", b"b"]),
            (b"a\r\n\nb", vec![b"a", b"", b"b"]),
            (b" x \r\n\r\n", vec![b" x ", b""]),
        ];
        for (data, expected) in cases {
            assert_eq!(leaf_lines(data), expected, "{data:?}");
        }
    }

    /// A tree's change file is its new leaves, appended after the last; any other database's
    /// is JSON lines.
    #[test]
    fn a_change_file_is_read_as_the_database_asks() {
        let data = b"{\"op\":\"delete\",\"index\":3}\nz\n";
        let appended = read_for(Lookup::AuditPath, 10, data).unwrap();
        assert_eq!(
            appended,
            [
                Change::Append {
                    index: 10,
                    value: data[..25].to_vec()
                },
                Change::Append {
                    index: 11,
                    value: b"z".to_vec()
                },
            ]
        );
        assert!(read_for(Lookup::Index, 10, data).is_err());
        assert_eq!(
            read_for(Lookup::Index, 10, &data[..26]).unwrap(),
            [Change::Delete { index: 3 }]
        );
    }

    #[test]
    fn every_op_is_read() {
        let changes = read(concat!(
            "{\"op\":\"set\",\"index\":7,\"value\":\"new\"}\n",
            "\n",
            "{\"op\":\"append\",\"index\":10,\"value_hex\":\"00ff\"}\n",
            "{\"op\":\"delete\",\"index\":3}\n",
            "{\"op\":\"upsert\",\"key\":\"alice\",\"value\":{\"age\":3}}\n",
            "{\"op\":\"delete\",\"key_hex\":\"626f62\"}\n",
            "{\"op\":\"upsert\",\"key\":12,\"value\":\"\"}\n",
        ))
        .unwrap();
        assert_eq!(
            changes,
            vec![
                Change::Set {
                    index: 7,
                    value: b"new".to_vec()
                },
                Change::Append {
                    index: 10,
                    value: vec![0, 255]
                },
                Change::Delete { index: 3 },
                Change::Upsert {
                    key: b"alice".to_vec(),
                    value: b"{\"age\":3}".to_vec()
                },
                Change::Remove {
                    key: b"bob".to_vec()
                },
                Change::Upsert {
                    key: b"12".to_vec(),
                    value: Vec::new()
                },
            ]
        );
    }

    #[test]
    fn duplicates_name_both_lines() {
        let error = read(
            "{\"op\":\"set\",\"index\":7,\"value\":\"a\"}\n\n{\"op\":\"delete\",\"index\":7}\n",
        )
        .unwrap_err();
        assert_eq!(error.to_string(), "lines 1 and 3 both change index 7");
        // A key spelled as a string and as hex is one key.
        let error = read("{\"op\":\"upsert\",\"key\":\"bob\",\"value\":\"1\"}\n{\"op\":\"delete\",\"key_hex\":\"626f62\"}\n")
            .unwrap_err();
        assert_eq!(error.to_string(), "lines 1 and 2 both change key \"bob\"");
    }

    #[test]
    fn bad_lines_are_named() {
        for (line, reason) in [
            ("[1]", "not a JSON object"),
            ("{\"index\":1}", "no \"op\""),
            ("{\"op\":\"move\",\"index\":1}", "unknown op \"move\""),
            (
                "{\"op\":\"set\",\"index\":-1,\"value\":\"a\"}",
                "not a whole number",
            ),
            ("{\"op\":\"set\",\"index\":1}", "a set needs a \"value\""),
            (
                "{\"op\":\"set\",\"value\":\"a\"}",
                "a set needs an \"index\"",
            ),
            (
                "{\"op\":\"set\",\"index\":1,\"value\":\"a\",\"value_hex\":\"00\"}",
                "both",
            ),
            (
                "{\"op\":\"set\",\"index\":1,\"value_hex\":\"zz\"}",
                "not hex",
            ),
            ("{\"op\":\"set\",\"index\":1,\"value\":null}", "null"),
            ("{\"op\":\"delete\",\"index\":1,\"key\":\"a\"}", "either"),
            (
                "{\"op\":\"delete\",\"index\":1,\"value\":\"a\"}",
                "takes no value",
            ),
            (
                "{\"op\":\"upsert\",\"index\":1,\"key\":\"a\",\"value\":\"b\"}",
                "takes no index",
            ),
            (
                "{\"op\":\"set\",\"index\":1,\"value\":\"a\",\"extra\":1}",
                "unknown field \"extra\"",
            ),
        ] {
            let error = read(&format!("\n{line}\n")).unwrap_err();
            let shown = error.to_string();
            assert!(
                matches!(error, ChangeFileError::Line { line: 2, .. }) && shown.contains(reason),
                "{line}: {shown}"
            );
        }
    }
}
