//! Where a ranked block lands: a keyed affine bijection of the region's indexes, so hot ranks
//! are spread over the region, every block is reachable and no two ranks share a block.

use super::select_below;
/// A keyed bijection of `0..n`: an affine permutation of the next power of two, walked until
/// it lands below n (fewer than two steps on average); or, for the laws that are not ranked,
/// the identity.
///
/// Rank r lands on (r + key) x m mod 2^bits, m being 2^bits over the golden ratio made odd:
/// successive ranks land about 0.618 of the region apart, so the hottest ones spread evenly
/// over it (the three-distance theorem), and any 2^j successive ranks cover every residue
/// modulo 2^j once, so the hot blocks are shared evenly by stripes, channels or any other
/// power-of-two layout of the region. Being affine, rank `first + r` lands `r x m` past where
/// `first` lands: a cell keeps its first rank's landing, and a draw adds one product to it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scatter {
    n: u64,
    pub(super) mask: u64,
    key: u64,
    pub(super) multiplier: u64,
    /// n is not a power of two: a landing at or past n walks on.
    walks: bool,
}

impl Scatter {
    pub(super) fn new(n: u64, key: u64) -> Scatter {
        let bits = (64 - (n.max(2) - 1).leading_zeros()).max(1);
        let mask = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
        let multiplier = (0x9e37_79b9_7f4a_7c15_u64 >> (64 - bits)) | 1;
        Scatter { n, mask, key: key & mask, multiplier, walks: mask >= n }
    }

    /// Every index lands where it is.
    pub(super) fn identity() -> Scatter {
        Scatter { n: u64::MAX, mask: u64::MAX, key: 0, multiplier: 1, walks: false }
    }

    /// One step of the permutation of `0..=mask`.
    #[inline(always)]
    pub(super) fn permute(&self, x: u64) -> u64 {
        x.wrapping_add(self.key).wrapping_mul(self.multiplier) & self.mask
    }

    /// Where rank `first + r` lands, `landing` being where `first` lands before any walk.
    #[inline(always)]
    pub(super) fn onward(&self, landing: u64, r: u64) -> u64 {
        let x = landing.wrapping_add(r.wrapping_mul(self.multiplier)) & self.mask;
        if self.walks {
            self.walk(x)
        } else {
            x
        }
    }

    /// From a first landing to the first step below n. The walk's first three steps are
    /// selects: whether a step lands below n is a coin toss (as likely as n / (mask + 1), at
    /// least 1/2), so a loop would jump on it; this way only the walks of more than three steps
    /// (at most 1 in 8) do.
    #[inline(always)]
    pub(super) fn walk(&self, first: u64) -> u64 {
        let second = self.permute(first);
        let third = self.permute(second);
        let mut x = select_below(first, self.n, first, select_below(second, self.n, second, third));
        while x >= self.n {
            x = self.permute(x);
        }
        x
    }
}
