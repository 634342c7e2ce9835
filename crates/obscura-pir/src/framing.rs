//! Framing of several binary messages in one: `count: u32 LE`, then `count` times
//! `length: u32 LE` followed by that many bytes. A batch of queries or answers travels framed,
//! and so do the one-query-per-sub-database requests of TreePIR and PBC.

/// Joins messages into one body.
pub fn encode<M: AsRef<[u8]>>(messages: &[M]) -> Vec<u8> {
    let total: usize = messages.iter().map(|m| 4 + m.as_ref().len()).sum();
    let mut out = Vec::with_capacity(4 + total);
    out.extend_from_slice(&(messages.len() as u32).to_le_bytes());
    for message in messages {
        let message = message.as_ref();
        out.extend_from_slice(&(message.len() as u32).to_le_bytes());
        out.extend_from_slice(message);
    }
    out
}

/// The message count a body announces, before any message is read.
pub fn count(body: &[u8]) -> Option<usize> {
    Some(u32::from_le_bytes(body.get(..4)?.try_into().ok()?) as usize)
}

/// Splits a body into 1 to `max_messages` messages; every length is checked against the bytes
/// present, and nothing is copied.
pub fn decode(body: &[u8], max_messages: usize) -> Result<Vec<&[u8]>, String> {
    let count = count(body).ok_or("the batch is shorter than its 4-byte count")?;
    if count == 0 || count > max_messages {
        return Err(format!(
            "a batch holds 1 to {max_messages} queries, not {count}"
        ));
    }
    split(&body[4..], count)
}

/// Splits a body into exactly `expected` messages (none at all included), as [`decode`] does.
pub fn decode_exact(body: &[u8], expected: usize) -> Result<Vec<&[u8]>, String> {
    let count = count(body).ok_or("the message is shorter than its 4-byte count")?;
    if count != expected {
        return Err(format!("{count} messages where {expected} are expected"));
    }
    split(&body[4..], count)
}

/// The `count` messages of `rest`, the body after its count.
fn split(mut rest: &[u8], count: usize) -> Result<Vec<&[u8]>, String> {
    let take_u32 = |bytes: &[u8]| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?))
    };
    // Every message takes at least its 4-byte length: a count beyond that is refused before
    // anything is allocated.
    if count > rest.len() / 4 {
        return Err(format!(
            "{count} messages announced in {} bytes",
            rest.len()
        ));
    }
    let mut messages = Vec::with_capacity(count);
    for i in 0..count {
        let len = take_u32(rest).ok_or_else(|| format!("message {i} has no length"))? as usize;
        rest = &rest[4..];
        if rest.len() < len {
            return Err(format!(
                "message {i} is truncated: {len} bytes announced, {} present",
                rest.len()
            ));
        }
        let (message, tail) = rest.split_at(len);
        messages.push(message);
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(format!(
            "{} trailing bytes after the last message",
            rest.len()
        ));
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let messages = vec![b"abc".to_vec(), vec![], vec![7; 1000]];
        let body = encode(&messages);
        let decoded = decode(&body, 3).unwrap();
        assert_eq!(
            decoded,
            messages.iter().map(|m| m.as_slice()).collect::<Vec<_>>()
        );
        assert!(decode(&body, 2).is_err());
        assert!(decode(&body[..body.len() - 1], 3).is_err());
        let mut longer = body.clone();
        longer.push(0);
        assert!(decode(&longer, 3).is_err());
        assert!(decode(&encode::<Vec<u8>>(&[]), 3).is_err());
        assert_eq!(
            decode_exact(&encode::<Vec<u8>>(&[]), 0).unwrap(),
            Vec::<&[u8]>::new()
        );
        assert_eq!(decode_exact(&body, 3).unwrap(), decoded);
        assert!(decode_exact(&body, 2).is_err());
        // A count that the body cannot hold is refused before anything is allocated.
        assert!(decode_exact(&u32::MAX.to_le_bytes(), u32::MAX as usize).is_err());
    }

    proptest! {
        #[test]
        fn random_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&body, 64);
            let _ = decode_exact(&body, 3);
        }
    }
}
