//! Sizes as users write them (`--max-memory 8GiB`).

/// Parses a size: plain bytes, or a number with a unit: `kB`, `MB`, `GB`, `TB` (powers of 1000)
/// or `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024); `B` and a `K`/`M`/`G`/`T` alone are accepted.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown unit {unit:?}: use B, kB, MB, GB, KiB, MiB or GiB"
            ))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("expected a size such as 8GiB, 512MB or 1000000, not {text:?}"))?;
    let bytes = value * scale as f64;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("{text:?} is not a size of at least 1 byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_their_units() {
        for (text, bytes) in [
            ("1000", 1000),
            ("8GiB", 8 << 30),
            ("512MB", 512_000_000),
            ("1.5 KiB", 1536),
            ("2g", 2_000_000_000),
            ("7B", 7),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "0", "GiB", "12 parsecs", "-5", "1e3"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
