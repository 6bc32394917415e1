//! pyo3 bindings only: error mapping and result conversion. The core crate never
//! imports pyo3.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use thinwire::engine::{run_scenario, RunResult};

mod analysis;

pyo3::create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A scenario field is wrong; the message names the field path and what is accepted."
);

pub(crate) fn i64_bytes<'py>(py: Python<'py>, v: &[i64]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
}

fn result_to_py<'py>(py: Python<'py>, r: &RunResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("events", r.events)?;
    d.set_item("sim_time_s", r.sim_time_s)?;
    let flows = PyList::empty(py);
    let delays = PyDict::new(py);
    for f in &r.flows {
        let x = PyDict::new(py);
        x.set_item("id", f.id)?;
        x.set_item("app", &f.app)?;
        x.set_item("direction", &f.direction)?;
        x.set_item("variant", &f.variant)?;
        x.set_item("start_s", f.start_s)?;
        x.set_item("bytes_delivered", f.bytes_delivered)?;
        x.set_item("throughput_bps", f.throughput_bps)?;
        x.set_item("completion_s", f.completion_s)?;
        x.set_item("tcp_retransmits", f.tcp_retransmits)?;
        x.set_item("tcp_timeouts", f.tcp_timeouts)?;
        x.set_item("tcp_fast_retransmits", f.tcp_fast_retransmits)?;
        x.set_item("rtt_avg_s", f.rtt_avg_s)?;
        x.set_item("segments_sent", f.segments_sent)?;
        x.set_item("transactions", f.transactions)?;
        x.set_item("durations_s", PyList::new(py, &f.durations_s)?)?;
        let m = f.media.as_ref();
        x.set_item("packets_sent", m.map(|m| m.packets_sent))?;
        x.set_item("packets_received", m.map(|m| m.packets_received))?;
        x.set_item("loss", m.map(|m| m.loss))?;
        x.set_item("delay_mean_s", m.and_then(|m| m.delay_mean_s))?;
        x.set_item("delay_p50_s", m.and_then(|m| m.delay_p50_s))?;
        x.set_item("delay_p95_s", m.and_then(|m| m.delay_p95_s))?;
        x.set_item("delay_max_s", m.and_then(|m| m.delay_max_s))?;
        flows.append(x)?;
        if let Some(m) = m {
            delays.set_item(f.id, i64_bytes(py, &m.delays_ns))?;
        }
    }
    d.set_item("flows", flows)?;
    match &r.proxy {
        Some(p) => {
            let x = PyDict::new(py);
            x.set_item("connections", p.connections)?;
            x.set_item("segments_sent", p.segments_sent)?;
            x.set_item("retransmits", p.retransmits)?;
            x.set_item("timeouts", p.timeouts)?;
            x.set_item("stalls", p.stalls)?;
            x.set_item("max_buffered", p.max_buffered)?;
            x.set_item("rtt_avg_s", (p.rtt_samples > 0).then(|| p.rtt_sum_ns as f64 * 1e-9 / p.rtt_samples as f64))?;
            x.set_item("clamp", p.clamp)?;
            d.set_item("proxy", x)?;
        }
        None => d.set_item("proxy", py.None())?,
    }
    d.set_item("media_delays", delays)?;
    let link = PyDict::new(py);
    for (i, name) in ["down", "up"].iter().enumerate() {
        let l = &r.link[i];
        let x = PyDict::new(py);
        x.set_item("frames_sent", l.frames_sent)?;
        x.set_item("frames_lost", l.frames_lost)?;
        x.set_item("flr", if l.frames_sent > 0 { l.frames_lost as f64 / l.frames_sent as f64 } else { 0.0 })?;
        x.set_item("frames_retransmitted", l.frames_retransmitted)?;
        x.set_item("data_frames_sent", l.data_frames_sent)?;
        x.set_item("ack_frames", l.ack_frames)?;
        x.set_item("nack_frames", l.nack_frames)?;
        x.set_item("status_frames", l.status_frames)?;
        x.set_item("sdu_discards", l.sdu_discards)?;
        x.set_item("idle_frames", l.idle_frames)?;
        x.set_item("reset_frames", l.reset_frames)?;
        x.set_item("link_resets", l.link_resets)?;
        x.set_item("flushed_bytes", l.flushed_bytes)?;
        x.set_item("call_dropped", l.call_dropped)?;
        x.set_item("ppp_damaged", l.ppp_damaged)?;
        x.set_item("vj_tossed", l.vj_tossed)?;
        x.set_item("checksum_drops", l.checksum_drops)?;
        x.set_item("l2r_busy", l.l2r_busy)?;
        x.set_item("tbf_setups", l.tbf_setups)?;
        x.set_item("outages", l.outages)?;
        x.set_item("bytes_sent", l.bytes_sent)?;
        x.set_item("arq_timeouts", l.arq_timeouts)?;
        x.set_item("queue_drops", l.queue_drops)?;
        x.set_item("queue_max", l.queue_max)?;
        x.set_item("frame_queue_drops", l.frame_queue_drops)?;
        x.set_item("rate_bps", l.rate_bps)?;
        x.set_item("utilization", if r.sim_time_s > 0.0 { l.busy_ns as f64 * 1e-9 / r.sim_time_s } else { 0.0 })?;
        link.set_item(*name, x)?;
    }
    d.set_item("link", link)?;
    d.set_item("wired_queue_drops", r.wired_drops.to_vec())?;
    let t = &r.trace;
    let tr = PyDict::new(py);
    tr.set_item("rows", t.len())?;
    tr.set_item("time_ns", i64_bytes(py, &t.time_ns))?;
    tr.set_item("layer", PyBytes::new(py, &t.layer))?;
    tr.set_item("event", PyBytes::new(py, &t.event))?;
    tr.set_item("node", PyBytes::new(py, &t.node))?;
    tr.set_item("dir", PyBytes::new(py, &t.dir))?;
    let flow: Vec<i64> = t.flow.iter().map(|&x| x as i64).collect();
    tr.set_item("flow", i64_bytes(py, &flow))?;
    tr.set_item("seq", i64_bytes(py, &t.seq))?;
    tr.set_item("ack", i64_bytes(py, &t.ack))?;
    tr.set_item("len", i64_bytes(py, &t.len))?;
    tr.set_item("value", i64_bytes(py, &t.value))?;
    d.set_item("trace", tr)?;
    if let Some(p) = &r.pcap_server {
        d.set_item("pcap_server", PyBytes::new(py, p))?;
    }
    if let Some(p) = &r.pcap_mobile {
        d.set_item("pcap_mobile", PyBytes::new(py, p))?;
    }
    Ok(d)
}

/// Runs a scenario given as TOML text with `KEY=VALUE` overrides.
#[pyfunction]
#[pyo3(signature = (toml_text, overrides=Vec::new()))]
fn run<'py>(py: Python<'py>, toml_text: String, overrides: Vec<String>) -> PyResult<Bound<'py, PyDict>> {
    let sc =
        thinwire::config::parse_scenario(&toml_text, &overrides).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let t0 = std::time::Instant::now();
    let r = py.allow_threads(|| run_scenario(&sc));
    let wall = t0.elapsed().as_secs_f64();
    let d = result_to_py(py, &r)?;
    d.set_item("wall_s", wall)?;
    d.set_item("events_per_s", if wall > 0.0 { r.events as f64 / wall } else { 0.0 })?;
    Ok(d)
}

/// Checks a scenario without running it; raises ScenarioError.
#[pyfunction]
#[pyo3(signature = (toml_text, overrides=Vec::new()))]
fn check(toml_text: String, overrides: Vec<String>) -> PyResult<()> {
    thinwire::config::parse_scenario(&toml_text, &overrides)
        .map(|_| ())
        .map_err(|e| ScenarioError::new_err(e.to_string()))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::analyze_capture, m)?)?;
    m.add("CaptureError", m.py().get_type::<analysis::CaptureError>())?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("TRACE_LAYERS", thinwire::trace::LAYERS.to_vec())?;
    m.add("TRACE_EVENTS", thinwire::trace::EVENTS.to_vec())?;
    m.add("TRACE_NODES", thinwire::trace::NODES.to_vec())?;
    m.add("TRACE_DIRS", thinwire::trace::DIRS.to_vec())?;
    Ok(())
}
