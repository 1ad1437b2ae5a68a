//! Deterministic random numbers for the simulations, seeded.

/// SplitMix64's output function: a good 64-bit mixer (Steele et al. 2014).
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform f64 in [0, 1) from the 53 high bits.
pub(crate) fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1_u64 << 53) as f64)
}

/// SplitMix64: tiny, seedable, and good enough for latencies; owned here so
/// a seed means the same stream forever, whatever a `rand` upgrade does.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    pub fn next_unit(&mut self) -> f64 {
        unit(self.next_u64())
    }

    /// Exponential with the given mean, by inversion.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.next_unit()).ln()
    }
}
