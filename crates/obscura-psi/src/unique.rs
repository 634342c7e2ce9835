//! De-duplicating a party's input: equal items would show up as equal group elements and tell
//! the peer their multiplicity, so each distinct value enters the protocol once.

use std::collections::HashMap;

/// The distinct values of a list of rows, in order of first appearance, and which value each row
/// holds.
pub(crate) struct UniqueItems<'a> {
    values: Vec<&'a [u8]>,
    value_of_row: Vec<usize>,
}

impl<'a> UniqueItems<'a> {
    /// The distinct values of `rows`.
    pub(crate) fn new<I: AsRef<[u8]>>(rows: &'a [I]) -> Self {
        let mut index: HashMap<&'a [u8], usize> = HashMap::with_capacity(rows.len());
        let mut values = Vec::new();
        let value_of_row = rows
            .iter()
            .map(|row| {
                *index.entry(row.as_ref()).or_insert_with(|| {
                    values.push(row.as_ref());
                    values.len() - 1
                })
            })
            .collect();
        Self {
            values,
            value_of_row,
        }
    }

    /// The distinct values.
    pub(crate) fn values(&self) -> &[&'a [u8]] {
        &self.values
    }

    /// The number of distinct values.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// Rows dropped because an earlier row holds the same value.
    pub(crate) fn duplicates(&self) -> usize {
        self.value_of_row.len() - self.values.len()
    }

    /// The rows (ascending) whose value is marked in `matched` (one flag per distinct value).
    pub(crate) fn rows_matching(&self, matched: &[bool]) -> Vec<usize> {
        self.value_of_row
            .iter()
            .enumerate()
            .filter(|&(_, &value)| matched[value])
            .map(|(row, _)| row)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_counted_once_and_rows_map_back() {
        let rows = ["b", "a", "b", "c", "a", "b"];
        let unique = UniqueItems::new(&rows);
        assert_eq!(unique.values(), [b"b", b"a", b"c"].map(|v| &v[..]));
        assert_eq!(unique.duplicates(), 3);
        assert_eq!(unique.rows_matching(&[true, false, true]), [0, 2, 3, 5]);
    }
}
