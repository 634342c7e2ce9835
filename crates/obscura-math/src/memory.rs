//! Fresh memory: large zeroed buffers for the operands that are streamed from memory, and
//! buffers written before their first use.

use std::ops::{Deref, DerefMut};

use rayon::prelude::*;

/// Buffers at least this large are mapped with a huge-page hint (one 2 MiB page).
#[cfg(target_os = "linux")]
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// A zeroed byte buffer for a large operand. On Linux, buffers of 2 MiB or more are anonymous
/// mappings advised to use transparent huge pages, so streaming them misses the TLB 512 times
/// less often; elsewhere, or where the mapping fails, they are ordinary heap memory.
pub struct LargeBuffer(Inner);

enum Inner {
    Heap(Vec<u8>),
    #[cfg(target_os = "linux")]
    Mapped(memmap2::MmapMut),
}

/// A zeroed anonymous mapping of `len` bytes advised to use transparent huge pages, where the
/// buffer is large enough and the mapping works.
#[cfg(target_os = "linux")]
fn huge_mapping(len: usize) -> Option<memmap2::MmapMut> {
    let map = memmap2::MmapMut::map_anon(len)
        .ok()
        .filter(|_| len >= HUGE_PAGE_BYTES)?;
    // Only a hint: without transparent huge pages the buffer still works.
    let _ = map.advise(memmap2::Advice::HugePage);
    Some(map)
}

impl LargeBuffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        #[cfg(target_os = "linux")]
        if let Some(map) = huge_mapping(len) {
            return Self(Inner::Mapped(map));
        }
        Self(Inner::Heap(vec![0; len]))
    }

    /// A copy of `bytes`, copied on every core in pieces of 2 MiB (a huge page).
    pub fn copy_of(bytes: &[u8]) -> Self {
        let mut copy = Self::zeroed(bytes.len());
        copy.par_chunks_mut(COPY_PIECE)
            .zip(bytes.par_chunks(COPY_PIECE))
            .for_each(|(to, from)| to.copy_from_slice(from));
        copy
    }
}

/// Bytes [`LargeBuffer::copy_of`] copies per task.
const COPY_PIECE: usize = 2 << 20;

/// A zeroed slice of `len` plain values (all-zero bytes being a value, see [`bytemuck::Pod`])
/// for data read at random: like [`LargeBuffer`], a huge-page mapping on Linux when it is 2 MiB
/// or more (page-aligned, so values never straddle more cache lines than their size needs, and
/// random reads miss the TLB far less often), ordinary heap memory otherwise.
pub struct LargeSlice<T: bytemuck::Pod>(SliceInner<T>);

enum SliceInner<T> {
    Heap(Vec<T>),
    #[cfg(target_os = "linux")]
    Mapped(memmap2::MmapMut),
}

impl<T: bytemuck::Pod> LargeSlice<T> {
    /// `len` zero values.
    pub fn zeroed(len: usize) -> Self {
        #[cfg(target_os = "linux")]
        if let Some(map) = len
            .checked_mul(std::mem::size_of::<T>())
            .and_then(huge_mapping)
        {
            return Self(SliceInner::Mapped(map));
        }
        Self(SliceInner::Heap(vec![T::zeroed(); len]))
    }
}

impl<T: bytemuck::Pod> Deref for LargeSlice<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.0 {
            SliceInner::Heap(values) => values,
            // A mapping is page-aligned, so the cast cannot fail on alignment; its length is a
            // whole number of values by construction.
            #[cfg(target_os = "linux")]
            SliceInner::Mapped(map) => bytemuck::cast_slice(map),
        }
    }
}

impl<T: bytemuck::Pod> DerefMut for LargeSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.0 {
            SliceInner::Heap(values) => values,
            #[cfg(target_os = "linux")]
            SliceInner::Mapped(map) => bytemuck::cast_slice_mut(map),
        }
    }
}

impl From<Vec<u8>> for LargeBuffer {
    fn from(bytes: Vec<u8>) -> Self {
        Self(Inner::Heap(bytes))
    }
}

impl Deref for LargeBuffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Inner::Heap(bytes) => bytes,
            #[cfg(target_os = "linux")]
            Inner::Mapped(map) => map,
        }
    }
}

impl DerefMut for LargeBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Inner::Heap(bytes) => bytes,
            #[cfg(target_os = "linux")]
            Inner::Mapped(map) => map,
        }
    }
}

impl Clone for LargeBuffer {
    fn clone(&self) -> Self {
        Self::copy_of(self)
    }
}

/// Bytes per cache line (on the machines this code is tuned for).
#[cfg(target_arch = "x86_64")]
const CACHE_LINE: usize = 64;

/// Asks the CPU to start loading the cache lines that hold `value` into its caches, so that a
/// later read of it does not wait for memory. A hint only: it changes no result, and does
/// nothing where the architecture has no such instruction.
#[inline(always)]
pub fn prefetch<T: ?Sized>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = (value as *const T).cast::<u8>();
        let len = std::mem::size_of_val(value).max(1);
        let first_line = start as usize / CACHE_LINE;
        let lines = (start as usize + (len - 1)) / CACHE_LINE - first_line + 1;
        for line in 0..lines {
            // The first byte of `value` in each line it touches (its only byte, zero-sized).
            let offset = (line * CACHE_LINE).saturating_sub(start as usize % CACHE_LINE);
            #[allow(unsafe_code)]
            // SAFETY: `offset < len`, so the address lies inside `value`, a live reference (or
            // is its own address, zero-sized); a prefetch neither faults nor changes memory.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.add(offset).cast(),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// `len` copies of `value`, every byte written now. `vec![value; len]` of zeros takes fresh
/// pages that stay unmapped until touched: a buffer that is added into is read first, which maps
/// the shared zero page, then copied at its first write with a TLB flush on every core the
/// process runs on, once per page.
pub(crate) fn written<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut values = Vec::with_capacity(len);
    values.resize(len, value);
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_zeroed_and_keep_what_is_written() {
        for len in [0, 1, 4096, 3 << 20] {
            let mut buffer = LargeBuffer::zeroed(len);
            assert_eq!(buffer.len(), len);
            assert!(buffer.iter().all(|&b| b == 0));
            for (i, b) in buffer.iter_mut().enumerate() {
                *b = i as u8;
            }
            let copy = buffer.clone();
            assert!(copy.iter().enumerate().all(|(i, &b)| b == i as u8));
        }
    }

    #[test]
    fn large_slices_start_zeroed_and_hold_their_values() {
        for len in [0, 3, 1 << 17] {
            let mut slice = LargeSlice::<[u128; 2]>::zeroed(len);
            assert_eq!(slice.len(), len);
            assert!(slice.iter().all(|&v| v == [0, 0]));
            for (i, v) in slice.iter_mut().enumerate() {
                *v = [i as u128, !(i as u128)];
            }
            assert!(slice.iter().enumerate().all(|(i, v)| v[1] == !(i as u128)));
        }
    }
}
