//! Structured logs: one JSON object per line on standard output, with `ts` (Unix
//! seconds), `event` and the event's fields; flushed per line, so a supervisor
//! (systemd's journal, a pipe) sees each event as it happens.
use std::io::Write;

pub enum Value {
    Str(String),
    Int(i64),
    Float(Option<f64>),
    Bool(bool),
    /// Already JSON.
    Raw(String),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(v as i64)
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Int(v as i64)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<Option<f64>> for Value {
    fn from(v: Option<f64>) -> Self {
        Value::Float(v)
    }
}

fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn render(v: &Value) -> String {
    match v {
        Value::Str(s) => quote(s),
        Value::Int(i) => i.to_string(),
        Value::Float(Some(f)) if f.is_finite() => format!("{f:.3}"),
        Value::Float(_) => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Raw(r) => r.clone(),
    }
}

/// A JSON object of the fields, in order.
pub fn object(fields: &[(&str, Value)]) -> String {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{}", quote(k), render(v))).collect();
    format!("{{{}}}", body.join(","))
}

/// JSON lines on standard output, and with `--out` also in `DIR/daemon.log`.
pub struct Log {
    tee: Option<std::fs::File>,
}

impl Log {
    pub fn stdout() -> Log {
        Log { tee: None }
    }
    pub fn also_to(&mut self, f: std::fs::File) {
        self.tee = Some(f);
    }
    pub fn event(&mut self, event: &str, fields: &[(&str, Value)]) {
        let ts =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let mut line = format!("{{\"ts\":{ts:.3},\"event\":{}", quote(event));
        for (k, v) in fields {
            line.push_str(&format!(",{}:{}", quote(k), render(v)));
        }
        line.push('}');
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        if let Some(f) = &mut self.tee {
            let _ = writeln!(f, "{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn objects_are_json() {
        let o = super::object(&[("a", "x\"y\n".into()), ("b", 3u64.into()), ("c", None.into()), ("d", true.into())]);
        assert_eq!(o, r#"{"a":"x\"y\u000a","b":3,"c":null,"d":true}"#);
    }
}
