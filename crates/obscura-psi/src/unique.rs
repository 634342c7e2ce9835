//! De-duplicating a party's input: equal items would show up as equal group elements and tell
//! the peer their multiplicity, so each distinct value enters the protocol once.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use rayon::prelude::*;

/// Rows per parallel task when hashing.
const TASK_ROWS: usize = 4096;

/// The distinct values of a list of rows, in order of first appearance, and which value each row
/// holds.
pub(crate) struct UniqueItems<'a> {
    values: Vec<&'a [u8]>,
    value_of_row: Vec<usize>,
}

impl<'a> UniqueItems<'a> {
    /// The distinct values of `rows` (see [`first_rows`]).
    pub(crate) fn new<I: AsRef<[u8]> + Sync>(rows: &'a [I]) -> Self {
        Self::from_first_rows(rows, first_rows(rows))
    }

    /// The distinct values of `rows`, given [`first_rows`]`(rows)`.
    pub(crate) fn from_first_rows<I: AsRef<[u8]>>(rows: &'a [I], first_row: Vec<usize>) -> Self {
        let mut values = Vec::new();
        let mut value_of_row: Vec<usize> = Vec::with_capacity(rows.len());
        for (row, first) in first_row.into_iter().enumerate() {
            let value = if first == row {
                values.push(rows[row].as_ref());
                values.len() - 1
            } else {
                value_of_row[first]
            };
            value_of_row.push(value);
        }
        Self {
            values,
            value_of_row,
        }
    }

    /// Appends values known to differ from every value already here and from each other (a
    /// bucket's padding), each as a row of its own.
    pub(crate) fn extend_distinct(&mut self, extra: &'a [Vec<u8>]) {
        for value in extra {
            self.value_of_row.push(self.values.len());
            self.values.push(value);
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

    /// The number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.value_of_row.len()
    }

    /// Rows dropped because an earlier row holds the same value.
    pub(crate) fn duplicates(&self) -> usize {
        self.value_of_row.len() - self.values.len()
    }

    /// The rows (ascending) whose value is marked in `matched` (one flag per distinct value).
    pub(crate) fn rows_matching(&self, matched: &[bool]) -> Vec<usize> {
        rows_matching(&self.value_of_row, matched)
    }

    /// Which distinct value each row holds.
    pub(crate) fn value_of_row(&self) -> &[usize] {
        &self.value_of_row
    }
}

/// For each row of `rows`, the first row holding the same value (itself for a first
/// appearance): the costly part of [`UniqueItems::new`], owning nothing of `rows`, so it can be
/// computed ahead on another thread.
///
/// Sort-based, so that the work is parallel and streams through memory: each row's value is
/// hashed (SipHash under a random key, so crafted inputs cannot pile up on one hash) on the
/// current rayon pool, the `(hash, row)` pairs are sorted in parallel, and each run of equal
/// hashes is split by comparing values (a run holds one value but for 64-bit collisions).
pub(crate) fn first_rows<I: AsRef<[u8]> + Sync>(rows: &[I]) -> Vec<usize> {
    let key = RandomState::new();
    let mut sorted: Vec<(u64, usize)> = rows
        .par_iter()
        .with_min_len(TASK_ROWS)
        .enumerate()
        .map(|(row, value)| (key.hash_one(value.as_ref()), row))
        .collect();
    sorted.par_sort_unstable();
    // The first row holding each row's value (rows ascend within a run).
    let mut first_row: Vec<usize> = (0..rows.len()).collect();
    let mut firsts = Vec::new();
    for run in sorted
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|run| run.len() > 1)
    {
        firsts.clear();
        for &(_, row) in run {
            let value = rows[row].as_ref();
            match firsts
                .iter()
                .find(|&&first: &&usize| rows[first].as_ref() == value)
            {
                Some(&first) => first_row[row] = first,
                None => firsts.push(row),
            }
        }
    }
    first_row
}

/// The rows (ascending) whose value, as `value_of_row` numbers them, is marked in `matched`.
pub(crate) fn rows_matching(value_of_row: &[usize], matched: &[bool]) -> Vec<usize> {
    value_of_row
        .iter()
        .enumerate()
        .filter(|&(_, &value)| matched[value])
        .map(|(row, _)| row)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_far_apart_and_many_copies() {
        let mut rows: Vec<Vec<u8>> = (0..10_000u32).map(|i| i.to_le_bytes().to_vec()).collect();
        rows.extend(vec![b"x".to_vec(); 5000]);
        rows.extend((0..10_000u32).rev().map(|i| i.to_le_bytes().to_vec()));
        let unique = UniqueItems::new(&rows);
        assert_eq!(unique.len(), 10_001);
        assert_eq!(unique.duplicates(), 14_999);
        assert_eq!(unique.values()[10_000], b"x");
        assert_eq!(unique.value_of_row[24_999], 0);
    }

    #[test]
    fn distinct_extras_are_rows_of_their_own() {
        let rows = ["b", "a", "b"];
        let extra = vec![b"yy".to_vec(), b"zz".to_vec()];
        let mut unique = UniqueItems::new(&rows);
        unique.extend_distinct(&extra);
        assert_eq!(unique.values(), [&b"b"[..], b"a", b"yy", b"zz"]);
        assert_eq!(unique.duplicates(), 1);
        assert_eq!(unique.rows_matching(&[true, false, false, true]), [0, 2, 4]);
    }

    #[test]
    fn duplicates_are_counted_once_and_rows_map_back() {
        let rows = ["b", "a", "b", "c", "a", "b"];
        let unique = UniqueItems::new(&rows);
        assert_eq!(unique.values(), [b"b", b"a", b"c"].map(|v| &v[..]));
        assert_eq!(unique.duplicates(), 3);
        assert_eq!(unique.rows_matching(&[true, false, true]), [0, 2, 3, 5]);
    }
}
