//! Bindings of the real-time emulator (Linux only).
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

pyo3::create_exception!(
    _core,
    EmulateError,
    PyValueError,
    "The emulator cannot run; the message says why (a usage problem: exit 2)."
);

/// Runs an emulation; returns its report. Raises EmulateError for what the user
/// must fix (no root, no iproute2, an unwritable --out), RuntimeError otherwise.
#[pyfunction]
#[pyo3(signature = (toml_text, overrides, mobile=None, server=None, duration_s=None, out_dir=None, late_after_ms=1.0, commands_to_stderr=false, gateway=None, server_ready=None, mobiles=1, cell="separate", udp_bypass=false, offload=true))]
#[allow(clippy::too_many_arguments)]
pub fn emulate<'py>(
    py: Python<'py>,
    toml_text: String,
    overrides: Vec<String>,
    mobile: Option<String>,
    server: Option<String>,
    duration_s: Option<f64>,
    out_dir: Option<std::path::PathBuf>,
    late_after_ms: f64,
    commands_to_stderr: bool,
    gateway: Option<String>,
    server_ready: Option<u16>,
    mobiles: usize,
    cell: &str,
    udp_bypass: bool,
    offload: bool,
) -> PyResult<Bound<'py, PyDict>> {
    use thinwire::time::Duration;
    let sc = crate::scenario(&toml_text, &overrides, None, true)?;
    let opts = thinwire_emu::Options {
        scenario: sc,
        mobile,
        mobiles,
        cell: parse_cell(cell)?,
        udp_bypass,
        server,
        gateway,
        duration: duration_s.map(Duration::from_secs_f64),
        out: out_dir,
        late_after: Duration::from_secs_f64(late_after_ms / 1e3),
        commands_to_stderr,
        server_ready,
        offload,
    };
    let r = py.allow_threads(|| thinwire_emu::emulate(opts)).map_err(|e| match e {
        thinwire_emu::EmuError::Usage(m) => EmulateError::new_err(m),
        thinwire_emu::EmuError::Failed(m) => pyo3::exceptions::PyRuntimeError::new_err(m),
    })?;
    let d = PyDict::new(py);
    d.set_item("duration_s", r.duration_s)?;
    d.set_item("start_unix_s", r.start_unix_s)?;
    d.set_item("ended", &r.ended)?;
    d.set_item("gateway_wind_down_s", r.gateway_wind_down_s)?;
    d.set_item("mobile_status", r.mobile_status)?;
    d.set_item("mobile_statuses", r.mobile_statuses)?;
    d.set_item("flow_mobiles", r.flow_mobiles)?;
    let conns = r
        .conns
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|c| {
                    let row = PyDict::new(py);
                    row.set_item("id", c.id)?;
                    row.set_item("direction", if c.dir == 0 { "down" } else { "up" })?;
                    row.set_item("start_s", c.start_s)?;
                    row.set_item("bytes_delivered", c.bytes_delivered)?;
                    row.set_item("throughput_bps", c.throughput_bps)?;
                    row.set_item("tcp_retransmits", c.tcp_retransmits)?;
                    row.set_item("tcp_syn_retransmits", c.tcp_syn_retransmits)?;
                    row.set_item("tcp_fin_retransmits", c.tcp_fin_retransmits)?;
                    row.set_item("rtt_avg_s", c.rtt_avg_s)?;
                    row.set_item("packets_sent", c.packets_sent)?;
                    Ok(row)
                })
                .collect::<PyResult<Vec<_>>>()
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("conns", conns)?;
    d.set_item("server_status", r.server_status)?;
    let l = PyDict::new(py);
    l.set_item("packets", r.lateness.count)?;
    l.set_item("p50_ms", r.lateness.p50_ns as f64 / 1e6)?;
    l.set_item("p99_ms", r.lateness.p99_ns as f64 / 1e6)?;
    l.set_item("max_ms", r.lateness.max_ns as f64 / 1e6)?;
    l.set_item("late", r.lateness.late)?;
    l.set_item("late_after_ms", late_after_ms)?;
    // The wait in the TUN devices' queues before the emulator read a packet
    // (None: the kernel could not tell).
    let (n, p50, p99, max) = match r.lateness.read_wait {
        Some((n, a, b, c)) => (Some(n), Some(a as f64 / 1e6), Some(b as f64 / 1e6), Some(c as f64 / 1e6)),
        None => (None, None, None, None),
    };
    l.set_item("read_wait_packets", n)?;
    l.set_item("read_wait_p50_ms", p50)?;
    l.set_item("read_wait_p99_ms", p99)?;
    l.set_item("read_wait_max_ms", max)?;
    d.set_item("lateness", l)?;
    let p = PyDict::new(py);
    p.set_item("from_mobile", r.path.inputs[1])?;
    p.set_item("from_server", r.path.inputs[0])?;
    p.set_item("to_mobile", r.path.outputs[0])?;
    p.set_item("to_server", r.path.outputs[1])?;
    p.set_item("wired_drops", r.path.wired_drops)?;
    p.set_item("link_drops", r.path.link_drops)?;
    p.set_item("write_drops", r.write_drops)?;
    p.set_item("from_mobile_queue_drops", r.tun_queue_drops[0])?;
    p.set_item("from_server_queue_drops", r.tun_queue_drops[1])?;
    p.set_item("unparsable", r.unparsable)?;
    p.set_item("unroutable", r.unroutable)?;
    // Offload (None when off): super-packets read and the segments cut from
    // them, super-packets written and the segments merged into them.
    let on = |v: u64| offload.then_some(v);
    p.set_item("gso_reads", on(r.gso_reads))?;
    p.set_item("gso_segments", on(r.gso_segments))?;
    p.set_item("gro_writes", on(r.gro_writes))?;
    p.set_item("gro_segments", on(r.gro_segments))?;
    d.set_item("packets", p)?;
    // One path: {"down", "up"}; with separate links, one such per mobile.
    let links = r
        .link
        .iter()
        .map(|l| {
            let link = PyDict::new(py);
            for (i, name) in ["down", "up"].iter().enumerate() {
                link.set_item(*name, crate::to_py(py, &l[i])?)?;
            }
            Ok(link)
        })
        .collect::<PyResult<Vec<_>>>()?;
    if links.len() == 1 {
        d.set_item("link", &links[0])?;
    } else {
        d.set_item("link", links)?;
    }
    d.set_item("trace", crate::trace_to_py(py, &r.trace)?)?;
    Ok(d)
}

fn parse_cell(cell: &str) -> PyResult<thinwire_emu::fabric::Cell> {
    thinwire_emu::fabric::Cell::parse(cell)
        .ok_or_else(|| EmulateError::new_err(format!("cell {cell:?}: 'separate' (a link per mobile) or 'shared'")))
}

/// Replays an emulation's inputs through the scenario's paths until `end_ns`:
/// the schedule log of each path, line by line.
#[pyfunction]
#[pyo3(signature = (toml_text, overrides, inputs, end_ns, gateway=false, mobiles=1, cell="separate", udp_bypass=false))]
#[allow(clippy::too_many_arguments)]
pub fn replay(
    toml_text: String,
    overrides: Vec<String>,
    inputs: std::path::PathBuf,
    end_ns: i64,
    gateway: bool,
    mobiles: usize,
    cell: &str,
    udp_bypass: bool,
) -> PyResult<Vec<Vec<String>>> {
    let sc = crate::scenario(&toml_text, &overrides, None, true)?;
    let layout = thinwire_emu::Layout { gateway, mobiles, cell: parse_cell(cell)?, udp_bypass };
    thinwire_emu::replay(&sc, &inputs, thinwire::time::Instant(end_ns), layout)
        .map_err(|e| EmulateError::new_err(e.to_string()))
}

/// Runs the `thinwire proxy` daemon until a signal (or `duration_s`). Raises
/// EmulateError for what the user must fix (a bad configuration file, no root),
/// RuntimeError otherwise.
#[pyfunction]
#[pyo3(signature = (config, overrides, duration_s=None, out=None))]
pub fn proxy_daemon(
    py: Python<'_>,
    config: std::path::PathBuf,
    overrides: Vec<String>,
    duration_s: Option<f64>,
    out: Option<std::path::PathBuf>,
) -> PyResult<()> {
    let opts = thinwire_emu::proxyd::Options {
        config,
        overrides,
        duration: duration_s.map(thinwire::time::Duration::from_secs_f64),
        out,
    };
    py.allow_threads(|| thinwire_emu::proxyd::run(opts)).map_err(|e| match e {
        thinwire_emu::EmuError::Usage(m) => EmulateError::new_err(m),
        thinwire_emu::EmuError::Failed(m) => pyo3::exceptions::PyRuntimeError::new_err(m),
    })
}
