//! Parsers of outside input never panic: random bytes and mutated valid inputs.
use thinwire::config::parse_scenario;
use thinwire::rng::Rng;
use thinwire::time::Instant;
use thinwire::wire::{Packet, TcpFlags, TcpRepr, L4};

#[test]
fn packet_parse_survives_garbage_and_mutations() {
    let mut rng = Rng::stream(9, 0, "fuzz.packet");
    let mut t = TcpRepr {
        src_port: 1,
        dst_port: 2,
        seq: 3,
        ack: 4,
        flags: TcpFlags(TcpFlags::ACK),
        window: 5,
        timestamps: Some((6, 7)),
        ..Default::default()
    };
    t.sack[0] = (1, 2);
    t.sack_len = 1;
    let good = Packet::new([1, 2, 3, 4], [5, 6, 7, 8], 1, L4::Tcp(t), 100, 0, Instant::ZERO).emit();
    let mut ok = 0;
    for _ in 0..200_000 {
        let mut b =
            if rng.bernoulli(0.5) { good.clone() } else { (0..rng.below(200)).map(|_| rng.next_u64() as u8).collect() };
        for _ in 0..rng.below(4) {
            if !b.is_empty() {
                let i = rng.below(b.len() as u64) as usize;
                b[i] = rng.next_u64() as u8;
            }
        }
        if rng.bernoulli(0.2) {
            let n = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(n);
        }
        if Packet::parse(&b).is_ok() {
            ok += 1;
        }
    }
    assert!(ok > 1000, "some unmutated packets must still parse: {ok}");
}

#[test]
fn scenario_parser_survives_mutations() {
    let base =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/shared-link-sr.toml")).unwrap();
    let mut rng = Rng::stream(9, 0, "fuzz.toml");
    let alphabet = b"[]{}=\".,#\n 0123456789abcdefkKMGms+-_eE";
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut b = base.clone().into_bytes();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(b.len() as u64) as usize;
            match rng.below(3) {
                0 => b[i] = alphabet[rng.below(alphabet.len() as u64) as usize],
                1 => {
                    b.remove(i);
                }
                _ => b.insert(i, alphabet[rng.below(alphabet.len() as u64) as usize]),
            }
        }
        let Ok(text) = String::from_utf8(b) else { continue };
        match parse_scenario(&text, &[]) {
            Ok(_) => {
                accepted += 1;
                // Whatever the parser accepts, the simulator runs without panicking.
                if let Ok(sc) = parse_scenario(&text, &["stop=\"5s\"".into()]) {
                    thinwire::engine::run_scenario(&sc);
                }
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "error must be one line: {e}"),
        }
    }
    assert!(accepted > 100 && accepted < 20_000, "{accepted}");
}
