//! Reading records from CSV and JSON-lines files: one record per row, made of chosen columns.

use std::path::Path;

use anyhow::{bail, Context, Result};

/// Input formats of `obscura build`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// Fixed-size records laid end to end (needs --record-size).
    Raw,
    /// A CSV file with a header row; the record is the chosen column(s).
    Csv,
    /// One JSON object per line; the record is the chosen field(s).
    Jsonl,
}

impl InputFormat {
    /// The format a file's extension suggests (`.csv`, `.jsonl` / `.ndjson`, otherwise raw).
    pub fn guess(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => Self::Csv,
            Some("jsonl" | "ndjson") => Self::Jsonl,
            _ => Self::Raw,
        }
    }
}

/// The position of the column `name` in the header row `headers` of the CSV file `path`.
pub fn column_index(path: &Path, headers: &csv::ByteRecord, name: &str) -> Result<usize> {
    headers
        .iter()
        .position(|h| h == name.as_bytes())
        .with_context(|| {
            let names: Vec<_> = headers.iter().map(String::from_utf8_lossy).collect();
            format!(
                "{}: no column {name:?} (columns: {})",
                path.display(),
                names.join(", ")
            )
        })
}

/// The values of the chosen CSV columns, one per data row. One column gives its bytes; several
/// give them as one CSV row (quoted where needed).
pub fn csv_values(path: &Path, columns: &[String]) -> Result<Vec<Vec<u8>>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let headers = reader
        .byte_headers()
        .with_context(|| format!("{}: cannot read the header row", path.display()))?
        .clone();
    let indexes = columns
        .iter()
        .map(|name| column_index(path, &headers, name))
        .collect::<Result<Vec<_>>>()?;
    let mut values = Vec::new();
    for (row, record) in reader.byte_records().enumerate() {
        let record = record.with_context(|| format!("{}: row {}", path.display(), row + 2))?;
        let fields: Vec<&[u8]> = indexes
            .iter()
            .map(|&i| record.get(i).unwrap_or_default())
            .collect();
        values.push(match fields[..] {
            [one] => one.to_vec(),
            _ => {
                let mut writer = csv::WriterBuilder::new()
                    .terminator(csv::Terminator::Any(b'\n'))
                    .from_writer(Vec::new());
                writer.write_record(&fields)?;
                let mut line = writer.into_inner().context("cannot join the columns")?;
                line.pop();
                line
            }
        });
    }
    Ok(values)
}

/// The values of the chosen fields of each JSON line (blank lines are skipped). One field gives
/// a string's bytes or other values' JSON text; several give a JSON object of those fields.
pub fn jsonl_values(path: &Path, fields: &[String]) -> Result<Vec<Vec<u8>>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut values = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let where_ = || format!("{}: line {}", path.display(), number + 1);
        let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line)
            .with_context(|| format!("{}: not a JSON object", where_()))?;
        let mut chosen = Vec::with_capacity(fields.len());
        for field in fields {
            match object.get(field) {
                Some(value) => chosen.push((field, value)),
                None => bail!("{}: no field {field:?}", where_()),
            }
        }
        values.push(match chosen[..] {
            [(_, serde_json::Value::String(text))] => text.clone().into_bytes(),
            [(_, value)] => value.to_string().into_bytes(),
            _ => {
                let members: Vec<String> = chosen
                    .iter()
                    .map(|(key, value)| {
                        format!("{}:{value}", serde_json::Value::from(key.as_str()))
                    })
                    .collect();
                format!("{{{}}}", members.join(",")).into_bytes()
            }
        });
    }
    Ok(values)
}
