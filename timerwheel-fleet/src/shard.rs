//! A timer's shard: a hash of its key, so that the timers of one key (a session) live on
//! one shard and move together.

use crate::Key;

/// The number of shards a schema is created with unless told otherwise.
pub const DEFAULT_SHARDS: i32 = 256;

/// The shard of `key` among `shards` (> 0): the SplitMix64 finaliser of the key, modulo
/// the count. Fixed forever: the rows of a stored timer carry the result, and a change of
/// the count is a migration that recomputes it.
pub fn shard_of(key: Key, shards: i32) -> i32 {
    assert!(shards > 0, "a shard count is positive");
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % shards as u64) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_keys_spread_over_every_shard() {
        let mut counts = vec![0u32; DEFAULT_SHARDS as usize];
        for key in 0..256_000u64 {
            counts[shard_of(key, DEFAULT_SHARDS) as usize] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min > 800 && *max < 1200, "uneven: {min}..{max}");
    }

    #[test]
    fn the_hash_is_stable() {
        // Stored rows carry it: a change here is a schema migration.
        assert_eq!(shard_of(42, 256), 149);
        assert_eq!(shard_of(u64::MAX, 1), 0);
    }
}
