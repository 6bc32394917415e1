//! Binding of the capture analyser: `analyze_capture(path, columns)`.
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use thinwire::analysis::{analyze_open_file_on, Conn, DirStats};

pyo3::create_exception!(
    _core,
    CaptureError,
    pyo3::exceptions::PyValueError,
    "A capture file cannot be read; the message says what is wrong."
);

use crate::i64_bytes;
fn u32_bytes<'py>(py: Python<'py>, v: &[u32]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
}

fn dir_dict<'py>(py: Python<'py>, s: &DirStats, elapsed_s: f64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("packets", s.packets)?;
    d.set_item("ack_packets", s.ack_pkts)?;
    d.set_item("pure_acks", s.pure_acks)?;
    d.set_item("sack_packets", s.sack_pkts)?;
    d.set_item("sack_blocks", s.sack_blocks)?;
    d.set_item("max_sack_blocks", s.max_sack_blocks)?;
    d.set_item("dsack_packets", s.dsack_pkts)?;
    d.set_item("data_packets", s.data_pkts)?;
    d.set_item("data_bytes", s.data_bytes)?;
    d.set_item("unique_bytes", s.unique_bytes)?;
    d.set_item("retransmitted_packets", s.rexmit_pkts)?;
    d.set_item("retransmitted_bytes", s.rexmit_bytes)?;
    d.set_item("retransmitted_syn_packets", s.syn_rexmit_pkts)?;
    d.set_item("retransmitted_fin_packets", s.fin_rexmit_pkts)?;
    d.set_item("retransmitted_data_packets", s.rexmit_pkts - s.syn_rexmit_pkts - s.fin_rexmit_pkts)?;
    d.set_item("zero_window_probes", s.zwnd_probe_pkts)?;
    d.set_item("out_of_order_packets", s.out_of_order_pkts)?;
    d.set_item("pushed_packets", s.pushed_pkts)?;
    d.set_item("syn_packets", s.syn_pkts)?;
    d.set_item("fin_packets", s.fin_pkts)?;
    d.set_item("rst_packets", s.rst_pkts)?;
    d.set_item("mss_requested", s.mss_requested)?;
    d.set_item("window_scale_requested", s.wscale_requested)?;
    d.set_item("timestamps", s.timestamps)?;
    d.set_item("sack_requested", s.sack_requested)?;
    d.set_item("max_segment", s.max_segment)?;
    d.set_item("min_segment", s.min_segment)?;
    d.set_item("max_window", s.win_max)?;
    d.set_item("min_window", s.win_min)?;
    d.set_item("zero_windows", s.win_zero)?;
    d.set_item("avg_window", if s.win_n > 0 { Some(s.win_sum as f64 / s.win_n as f64) } else { None })?;
    d.set_item("stream_length", s.stream_length)?;
    d.set_item("idle_max_s", s.idle_max_ns as f64 * 1e-9)?;
    d.set_item(
        "data_time_s",
        match (s.first_data_ns, s.last_data_ns) {
            (Some(a), Some(b)) => (b - a) as f64 * 1e-9,
            _ => 0.0,
        },
    )?;
    d.set_item("throughput_Bps", if elapsed_s > 0.0 { Some(s.unique_bytes as f64 / elapsed_s) } else { None })?;
    d.set_item("rtt_samples", s.rtt_samples)?;
    let n = s.rtt_samples as f64;
    let ms = |x: f64| x / 1e6;
    d.set_item("rtt_min_ms", (n > 0.0).then(|| ms(s.rtt_min_ns as f64)))?;
    d.set_item("rtt_max_ms", (n > 0.0).then(|| ms(s.rtt_max_ns as f64)))?;
    d.set_item("rtt_avg_ms", (n > 0.0).then(|| ms(s.rtt_sum_ns / n)))?;
    // Sample standard deviation, as tcptrace prints it.
    d.set_item(
        "rtt_stdev_ms",
        (n > 1.0).then(|| ms(((s.rtt_sum2 - s.rtt_sum_ns * s.rtt_sum_ns / n) / (n - 1.0)).max(0.0).sqrt())),
    )?;
    d.set_item("rtt_3whs_ms", s.rtt_3whs_ns.map(|x| ms(x as f64)))?;
    d.set_item("duplicate_acks", s.dupacks)?;
    d.set_item("triple_duplicate_acks", s.triple_dupacks)?;
    d.set_item("fast_retransmits", s.fast_retransmits)?;
    d.set_item("timeouts", s.timeouts)?;
    d.set_item("spurious_timeouts", s.spurious_timeouts)?;
    Ok(d)
}

fn conn_dict<'py>(py: Python<'py>, c: &Conn) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let el = (c.last_ns - c.first_ns) as f64 * 1e-9;
    d.set_item("id", c.id)?;
    d.set_item("host_a", c.addr_string(0))?;
    d.set_item("port_a", c.port[0])?;
    d.set_item("host_b", c.addr_string(1))?;
    d.set_item("port_b", c.port[1])?;
    d.set_item("first_s", c.first_ns as f64 * 1e-9)?;
    d.set_item("last_s", c.last_ns as f64 * 1e-9)?;
    d.set_item("duration_s", el)?;
    d.set_item("complete", c.complete())?;
    let (a2b, b2a) = (dir_dict(py, &c.dirs[0], el)?, dir_dict(py, &c.dirs[1], el)?);
    a2b.set_item("first_seq", c.first_seq(0))?;
    b2a.set_item("first_seq", c.first_seq(1))?;
    d.set_item("a2b", a2b)?;
    d.set_item("b2a", b2a)?;
    Ok(d)
}

/// Analyses a pcap/pcapng file: connection statistics, warnings and (if `columns`)
/// per-packet, RTT-sample and event columns as little-endian byte buffers.
#[pyfunction]
#[pyo3(signature = (path, columns=false, fd=None, interface=None))]
pub fn analyze_capture<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    columns: bool,
    fd: Option<i32>,
    interface: Option<u32>,
) -> PyResult<Bound<'py, PyDict>> {
    let t0 = std::time::Instant::now();
    let err = |e: &dyn std::fmt::Display| CaptureError::new_err(format!("{}: {}", path.display(), e));
    // `fd`: the capture already opened by the caller (a FIFO it waited on); read
    // through a duplicate, the caller keeps and closes its own.
    let file = match fd {
        Some(fd) if fd >= 0 => {
            // SAFETY: the caller holds `fd` open for the whole call.
            let b = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            Some(std::fs::File::from(b.try_clone_to_owned().map_err(|e| err(&e))?))
        }
        _ => None,
    };
    let a = py
        .allow_threads(|| {
            let f = match file {
                Some(f) => f,
                None => std::fs::File::open(&path)
                    .map_err(|e| thinwire::analysis::CaptureError(format!("cannot read it ({e})")))?,
            };
            analyze_open_file_on(f, columns, interface)
        })
        .map_err(|e| err(&e))?;
    let d = PyDict::new(py);
    d.set_item("wall_s", t0.elapsed().as_secs_f64())?;
    d.set_item("format", a.report.format)?;
    d.set_item("packets", a.report.packets)?;
    d.set_item("tcp_packets", a.tcp_packets)?;
    d.set_item("other_packets", a.other_packets)?;
    d.set_item("warnings", a.report.warnings.clone())?;
    let conns = PyList::empty(py);
    for c in &a.tracker.conns {
        conns.append(conn_dict(py, c)?)?;
    }
    d.set_item("connections", conns)?;
    if let Some(c) = &a.tracker.cols {
        let x = PyDict::new(py);
        let i64b = |v: &[i64]| i64_bytes(py, v);
        let u32b = |v: &[u32]| u32_bytes(py, v);
        x.set_item("t_ns", i64b(&c.t_ns))?;
        x.set_item("conn", u32b(&c.conn))?;
        x.set_item("dir", PyBytes::new(py, &c.dir))?;
        x.set_item("seq", i64b(&c.seq))?;
        x.set_item("len", i64b(&c.len))?;
        x.set_item("ack", i64b(&c.ack))?;
        x.set_item("win", i64b(&c.win))?;
        x.set_item("flags", PyBytes::new(py, &c.flags))?;
        x.set_item("kind", PyBytes::new(py, &c.kind))?;
        x.set_item("rtt_t_ns", i64b(&c.rtt_t_ns))?;
        x.set_item("rtt_conn", u32b(&c.rtt_conn))?;
        x.set_item("rtt_dir", PyBytes::new(py, &c.rtt_dir))?;
        x.set_item("rtt_ns", i64b(&c.rtt_ns))?;
        x.set_item("ev_t_ns", i64b(&c.ev_t_ns))?;
        x.set_item("ev_conn", u32b(&c.ev_conn))?;
        x.set_item("ev_dir", PyBytes::new(py, &c.ev_dir))?;
        x.set_item("ev_kind", PyBytes::new(py, &c.ev_kind))?;
        x.set_item("ev_seq", i64b(&c.ev_seq))?;
        d.set_item("columns", x)?;
    }
    Ok(d)
}
