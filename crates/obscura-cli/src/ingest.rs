//! Reading records from CSV and JSON-lines files: one record per row, made of chosen columns.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rayon::slice::ParallelSliceMut;

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

/// Column names listed in an error about a missing column; the rest are counted.
const SHOWN_COLUMNS: usize = 10;

/// Characters of a name or key shown in an error; longer ones are cut.
const SHOWN_CHARS: usize = 40;

/// The position of the column `name` in the header row `headers` of the CSV file `path`. The
/// error lists a few of the columns, cut short and escaped, or says that the file does not look
/// like CSV when its first line holds binary data.
pub fn column_index(path: &Path, headers: &csv::ByteRecord, name: &str) -> Result<usize> {
    headers
        .iter()
        .position(|h| h == name.as_bytes())
        .with_context(|| {
            let name = shown(name.as_bytes());
            if headers.iter().any(is_binary) {
                return format!(
                    "{}: no column {name}: the file does not look like CSV (its first line holds binary data, not a header row)",
                    path.display()
                );
            }
            let mut names: Vec<String> = headers.iter().take(SHOWN_COLUMNS).map(shown).collect();
            if headers.len() > SHOWN_COLUMNS {
                names.push(format!("and {} more", headers.len() - SHOWN_COLUMNS));
            }
            format!(
                "{}: no column {name} (columns: {})",
                path.display(),
                names.join(", ")
            )
        })
}

/// Whether `bytes` are not text: not UTF-8, or holding control characters other than tabs.
fn is_binary(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).map_or(true, |text| {
        text.chars().any(|c| c.is_control() && c != '\t')
    })
}

/// `bytes` quoted for an error message: invalid UTF-8 replaced, other characters escaped as in
/// a Rust string, and cut after [`SHOWN_CHARS`] characters (marked with `...`).
pub fn shown(bytes: &[u8]) -> String {
    format!(
        "\"{}\"",
        cut(&String::from_utf8_lossy(bytes).escape_debug().to_string())
    )
}

/// `text` cut after [`SHOWN_CHARS`] characters (marked with `...`).
fn cut(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(SHOWN_CHARS).collect();
    let more = if chars.next().is_some() { "..." } else { "" };
    format!("{head}{more}")
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

/// Refuses keys that appear more than once among `keys` (read from `path` in `format`, column or
/// field `column`), naming the two rows or lines, and for JSON lines how each spells the key:
/// `1` and `"1"` become the same key.
pub fn check_unique_keys(
    path: &Path,
    format: InputFormat,
    column: &str,
    keys: &[Vec<u8>],
) -> Result<()> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.par_sort_unstable_by(|&a, &b| keys[a].cmp(&keys[b]).then(a.cmp(&b)));
    let Some((first, second)) = order
        .windows(2)
        .find(|pair| keys[pair[0]] == keys[pair[1]])
        .map(|pair| (pair[0], pair[1]))
    else {
        return Ok(());
    };
    let key = shown(&keys[first]);
    if format != InputFormat::Jsonl {
        bail!(
            "{}: rows {} and {} hold the same key {key}",
            path.display(),
            first + 2,
            second + 2
        );
    }
    let (line_a, text_a) = jsonl_source(path, column, first)?;
    let (line_b, text_b) = jsonl_source(path, column, second)?;
    if text_a == text_b {
        bail!(
            "{}: lines {line_a} and {line_b} hold the same key {key}",
            path.display()
        );
    }
    bail!(
        "{}: the keys {} (line {line_a}) and {} (line {line_b}) encode to the same key {key}: a string's key is its text, another value's key is its JSON text",
        path.display(),
        cut(&text_a),
        cut(&text_b)
    )
}

/// For value `index` of [`jsonl_values`] over the one field `field`: the line it comes from
/// and the JSON text of the field there.
fn jsonl_source(path: &Path, field: &str, index: usize) -> Result<(usize, String)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (number, line) = (1..)
        .zip(text.lines())
        .filter(|(_, line)| !line.trim().is_empty())
        .nth(index)
        .with_context(|| format!("{}: the file changed while it was read", path.display()))?;
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line)
        .with_context(|| format!("{}: line {number}: not a JSON object", path.display()))?;
    let value = object
        .get(field)
        .with_context(|| format!("{}: line {number}: no field {field:?}", path.display()))?;
    Ok((number, value.to_string()))
}
