//! The Internet checksum (RFC 1071).

/// One's-complement sum of 16-bit big-endian words, not yet folded or inverted
/// (any value whose [`fold`] is the sum; `acc` is such a value to add to).
///
/// Eight bytes at a time into a 64-bit accumulator with end-around carry (RFC 1071
/// §2(B): the sum may be computed in any word size and folded; 2^16 ≡ 1 modulo
/// 0xffff), then folded to 16 bits (the result is at most 0xffff).
pub fn sum(data: &[u8], acc: u32) -> u32 {
    let add = |w: u64, v: u64| {
        let (s, c) = w.overflowing_add(v);
        s + c as u64
    };
    let mut wide = acc as u64;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        wide = add(wide, u64::from_be_bytes(c.try_into().expect("8 bytes")));
    }
    let mut pairs = chunks.remainder().chunks_exact(2);
    for p in &mut pairs {
        wide = add(wide, u16::from_be_bytes([p[0], p[1]]) as u64);
    }
    if let [b] = pairs.remainder() {
        wide = add(wide, (*b as u64) << 8);
    }
    // Folded to 16 bits, so that callers may add small terms (a pseudo-header's
    // protocol and length) without overflowing the u32.
    while wide >> 16 != 0 {
        wide = (wide & 0xffff) + (wide >> 16);
    }
    wide as u32
}

pub fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Checksum of `data` (inverted folded sum).
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(data, 0))
}

/// Pseudo-header sum for TCP/UDP: IPv4 (RFC 793) or IPv6 (RFC 8200 §8.1); `len`
/// is the transport header and data length.
pub fn pseudo_header(src: super::IpAddress, dst: super::IpAddress, proto: u8, len: u32) -> u32 {
    let mut acc = sum(src.bytes(), 0);
    acc = sum(dst.bytes(), acc);
    acc + proto as u32 + (len >> 16) + (len & 0xffff)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc1071_example() {
        // Example from RFC 1071 section 3: sum of 0001 f203 f4f5 f6f7 = ddf2 (folded).
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(super::fold(super::sum(&d, 0)), 0xddf2);
    }

    /// A pseudo-header of all-ones IPv6 addresses once overflowed the u32 (the
    /// packet fuzzer's find): the sum must come back folded.
    #[test]
    fn pseudo_header_of_large_addresses_does_not_overflow() {
        let a = super::super::IpAddress::V6([0xff; 16]);
        let acc = super::pseudo_header(a, a, 6, u32::MAX);
        // Every 0xffff word is zero in ones' complement: what is left is the protocol.
        assert_eq!(super::fold(acc), 6);
    }

    /// The wide sum folds to what word-by-word summing gives, for every length and
    /// starting accumulator.
    #[test]
    fn wide_sum_matches_word_by_word() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for len in 0..300usize {
            let d: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x.is_multiple_of(5) {
                        0xff
                    } else {
                        x as u8
                    }
                })
                .collect();
            for acc in [0u32, 1, 0xffff, 0x1_fffe, 0xffff_0000, u32::MAX] {
                let mut slow = acc as u64;
                for (i, b) in d.iter().enumerate() {
                    slow += if i % 2 == 0 { (*b as u64) << 8 } else { *b as u64 };
                }
                while slow >> 16 != 0 {
                    slow = (slow & 0xffff) + (slow >> 16);
                }
                let wide = super::sum(&d, acc);
                assert!(wide <= 0xffff, "len {len} acc {acc:#x}: {wide:#x} not folded");
                assert_eq!(super::fold(wide) as u64, slow, "len {len} acc {acc:#x}");
            }
        }
    }
}
