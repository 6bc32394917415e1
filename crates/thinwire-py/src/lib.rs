//! pyo3 bindings only: error mapping and result conversion. The core crate never
//! imports pyo3.
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use thinwire::engine::{EndReason, RunResult, Sim};

mod analysis;
#[cfg(target_os = "linux")]
mod emulate;

pyo3::create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A scenario field is wrong; the message names the field path and what is accepted."
);

pub(crate) fn i64_bytes<'py>(py: Python<'py>, v: &[i64]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
}

/// A result struct as a Python dict, field for field (the struct's `FIELDS` say
/// what each is).
pub(crate) fn to_py<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, v).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Trace columns as bytes (decoded by python/thinwire/traces.py).
pub(crate) fn trace_to_py<'py>(py: Python<'py>, t: &thinwire::trace::TraceTable) -> PyResult<Bound<'py, PyDict>> {
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
    Ok(tr)
}

fn result_to_py<'py>(py: Python<'py>, r: &RunResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("end", r.end.name())?;
    d.set_item("unfinished", r.unfinished.clone())?;
    d.set_item("events", r.events)?;
    d.set_item("sim_time_s", r.sim_time_s)?;
    d.set_item("flows", to_py(py, &r.flows)?)?;
    let delays = PyDict::new(py);
    for f in r.flows.iter().filter(|f| f.packets_sent.is_some()) {
        delays.set_item(f.id, i64_bytes(py, &f.delays_ns))?;
    }
    d.set_item("media_delays", delays)?;
    d.set_item("proxy", to_py(py, &r.proxy)?)?;
    let link = PyDict::new(py);
    for (i, name) in ["down", "up"].iter().enumerate() {
        link.set_item(*name, to_py(py, &r.link[i])?)?;
    }
    d.set_item("link", link)?;
    d.set_item("wired_queue_drops", r.wired_drops.to_vec())?;
    d.set_item("wired_queue_aqm_drops", r.wired.map(|w| w.aqm_drops).to_vec())?;
    d.set_item("wired_queue_marks", r.wired.map(|w| w.marks).to_vec())?;
    let tr = trace_to_py(py, &r.trace)?;
    tr.set_item("rows", r.trace_rows)?;
    d.set_item("trace", tr)?;
    d.set_item("files", r.files.clone())?;
    if let Some(p) = &r.pcap_server {
        d.set_item("pcap_server", PyBytes::new(py, p))?;
    }
    if let Some(p) = &r.pcap_mobile {
        d.set_item("pcap_mobile", PyBytes::new(py, p))?;
    }
    if let Some([down, up]) = &r.mm_logs {
        d.set_item("mm_down", PyBytes::new(py, down))?;
        d.set_item("mm_up", PyBytes::new(py, up))?;
    }
    Ok(d)
}

/// The scenario of TOML text with overrides; with `file` (the path the text was
/// read from) relative file paths in the text are relative to its directory.
pub(crate) fn scenario(
    toml_text: &str,
    overrides: &[String],
    file: Option<&std::path::Path>,
    links_only: bool,
) -> PyResult<thinwire::config::Scenario> {
    let r = match (links_only, file) {
        (true, f) => thinwire::config::parse_links(toml_text, overrides, f),
        (false, Some(f)) => thinwire::config::parse_scenario_file(toml_text, overrides, f),
        (false, None) => thinwire::config::parse_scenario(toml_text, overrides),
    };
    r.map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Runs a scenario given as TOML text with `KEY=VALUE` overrides. With `out_dir`,
/// its trace, pcap taps and mm-link logs are streamed into files there (named in
/// the result's `files`) instead of returned; a write error raises OSError.
/// `scenario_file`: the file the text was read from (relative paths in the text
/// are relative to its directory).
#[pyfunction]
#[pyo3(signature = (toml_text, overrides=Vec::new(), out_dir=None, scenario_file=None))]
fn run<'py>(
    py: Python<'py>,
    toml_text: String,
    overrides: Vec<String>,
    out_dir: Option<std::path::PathBuf>,
    scenario_file: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = scenario(&toml_text, &overrides, scenario_file.as_deref(), false)?;
    let sim = match &out_dir {
        None => Sim::new(&sc),
        Some(d) => Sim::with_output_dir(&sc, d).map_err(|e| PyOSError::new_err(e.to_string()))?,
    };
    let t0 = std::time::Instant::now();
    // Ctrl-C (and any other Python signal handler) is checked every POLL_EVERY
    // events; the handler's exception ends the run and is raised here.
    let mut raised: Option<PyErr> = None;
    let r = py.allow_threads(|| {
        sim.run_polled(&mut || {
            raised = Python::with_gil(|py| py.check_signals().err());
            raised.is_some()
        })
    });
    if let Some(e) = raised {
        return Err(e);
    }
    if let Some(e) = &r.output_error {
        return Err(PyOSError::new_err(e.clone()));
    }
    if r.end == EndReason::Stuck {
        return Err(ScenarioError::new_err(format!(
            "simulated time stopped advancing at {:.6} s ({} events at that instant): a timer of zero or tiny length fires again and again; lengthen it",
            r.sim_time_s,
            thinwire::engine::STUCK_EVENTS
        )));
    }
    let wall = t0.elapsed().as_secs_f64();
    let d = result_to_py(py, &r)?;
    d.set_item("warnings", thinwire::build::warnings(&sc))?;
    d.set_item("wall_s", wall)?;
    d.set_item("events_per_s", if wall > 0.0 { r.events as f64 / wall } else { 0.0 })?;
    Ok(d)
}

/// Writes trace columns (as `run` returns them) to a trace.parquet at `path` with
/// the core's writer (rows sorted by time, stably); returns the rows written. The
/// one writer of every trace.parquet thinwire makes from a run it holds in memory.
#[pyfunction]
fn write_trace(py: Python<'_>, cols: &Bound<'_, PyDict>, path: std::path::PathBuf) -> PyResult<usize> {
    let t = trace_from_py(cols)?;
    py.allow_threads(|| -> std::io::Result<usize> {
        let f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        use thinwire::trace::parquet::{ParquetWriter, SORTED_KEY};
        let mut w = ParquetWriter::new(f)?;
        w.write_table(&t)?;
        w.finish(&[(SORTED_KEY, "true")])?; // flushes
        Ok(t.len())
    })
    .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))
}

/// The columns `trace_to_py` made, back into a table sorted by time (stably).
fn trace_from_py(cols: &Bound<'_, PyDict>) -> PyResult<thinwire::trace::TraceTable> {
    let get = |k: &str| -> PyResult<Vec<u8>> {
        cols.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("trace column {k} is missing")))?.extract()
    };
    let i64s = |k: &str| -> PyResult<Vec<i64>> {
        Ok(get(k)?.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    };
    let time_ns = i64s("time_ns")?;
    let n = time_ns.len();
    let cols8 = [get("layer")?, get("event")?, get("node")?, get("dir")?];
    let cols64 = [i64s("flow")?, i64s("seq")?, i64s("ack")?, i64s("len")?, i64s("value")?];
    if cols8.iter().any(|c| c.len() != n) || cols64.iter().any(|c| c.len() != n) {
        return Err(PyValueError::new_err("trace columns differ in length"));
    }
    use thinwire::trace::{DIRS, EVENTS, LAYERS, NODES};
    for (c, vocab) in cols8.iter().zip([LAYERS, EVENTS, NODES, DIRS]) {
        if c.iter().any(|&x| x as usize >= vocab.len()) {
            return Err(PyValueError::new_err("a trace code is outside its vocabulary"));
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| time_ns[i]);
    let pick8 = |c: &[u8]| order.iter().map(|&i| c[i]).collect::<Vec<u8>>();
    let pick64 = |c: &[i64]| order.iter().map(|&i| c[i]).collect::<Vec<i64>>();
    Ok(thinwire::trace::TraceTable {
        time_ns: pick64(&time_ns),
        layer: pick8(&cols8[0]),
        event: pick8(&cols8[1]),
        node: pick8(&cols8[2]),
        dir: pick8(&cols8[3]),
        flow: order.iter().map(|&i| cols64[0][i] as i32).collect(),
        seq: pick64(&cols64[1]),
        ack: pick64(&cols64[2]),
        len: pick64(&cols64[3]),
        value: pick64(&cols64[4]),
    })
}

/// Checks a scenario without running it; raises ScenarioError, else returns its
/// warnings (settings that run but risk what the user may not intend).
/// `links_only`: as the emulator reads it (its flows are not run, so none is
/// needed).
#[pyfunction]
#[pyo3(signature = (toml_text, overrides=Vec::new(), links_only=false, scenario_file=None))]
fn check(
    toml_text: String,
    overrides: Vec<String>,
    links_only: bool,
    scenario_file: Option<std::path::PathBuf>,
) -> PyResult<Vec<String>> {
    scenario(&toml_text, &overrides, scenario_file.as_deref(), links_only).map(|sc| thinwire::build::warnings(&sc))
}

/// The overrides that make the relative file paths of a scenario file's text
/// absolute (relative to the file's directory), as `run` with `scenario_file` does.
#[pyfunction]
fn path_overrides(toml_text: &str, scenario_file: std::path::PathBuf) -> Vec<String> {
    thinwire::config::path_overrides(toml_text, &scenario_file)
}

/// Fits a Gilbert–Elliott model to frame fates (bytes, nonzero = lost) by
/// maximum likelihood: {p, r, eg, eb, loglik, iterations}.
#[pyfunction]
#[pyo3(signature = (fates, max_iter=500, tol=1e-6))]
fn fit_gilbert_elliott<'py>(py: Python<'py>, fates: &[u8], max_iter: u32, tol: f64) -> PyResult<Bound<'py, PyDict>> {
    let seq: Vec<bool> = fates.iter().map(|&b| b != 0).collect();
    let f = py.allow_threads(|| thinwire::channel::fit::fit(&seq, max_iter, tol));
    let d = PyDict::new(py);
    d.set_item("p", f.params.p)?;
    d.set_item("r", f.params.r)?;
    d.set_item("eg", f.params.eg)?;
    d.set_item("eb", f.params.eb)?;
    d.set_item("loglik", f.loglik)?;
    d.set_item("iterations", f.iterations)?;
    Ok(d)
}

/// `n` frame fates (bytes, 1 = lost) drawn from a Gilbert–Elliott model.
#[pyfunction]
fn sample_gilbert_elliott<'py>(
    py: Python<'py>,
    p: f64,
    r: f64,
    eg: f64,
    eb: f64,
    n: usize,
    seed: u64,
) -> Bound<'py, PyBytes> {
    let m = thinwire::channel::fit::GeParams { p, r, eg, eb };
    let v = thinwire::channel::fit::sample(&m, n, &mut thinwire::rng::Rng::stream(seed, 0, "fit-channel"));
    PyBytes::new(py, &v.iter().map(|&x| x as u8).collect::<Vec<u8>>())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_gilbert_elliott, m)?)?;
    m.add_function(wrap_pyfunction!(sample_gilbert_elliott, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(path_overrides, m)?)?;
    m.add_function(wrap_pyfunction!(write_trace, m)?)?;
    m.add_function(wrap_pyfunction!(analysis::analyze_capture, m)?)?;
    m.add("CaptureError", m.py().get_type::<analysis::CaptureError>())?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    #[cfg(target_os = "linux")]
    {
        m.add_function(wrap_pyfunction!(emulate::emulate, m)?)?;
        m.add_function(wrap_pyfunction!(emulate::replay, m)?)?;
        m.add_function(wrap_pyfunction!(emulate::proxy_daemon, m)?)?;
        m.add("EmulateError", m.py().get_type::<emulate::EmulateError>())?;
    }
    // How the library was compiled (build.rs): "plain", "profile-guided" or
    // "instrumented".
    m.add("BUILD", env!("THINWIRE_BUILD"))?;
    m.add("TRACE_LAYERS", thinwire::trace::LAYERS.to_vec())?;
    m.add("TRACE_EVENTS", thinwire::trace::EVENTS.to_vec())?;
    m.add("TRACE_NODES", thinwire::trace::NODES.to_vec())?;
    m.add("TRACE_DIRS", thinwire::trace::DIRS.to_vec())?;
    // What each (layer, event) of a trace means: one description (trace/mod.rs).
    let docs = pyo3::types::PyList::empty(m.py());
    for d in thinwire::trace::EVENT_DOCS {
        let e = PyDict::new(m.py());
        e.set_item("layer", d.layer)?;
        e.set_item("event", d.event)?;
        e.set_item("node", d.node)?;
        e.set_item("meaning", d.meaning)?;
        e.set_item("columns", d.columns)?;
        e.set_item("value", d.value)?;
        e.set_item("unit", d.unit)?;
        docs.append(e)?;
    }
    m.add("TRACE_EVENT_DOCS", docs)?;
    // What each result field is: name, unit, kind (metric / info / hidden), the
    // summary table's label and group, doc. Sweeps and the command line read it.
    let fields = PyDict::new(m.py());
    fields.set_item("flow", to_py(m.py(), &thinwire::engine::FlowResult::FIELDS)?)?;
    fields.set_item("link", to_py(m.py(), &thinwire::link::wireless::LinkStats::FIELDS)?)?;
    fields.set_item("proxy", to_py(m.py(), &thinwire::proxy::ProxyStats::FIELDS)?)?;
    m.add("RESULT_FIELDS", fields)?;
    Ok(())
}
