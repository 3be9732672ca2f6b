//! The order a phase works its files in: by index (the tree's order, as most tools do), or
//! random, as bonnie++'s random create, stat and delete: each phase walks a permutation of the
//! files of its own, so that neither the directory's last block nor the inode just made is
//! still hot. The permutation is computed, not stored (memory stays constant in the number of
//! files): a four-round Feistel network over the smallest even power of two that holds the
//! files, walked again past the end until it lands inside (cycle walking), which keeps it a
//! bijection on 0..files.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Index order: file 0, 1, 2, ... of each tree (of each thread's share of a shared tree).
    #[default]
    Sequential,
    /// A pseudo-random permutation per phase, from the seed.
    Random,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::Sequential => "sequential",
            Order::Random => "random",
        }
    }
}

impl FromStr for Order {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "sequential" | "seq" | "index" => Ok(Order::Sequential),
            "random" | "rand" => Ok(Order::Random),
            other => Err(format!("'{other}' is not an order; choose sequential or random")),
        }
    }
}

/// The file a phase works at each position: the position itself, or a permutation of 0..files.
#[derive(Debug, Clone)]
pub(crate) struct Walk {
    files: u64,
    /// Bits in each half of the Feistel domain; `None`: index order.
    half_bits: Option<u32>,
    keys: [u64; ROUNDS],
}

const ROUNDS: usize = 4;

impl Walk {
    /// The walk of a tree of `files` files under `order`, for the phase `salt` names.
    pub(crate) fn new(order: Order, files: u64, seed: u64, salt: u64) -> Walk {
        let half_bits = match order {
            Order::Sequential => None,
            // The smallest 2^(2h) >= files, at least 2^2.
            Order::Random => Some(((64 - files.saturating_sub(1).leading_zeros()).div_ceil(2)).max(1)),
        };
        let mut keys = [0u64; ROUNDS];
        let mut state = seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for key in &mut keys {
            state = crate::sizes::file_hash(state, 0, 0x5bd1_e995);
            *key = state;
        }
        Walk { files, half_bits, keys }
    }

    /// The file at `position` (0..files).
    #[inline]
    pub(crate) fn at(&self, position: u64) -> u64 {
        let Some(bits) = self.half_bits else { return position };
        let mut x = position;
        loop {
            x = self.feistel(x, bits);
            if x < self.files {
                return x;
            }
        }
    }

    fn feistel(&self, x: u64, bits: u32) -> u64 {
        let mask = (1u64 << bits) - 1;
        let (mut left, mut right) = (x >> bits, x & mask);
        for key in self.keys {
            let mixed = crate::sizes::file_hash(key, 0, right) & mask;
            (left, right) = (right, left ^ mixed);
        }
        (left << bits) | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_walk_visits_every_file_once_out_of_order() {
        for files in [1u64, 2, 3, 17, 1000, 4097] {
            let walk = Walk::new(Order::Random, files, 7, 3);
            let mut seen: Vec<u64> = (0..files).map(|p| walk.at(p)).collect();
            let in_place = seen.iter().enumerate().filter(|&(p, &f)| p as u64 == f).count();
            seen.sort_unstable();
            assert_eq!(seen, (0..files).collect::<Vec<_>>(), "{files}: a permutation");
            if files >= 1000 {
                assert!(in_place < files as usize / 100, "{files}: {in_place} files in place");
            }
        }
    }

    #[test]
    fn each_phase_walks_its_own_order_and_sequential_is_the_index() {
        let a = Walk::new(Order::Random, 1000, 7, 1);
        let b = Walk::new(Order::Random, 1000, 7, 2);
        let differ = (0..1000).filter(|&p| a.at(p) != b.at(p)).count();
        assert!(differ > 900, "{differ}");
        let again = Walk::new(Order::Random, 1000, 7, 1);
        assert!((0..1000).all(|p| a.at(p) == again.at(p)), "the same seed and phase, the same walk");
        let index = Walk::new(Order::Sequential, 1000, 7, 1);
        assert!((0..1000).all(|p| index.at(p) == p));
    }

    #[test]
    fn orders_parse_by_name() {
        assert_eq!("random".parse::<Order>(), Ok(Order::Random));
        assert_eq!(" Sequential ".parse::<Order>(), Ok(Order::Sequential));
        assert!("shuffled".parse::<Order>().unwrap_err().contains("choose sequential or random"));
    }
}
