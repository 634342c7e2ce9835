//! Portable reference kernels: plain Rust, wrapping arithmetic, written so the compiler can
//! auto-vectorize them. Every other backend must produce exactly these results.

/// `Σ d[j] · v[j]` over Z_{2^32}, with `d[j]` read as a two's-complement `i8` digit.
pub fn dot_i8_u32(d: &[u8], v: &[u32]) -> u32 {
    debug_assert_eq!(d.len(), v.len());
    let mut lanes = [0u32; 8];
    let mut d_chunks = d.chunks_exact(8);
    let mut v_chunks = v.chunks_exact(8);
    for (dc, vc) in (&mut d_chunks).zip(&mut v_chunks) {
        for k in 0..8 {
            lanes[k] = lanes[k].wrapping_add(widen(dc[k]).wrapping_mul(vc[k]));
        }
    }
    let tail = d_chunks
        .remainder()
        .iter()
        .zip(v_chunks.remainder())
        .fold(0u32, |acc, (&x, &y)| {
            acc.wrapping_add(widen(x).wrapping_mul(y))
        });
    lanes.iter().fold(tail, |acc, &x| acc.wrapping_add(x))
}

/// `Σ a[j] · b[j]` over Z_{2^32}.
pub fn dot_u32(a: &[u32], b: &[u32]) -> u32 {
    debug_assert_eq!(a.len(), b.len());
    let mut lanes = [0u32; 8];
    let mut a_chunks = a.chunks_exact(8);
    let mut b_chunks = b.chunks_exact(8);
    for (ac, bc) in (&mut a_chunks).zip(&mut b_chunks) {
        for k in 0..8 {
            lanes[k] = lanes[k].wrapping_add(ac[k].wrapping_mul(bc[k]));
        }
    }
    let tail = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .fold(0u32, |acc, (&x, &y)| acc.wrapping_add(x.wrapping_mul(y)));
    lanes.iter().fold(tail, |acc, &x| acc.wrapping_add(x))
}

/// `h += Σ_j d[j] · block[j]` over Z_{2^32}, where `block` is row-major with `d.len()` rows of
/// `h.len()` entries and `d[j]` is a two's-complement `i8` digit.
pub fn row_times_block_acc(d: &[u8], block: &[u32], h: &mut [u32]) {
    let n = h.len();
    debug_assert_eq!(block.len(), d.len() * n);
    for (&digit, row) in d.iter().zip(block.chunks_exact(n)) {
        let scale = widen(digit);
        if scale == 0 {
            continue;
        }
        for (acc, &a) in h.iter_mut().zip(row) {
            *acc = acc.wrapping_add(scale.wrapping_mul(a));
        }
    }
}

/// Sign-extends a stored `i8` digit into Z_{2^32}.
#[inline(always)]
pub fn widen(digit: u8) -> u32 {
    digit as i8 as i32 as u32
}
