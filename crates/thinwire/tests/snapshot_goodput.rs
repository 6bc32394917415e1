//! Model regression: a table of TCP throughput against frame loss rate for each
//! link protocol, compared with a committed snapshot. A change in any model shows
//! up here as a diff; rerun with `UPDATE_SNAPSHOTS=1` after checking it is intended.
use thinwire::config::parse_scenario;
use thinwire::engine::run_scenario;

const BASE: &str = r#"
seed = 1
[wired]
rate = "10Mbps"
delay = "1ms"
[wireless]
rate = "64kbps"
delay = "50ms"
frame = "250B"
header = "4B"
[wireless.channel]
model = "uniform"
p = 0.0
[wireless.arq]
protocol = "raw"
[[flow]]
app = "bulk"
bytes = "300KB"
# 20 segments of window, like ns-2's default window_ = 20
tcp = { variant = "reno", mss = 210, rcv_buf = "4200B" }
"#;

fn table() -> (String, Vec<Vec<f64>>) {
    let losses = [0.0, 0.015, 0.025, 0.054, 0.098];
    let protos = [("raw", None), ("sr", None), ("asr", Some("3+2"))];
    let mut out = String::from(
        "# TCP Reno (window 20 x 210 B), 300 kB down, 64 kbit/s, uniform frame loss; throughput kbit/s (RTOs)\nloss   ",
    );
    for (p, pol) in protos {
        out += &format!("{:>16}", format!("{p}{}", pol.map(|x| format!(" {x}")).unwrap_or_default()));
    }
    out += "\n";
    let mut grid = vec![];
    for p in losses {
        out += &format!("{p:<7}");
        let mut row = vec![];
        for (proto, pol) in protos {
            let mut o = vec![format!("wireless.channel.p={p}"), format!("wireless.arq.protocol=\"{proto}\"")];
            if let Some(pol) = pol {
                o.push(format!("wireless.arq.policy=\"{pol}\""));
            }
            let sc = parse_scenario(BASE, &o).unwrap();
            let r = run_scenario(&sc);
            let f = &r.flows[0];
            assert_eq!(f.bytes_delivered, 300_000);
            out += &format!("{:>10.3} ({:>3})", f.throughput_bps / 1e3, f.tcp_timeouts);
            row.push(f.throughput_bps);
        }
        out += "\n";
        grid.push(row);
    }
    (out, grid)
}

#[test]
fn throughput_vs_loss_snapshot() {
    let (t, grid) = table();
    // Properties that hold whatever the snapshot says.
    for (clean, lossy) in grid[0].iter().zip(&grid[4]) {
        assert!(clean > lossy, "loss must cost throughput");
    }
    assert!(grid[0][0] > 50e3, "a clean 64 kbit/s link carries > 50 kbit/s of goodput");
    assert!(grid[4][1] > 1.5 * grid[4][0], "SR must beat no ARQ at 9.8% loss: {grid:?}");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/throughput_vs_loss.txt");
    if std::env::var("UPDATE_SNAPSHOTS").is_ok() {
        std::fs::write(path, &t).unwrap();
    }
    let want = std::fs::read_to_string(path).expect("snapshot missing: run with UPDATE_SNAPSHOTS=1");
    assert_eq!(t, want, "model output changed; if intended, rerun with UPDATE_SNAPSHOTS=1 and commit the diff");
}
