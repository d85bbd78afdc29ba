//! Fixed-point helpers. The kernel has no FPU in this context and builds Rust
//! with overflow checks, so every operation here saturates instead of
//! wrapping or panicking, and no 128-bit division is ever emitted (the kernel
//! provides no `__udivti3`).
//!
//! Scale used throughout the crate: **Q16**, i.e. `ONE = 65536` stands for 1.0.
//! A Q16 value in a `u32` covers [0, 65536); in an `i32`, (-32768, 32768).

/// 1.0 in Q16.
pub const ONE: u32 = 1 << 16;
/// Q16 shift.
pub const SHIFT: u32 = 16;
/// Nanoseconds per second.
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// `x × f` where `f` is Q16; saturates.
#[inline]
pub const fn mul_q16(x: u64, f: u32) -> u64 {
    x.saturating_mul(f as u64) >> SHIFT
}

/// `a × b / c` without overflow where it can be avoided; saturates at
/// `u64::MAX` otherwise; `c == 0` gives `u64::MAX` (an "infinite" ratio the
/// callers clamp).
#[inline]
pub const fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    if c == 0 {
        return u64::MAX;
    }
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => mul_div_wide(a, b, c),
    }
}

/// The rare path of [`mul_div`]: the product needs 128 bits, and the kernel
/// has no 128-bit division, so drop low bits of product and divisor together
/// until the product fits 64 bits (relative error < 2^-(bits left in c)).
#[cold]
#[inline(never)]
const fn mul_div_wide(a: u64, b: u64, c: u64) -> u64 {
    let mut prod = (a as u128) * (b as u128);
    let mut c = c;
    while prod > u64::MAX as u128 {
        prod >>= 1;
        c >>= 1;
        if c == 0 {
            return u64::MAX;
        }
    }
    (prod as u64) / c
}

/// `num / den` as a Q16 fraction, saturating at `u32::MAX` (≈ 65536.0).
#[inline]
pub const fn ratio_q16(num: u64, den: u64) -> u32 {
    let r = mul_div(num, ONE as u64, den);
    if r > u32::MAX as u64 {
        u32::MAX
    } else {
        r as u32
    }
}

/// Clamp a `u64` into `u32`.
#[inline]
pub const fn sat_u32(x: u64) -> u32 {
    if x > u32::MAX as u64 {
        u32::MAX
    } else {
        x as u32
    }
}

/// Bandwidth-delay product in bytes for a rate in bytes/s and a time in ns.
#[inline]
pub const fn bdp_bytes(rate_bytes_per_sec: u64, rtt_ns: u32) -> u64 {
    mul_div(rate_bytes_per_sec, rtt_ns as u64, NSEC_PER_SEC)
}

/// EWMA step on Q16 values: `avg + g·(sample − avg)` with gain `g` in Q16
/// (`g ≤ ONE`). Exact for g = ONE (returns `sample`).
#[inline]
pub const fn ewma_q16(avg: u32, sample: u32, g: u32) -> u32 {
    let g = (if g > ONE { ONE } else { g }) as u64;
    let v = ((avg as u64) * (ONE as u64 - g) + (sample as u64) * g) >> SHIFT;
    v as u32
}

/// `a·b − c·d` computed exactly in 128 bits. Used once per estimator batch by
/// OSCAR: a 64×64→128 multiplication is native on 64-bit targets; only 128-bit
/// *division* is avoided (see [`div_wide_q16`]).
#[inline]
pub fn wide_mul_sub(a: i64, b: i64, c: i64, d: i64) -> i128 {
    (a as i128) * (b as i128) - (c as i128) * (d as i128)
}

/// `num / den` for 128-bit operands, as Q16, using only shifts and one 64-bit
/// division. Saturates to ±`i32::MAX` (≈ ±32768.0); `den == 0` gives `None`.
pub fn div_wide_q16(num: i128, den: i128) -> Option<i32> {
    if den == 0 {
        return None;
    }
    let neg = (num < 0) != (den < 0);
    let mut n = num.unsigned_abs();
    let mut d = den.unsigned_abs();
    // Keep the numerator, pre-shifted by 16, and the denominator within 63
    // bits by dropping the same low bits from both (the ratio is unchanged
    // up to rounding of the dropped bits).
    while n > (u64::MAX >> 17) as u128 || d > (u64::MAX >> 1) as u128 {
        n >>= 1;
        d >>= 1;
    }
    if d == 0 {
        return Some(if neg { -i32::MAX } else { i32::MAX });
    }
    let q = ((n as u64) << SHIFT) / (d as u64);
    let q = if q > i32::MAX as u64 { i32::MAX } else { q as i32 };
    Some(if neg { -q } else { q })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_div_is_exact_in_range_and_saturates_out_of_it() {
        assert_eq!(mul_div(10, 20, 3), 66);
        assert_eq!(mul_div(u64::MAX, 2, 4), u64::MAX / 2);
        assert_eq!(mul_div(u64::MAX, u64::MAX, 1), u64::MAX);
        // 6.3e22 / 1e18 needs 128 bits in the middle.
        let v = mul_div(7_864_320_000_000_000, 8_000_000, 1_000_000_000_000_000_000);
        assert!((62_913..=62_915).contains(&v), "{v}");
        assert_eq!(mul_div(1, 1, 0), u64::MAX);
    }

    #[test]
    fn q16_helpers() {
        assert_eq!(mul_q16(1000, ONE / 2), 500);
        assert_eq!(ratio_q16(1, 2), ONE / 2);
        assert_eq!(ewma_q16(0, ONE, ONE / 4), ONE / 4);
        assert_eq!(ewma_q16(ONE, 0, ONE), 0);
        assert_eq!(bdp_bytes(125_000_000, 200_000), 25_000);
    }

    #[test]
    fn wide_division() {
        assert_eq!(div_wide_q16(3, 4), Some(3 * ONE as i32 / 4));
        assert_eq!(div_wide_q16(-3, 4), Some(-(3 * ONE as i32 / 4)));
        let big = (1i128 << 100) * 3;
        assert_eq!(div_wide_q16(big, 1i128 << 101), Some(3 * ONE as i32 / 2));
        assert_eq!(div_wide_q16(1, 0), None);
        assert_eq!(div_wide_q16(1i128 << 90, 1), Some(i32::MAX));
    }
}
