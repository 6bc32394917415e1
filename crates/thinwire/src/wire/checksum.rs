//! The Internet checksum (RFC 1071).

/// One's-complement sum of 16-bit big-endian words, not yet folded or inverted.
pub fn sum(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
        if acc > 0xffff_0000 {
            acc = fold(acc) as u32;
        }
    }
    if let [b] = chunks.remainder() {
        acc += (*b as u32) << 8;
    }
    acc
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
}
