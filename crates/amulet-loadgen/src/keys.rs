//! YCSB key names.

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-end bytes of `val`,
/// then `Math.abs` of the signed result (so the answer fits in 63 bits, except
/// for the one input whose hash is `i64::MIN`, kept as Java keeps it).
pub fn fnvhash64(val: u64) -> u64 {
    let mut val = val;
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    (hash as i64).wrapping_abs() as u64
}

/// YCSB's `CoreWorkload.buildKeyName` with hashed (not ordered) inserts and
/// no zero padding: `user` followed by the decimal hash of the key number.
pub fn key_name(keynum: u64) -> String {
    format!("user{}", fnvhash64(keynum))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn fnv_matches_reference_values() {
        // FNV-1a 64 of eight zero bytes, computed independently.
        let mut h: u64 = 0xcbf29ce484222325;
        for _ in 0..8 {
            h = h.wrapping_mul(0x100000001b3);
        }
        assert_eq!(fnvhash64(0), (h as i64).wrapping_abs() as u64);
        assert!(fnvhash64(12345) < 1 << 63);
    }

    #[test]
    fn key_names_look_like_ycsb_and_are_distinct() {
        let k = key_name(0);
        assert!(k.starts_with("user"));
        assert!(k[4..].chars().all(|c| c.is_ascii_digit()));
        let set: HashSet<String> = (0..100_000).map(key_name).collect();
        assert_eq!(set.len(), 100_000);
    }
}
