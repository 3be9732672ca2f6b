//! Deterministic pseudo-noise for synthetic series: the same numbers on every run and machine,
//! so a test that passes once passes always, without a random-number crate.

/// Multiplicative noise, uniform within +-`amplitude_pct` percent (SplitMix64 underneath).
pub struct Noise {
    state: u64,
    amplitude: f64,
}

impl Noise {
    pub fn new(seed: u64, amplitude_pct: f64) -> Self {
        Noise { state: seed, amplitude: amplitude_pct / 100.0 }
    }

    /// A factor in [1 - amplitude, 1 + amplitude].
    pub fn factor(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits as a fraction in [0, 1): exactly representable in an f64.
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + self.amplitude * (2.0 * unit - 1.0)
    }
}
