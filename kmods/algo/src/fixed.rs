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

const_unless_bpf! {
    /// `a × b`, saturating at `u64::MAX`. Native code uses the CPU's overflow
    /// flag (`u64::saturating_mul`); BPF has none — LLVM would expand
    /// `umul.with.overflow.i64` into a 128-bit libcall (`__multi3`) that BPF
    /// programs cannot call — so the BPF build uses [`mul_sat_body`].
    #[inline]
    pub fn mul_sat(a: u64, b: u64) -> u64 {
        #[cfg(xdcc_bpf)]
        #[allow(unsafe_code)]
        // SAFETY: a pure function of its two scalar arguments (see `bpf_global`).
        return unsafe { bpf_global::xdcc_mul_sat(a, b) };
        #[cfg(not(xdcc_bpf))]
        a.saturating_mul(b)
    }
}

/// [`mul_sat`] without an overflow flag: the bit-length test decides overflow
/// exactly except when the lengths add up to 65, which one halved product
/// settles. Tested equal to `u64::saturating_mul`.
#[inline]
pub const fn mul_sat_body(a: u64, b: u64) -> u64 {
    if (a | b) >> 32 == 0 {
        return a.wrapping_mul(b); // both < 2^32: the product fits
    }
    let bits = bit_len(a) + bit_len(b);
    if bits <= 64 {
        a.wrapping_mul(b) // a·b < 2^bits
    } else if bits >= 66 {
        u64::MAX // a·b ≥ 2^(bits − 2) ≥ 2^64
    } else {
        // 2^63 ≤ a·b < 2^65: a·b = 2·(a/2)·b + (a mod 2)·b.
        let half = (a >> 1).wrapping_mul(b); // < 2^64: bit_len(a/2) + bit_len(b) = 64
        if half >> 63 != 0 {
            return u64::MAX;
        }
        (half << 1).saturating_add((a & 1).wrapping_mul(b))
    }
}

/// `x >> s`, 0 when `s ≥ 64` (a plain shift by ≥ 64 panics).
#[inline]
pub const fn shr(x: u64, s: u32) -> u64 {
    if s >= 64 {
        0
    } else {
        x >> s
    }
}

/// Number of significant bits of `x` (0 for 0). Loop-free.
#[inline]
pub const fn bit_len(x: u64) -> u32 {
    64 - x.leading_zeros()
}

const_unless_bpf! {
    /// `x × f` where `f` is Q16; saturates.
    #[inline]
    pub fn mul_q16(x: u64, f: u32) -> u64 {
        mul_sat(x, f as u64) >> SHIFT
    }
}

const_unless_bpf! {
    /// `a × b / c`: exact when `a × b` fits 64 bits, otherwise within a relative
    /// error of 2^-(bits left in `c` after the shift below); saturates at
    /// `u64::MAX`; `c == 0` gives `u64::MAX` (an "infinite" ratio the callers
    /// clamp). No 128-bit arithmetic and no loop (the BPF verifier walks every
    /// loop iteration).
    #[inline]
    pub fn mul_div(a: u64, b: u64, c: u64) -> u64 {
        #[cfg(xdcc_bpf)]
        #[allow(unsafe_code)]
        // SAFETY: a pure function of its three scalar arguments (see `bpf_global`).
        return unsafe { bpf_global::xdcc_mul_div(a, b, c) };
        #[cfg(not(xdcc_bpf))]
        match a.checked_mul(b) {
            Some(_) if c == 0 => u64::MAX,
            Some(prod) => prod / c,
            None => mul_div_wide(a, b, c),
        }
    }
}

/// [`mul_div`] without an overflow flag (the BPF build): the product fits
/// when the operands' bit lengths add up to at most 64; the rest, including
/// the products that would have fit with 65 bits, takes the exact wide path.
/// Tested equal to the native version.
#[inline]
pub const fn mul_div_body(a: u64, b: u64, c: u64) -> u64 {
    if c == 0 {
        return u64::MAX;
    }
    if (a | b) >> 32 == 0 || bit_len(a) + bit_len(b) <= 64 {
        return a.wrapping_mul(b) / c; // the product fits
    }
    mul_div_wide(a, b, c)
}

/// The rare path of [`mul_div`]: the product may need up to 128 bits, and
/// neither the kernel nor BPF has 128-bit division, so drop the same low bits
/// from the exact product and the divisor until the product fits 64 bits
/// (relative error < 2^-(bits left in `c`)).
#[cfg_attr(not(xdcc_bpf), inline(never))]
#[cfg_attr(xdcc_bpf, inline(always))]
const fn mul_div_wide(a: u64, b: u64, c: u64) -> u64 {
    let prod = Wide::mul_u64(a, b);
    let s = prod.bit_len().saturating_sub(64);
    let c = shr(c, s);
    if c == 0 {
        return u64::MAX;
    }
    prod.shr_to_u64(s) / c
}

const_unless_bpf! {
    /// `num / den` as a Q16 fraction, saturating at `u32::MAX` (≈ 65536.0).
    #[inline]
    pub fn ratio_q16(num: u64, den: u64) -> u32 {
        let r = mul_div(num, ONE as u64, den);
        if r > u32::MAX as u64 {
            u32::MAX
        } else {
            r as u32
        }
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

const_unless_bpf! {
    /// Bandwidth-delay product in bytes for a rate in bytes/s and a time in ns.
    #[inline]
    pub fn bdp_bytes(rate_bytes_per_sec: u64, rtt_ns: u32) -> u64 {
        mul_div(rate_bytes_per_sec, rtt_ns as u64, NSEC_PER_SEC)
    }
}

/// EWMA step on Q16 values: `avg + g·(sample − avg)` with gain `g` in Q16
/// (`g ≤ ONE`). Exact for g = ONE (returns `sample`).
#[inline]
pub const fn ewma_q16(avg: u32, sample: u32, g: u32) -> u32 {
    let g = (if g > ONE { ONE } else { g }) as u64;
    let v = ((avg as u64) * (ONE as u64 - g) + (sample as u64) * g) >> SHIFT;
    v as u32
}

/// A signed 128-bit integer as sign and magnitude in two 64-bit words: the
/// BPF backend has no 128-bit multiply, shift or division (they become
/// libcalls a BPF program cannot make), so OSCAR's least-squares sums are
/// combined in this form with 32-bit limbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wide {
    pub neg: bool,
    pub hi: u64,
    pub lo: u64,
}

impl Wide {
    pub const ZERO: Wide = Wide { neg: false, hi: 0, lo: 0 };

    /// The exact product of two unsigned 64-bit values.
    #[inline]
    pub const fn mul_u64(a: u64, b: u64) -> Wide {
        let (hi, lo) = mul_wide_u64(a, b);
        Wide { neg: false, hi, lo }
    }

    /// The exact product of two signed 64-bit values.
    #[inline]
    pub const fn mul(a: i64, b: i64) -> Wide {
        let (hi, lo) = mul_wide_u64(a.unsigned_abs(), b.unsigned_abs());
        Wide { neg: (a < 0) != (b < 0) && (hi | lo) != 0, hi, lo }
    }

    /// `self − other`, exact (callers stay far from ±2^128).
    #[inline]
    pub const fn sub(self, other: Wide) -> Wide {
        let neg_other = Wide { neg: !other.neg && (other.hi | other.lo) != 0, hi: other.hi, lo: other.lo };
        self.add(neg_other)
    }

    /// `self + other`, exact.
    #[inline]
    pub const fn add(self, other: Wide) -> Wide {
        if self.neg == other.neg {
            let lo = self.lo.wrapping_add(other.lo);
            let carry = (lo < self.lo) as u64;
            let hi = self.hi.wrapping_add(other.hi).wrapping_add(carry);
            return Wide { neg: self.neg, hi, lo };
        }
        // Different signs: subtract the smaller magnitude from the larger.
        let self_larger = self.hi > other.hi || (self.hi == other.hi && self.lo >= other.lo);
        let (big, small) = if self_larger { (self, other) } else { (other, self) };
        let lo = big.lo.wrapping_sub(small.lo);
        let borrow = (big.lo < small.lo) as u64;
        let hi = big.hi.wrapping_sub(small.hi).wrapping_sub(borrow);
        Wide { neg: big.neg && (hi | lo) != 0, hi, lo }
    }

    /// Significant bits of the magnitude.
    #[inline]
    const fn bit_len(&self) -> u32 {
        if self.hi != 0 {
            64 + bit_len(self.hi)
        } else {
            bit_len(self.lo)
        }
    }

    /// The magnitude shifted right by `s` bits (s < 128), as 64 bits (the
    /// callers shift far enough for it to fit).
    #[inline]
    const fn shr_to_u64(&self, s: u32) -> u64 {
        if s == 0 {
            self.lo
        } else if s < 64 {
            (self.lo >> s) | (self.hi << (64 - s))
        } else {
            shr(self.hi, s - 64)
        }
    }
}

/// 64×64 → 128-bit unsigned product as (high, low) words, on 32-bit limbs:
/// every partial product and sum below provably fits 64 bits.
#[inline]
pub const fn mul_wide_u64(a: u64, b: u64) -> (u64, u64) {
    // 64-bit CPUs multiply 64 × 64 → 128 bits in one instruction (no libcall);
    // BPF cannot, so its build uses the four 32-bit partial products below.
    #[cfg(not(xdcc_bpf))]
    {
        let p = (a as u128) * (b as u128);
        return ((p >> 64) as u64, p as u64);
    }
    #[cfg(xdcc_bpf)]
    mul_wide_u64_parts(a, b)
}

/// [`mul_wide_u64`] from 32-bit partial products (the BPF build's; tested
/// equal to the native product).
#[inline]
pub const fn mul_wide_u64_parts(a: u64, b: u64) -> (u64, u64) {
    const M: u64 = 0xffff_ffff;
    let (a1, a0) = (a >> 32, a & M);
    let (b1, b0) = (b >> 32, b & M);
    let p00 = a0.wrapping_mul(b0);
    let p01 = a0.wrapping_mul(b1);
    let p10 = a1.wrapping_mul(b0);
    let p11 = a1.wrapping_mul(b1);
    let mid = (p00 >> 32).wrapping_add(p01 & M).wrapping_add(p10 & M); // < 3·2^32
    let lo = (mid << 32) | (p00 & M);
    let hi = p11.wrapping_add(p01 >> 32).wrapping_add(p10 >> 32).wrapping_add(mid >> 32);
    (hi, lo)
}

/// `a·b − c·d` computed exactly. Used once per estimator batch by OSCAR.
#[inline]
pub const fn wide_mul_sub(a: i64, b: i64, c: i64, d: i64) -> Wide {
    Wide::mul(a, b).sub(Wide::mul(c, d))
}

/// `num / den` as Q16, using shifts and one 64-bit unsigned division.
/// Saturates to ±`i32::MAX` (≈ ±32768.0); `den == 0` gives `None`.
pub const fn div_wide_q16(num: Wide, den: Wide) -> Option<i32> {
    if (den.hi | den.lo) == 0 {
        return None;
    }
    let neg = num.neg != den.neg;
    // Keep the numerator, pre-shifted by 16, and the denominator within 63
    // bits by dropping the same low bits from both (the ratio is unchanged
    // up to rounding of the dropped bits).
    let sn = num.bit_len().saturating_sub(47);
    let sd = den.bit_len().saturating_sub(63);
    let s = if sn > sd { sn } else { sd };
    let n = num.shr_to_u64(s);
    let d = den.shr_to_u64(s);
    if d == 0 {
        return Some(if neg { -i32::MAX } else { i32::MAX });
    }
    let q = (n << SHIFT) / d;
    let q = if q > i32::MAX as u64 { i32::MAX } else { q as i32 };
    Some(if neg { -q } else { q })
}

/// The least-squares slope `(n·Σxy − Σx·Σy) / (n·Σx² − (Σx)²)` as Q16,
/// computed exactly in [`Wide`] and saturated to ±`i32::MAX`; `None` when
/// the x values have no spread (zero denominator). OSCAR's eq. 7.
#[inline]
pub fn slope_q16(n: i64, sum_x: i64, sum_y: i64, sum_xx: i64, sum_xy: i64) -> Option<i32> {
    #[cfg(xdcc_bpf)]
    {
        // SAFETY: a pure function of its five scalar arguments (see `bpf_global`).
        #[allow(unsafe_code)]
        let q = unsafe { bpf_global::xdcc_slope_q16(n, sum_x, sum_y, sum_xx, sum_xy) };
        if q == i64::MIN {
            None
        } else {
            Some(q as i32)
        }
    }
    #[cfg(not(xdcc_bpf))]
    slope_q16_body(n, sum_x, sum_y, sum_xx, sum_xy)
}

/// The body of [`slope_q16`].
#[inline]
pub const fn slope_q16_body(n: i64, sum_x: i64, sum_y: i64, sum_xx: i64, sum_xy: i64) -> Option<i32> {
    let num = wide_mul_sub(n, sum_xy, sum_x, sum_y);
    let den = wide_mul_sub(n, sum_xx, sum_x, sum_x);
    div_wide_q16(num, den)
}

/// BPF backend only. The verifier walks every path through a program, and
/// the branches of the helpers above, inlined at each of their call sites,
/// multiply into more paths than it accepts (UnoCC and OSCAR's ACK handler
/// passed 1M instructions). So in the BPF build they are *global* BPF
/// functions, which the verifier checks once on their own: `kmods/bpf/shim.c`
/// defines them (C, so they carry BTF) and calls back into the `*_body`
/// functions here, exported by `kmods/bpf/entry.rs`.
#[cfg(xdcc_bpf)]
mod bpf_global {
    extern "C" {
        pub fn xdcc_mul_sat(a: u64, b: u64) -> u64;
        pub fn xdcc_mul_div(a: u64, b: u64, c: u64) -> u64;
        /// `i64::MIN` for `None`.
        pub fn xdcc_slope_q16(n: i64, sum_x: i64, sum_y: i64, sum_xx: i64, sum_xy: i64) -> i64;
    }
}

/// Signed `a / b` truncating toward zero, like `/` on `i64`, but with an
/// unsigned division (signed 64-bit division needs BPF CPU v4, kernel ≥ 6.6).
#[inline]
pub const fn div_i64(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let q = a.unsigned_abs() / b.unsigned_abs();
    let q = if q > i64::MAX as u64 { i64::MAX } else { q as i64 };
    if (a < 0) != (b < 0) {
        -q
    } else {
        q
    }
}

const_unless_bpf! {
    /// `a × b` on `i64`, saturating: `i64::saturating_mul` in native code,
    /// [`mul_sat_i64_body`] (no overflow intrinsic) in the BPF build.
    #[inline]
    pub fn mul_sat_i64(a: i64, b: i64) -> i64 {
        #[cfg(xdcc_bpf)]
        return mul_sat_i64_body(a, b);
        #[cfg(not(xdcc_bpf))]
        a.saturating_mul(b)
    }
}

const_unless_bpf! {
    /// [`mul_sat_i64`] from [`mul_sat`] and the signs. Tested equal to
    /// `i64::saturating_mul`.
    #[inline]
    pub fn mul_sat_i64_body(a: i64, b: i64) -> i64 {
        let m = mul_sat(a.unsigned_abs(), b.unsigned_abs());
        let neg = (a < 0) != (b < 0);
        if neg {
            if m >= 1 << 63 {
                i64::MIN
            } else {
                -(m as i64)
            }
        } else if m > i64::MAX as u64 {
            i64::MAX
        } else {
            m as i64
        }
    }
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

    fn w(v: i128) -> Wide {
        let m = v.unsigned_abs();
        Wide { neg: v < 0, hi: (m >> 64) as u64, lo: m as u64 }
    }

    #[test]
    fn wide_division() {
        assert_eq!(div_wide_q16(w(3), w(4)), Some(3 * ONE as i32 / 4));
        assert_eq!(div_wide_q16(w(-3), w(4)), Some(-(3 * ONE as i32 / 4)));
        let big = (1i128 << 100) * 3;
        assert_eq!(div_wide_q16(w(big), w(1i128 << 101)), Some(3 * ONE as i32 / 2));
        assert_eq!(div_wide_q16(w(1), w(0)), None);
        assert_eq!(div_wide_q16(w(1i128 << 90), w(1)), Some(i32::MAX));
    }

    /// The limb arithmetic against Rust's native 128-bit integers (host only).
    #[test]
    fn wide_arithmetic_matches_i128() {
        let vals: [i64; 12] = [0, 1, -1, 7, -13, 1 << 31, -(1 << 33), i64::MAX, i64::MIN + 1, 0x1234_5678_9abc, -0x7fff_ffff_ffff, 3_000_000_007];
        for &a in &vals {
            for &b in &vals {
                let p = (a as i128) * (b as i128);
                assert_eq!(Wide::mul(a, b), w(p), "{a}·{b}");
                for &c in &vals[..6] {
                    for &d in &vals[6..] {
                        let e = p - (c as i128) * (d as i128);
                        assert_eq!(wide_mul_sub(a, b, c, d), w(e), "{a}·{b} − {c}·{d}");
                    }
                }
                if b != 0 {
                    assert_eq!(div_i64(a, b), a / b, "{a}/{b}");
                }
                let sat = (a as i128 * b as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                assert_eq!(mul_sat_i64_body(a, b), sat, "{a}·{b} saturating");
            }
        }
    }

    #[test]
    fn mul_sat_matches_saturating_mul() {
        let vals: [u64; 14] = [0, 1, 2, 3, 0xffff_ffff, 1 << 32, (1 << 32) + 1, 1 << 63, (1 << 63) - 1, u64::MAX, 3 << 62, 0x1_0000_0001, 6_000_000_000, 5_000_000_000_000];
        for &a in &vals {
            for &b in &vals {
                assert_eq!(mul_sat_body(a, b), a.saturating_mul(b), "{a}·{b}");
                for c in [0, 1, 3, 1_000_000_000, 1 << 40, u64::MAX] {
                    // The BPF build's body and the native version agree.
                    assert_eq!(mul_div_body(a, b, c), mul_div(a, b, c), "{a}·{b}/{c}");
                }
                assert_eq!(mul_wide_u64_parts(a, b), (((a as u128 * b as u128) >> 64) as u64, a.wrapping_mul(b)));
            }
        }
    }

    #[test]
    fn mul_div_wide_path_is_close() {
        for &(a, b, c) in &[(u64::MAX / 3, 1000u64, 7u64), (1 << 40, 1 << 40, 1 << 30), (123_456_789_012, 987_654_321_098, 1_000_000_007)] {
            let exact = ((a as u128 * b as u128) / c as u128).min(u64::MAX as u128) as u64;
            let got = mul_div(a, b, c);
            let err = exact.abs_diff(got);
            assert!(err <= exact >> 14, "{a}·{b}/{c}: {got} vs {exact}");
        }
    }
}
