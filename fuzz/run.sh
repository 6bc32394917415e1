#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 30): the Rust targets with
# cargo-fuzz (libFuzzer, coverage-guided, overflow checks and debug assertions on;
# no sanitizer, so it builds on the stable toolchain with RUSTC_BOOTSTRAP), the
# Python parsers with atheris. Seeds come from fuzz/seeds/TARGET (committed, small);
# what the fuzzer finds goes to a scratch corpus ($FUZZ_CORPUS, default
# /tmp/thinwire-fuzz-corpus) so the repository stays small. A crash fails the run
# and leaves its input in fuzz/artifacts/TARGET: turn it into a regression test.
# The configuration targets use a dictionary of the schema's tokens (dicts/).
#   bash fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-30}
shift || true
rust_targets=(capture packet scenario daemon_config delivery_trace replay)
py_targets=(sender_state sweep_file)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${rust_targets[@]}" "${py_targets[@]}")
corpus=${FUZZ_CORPUS:-/tmp/thinwire-fuzz-corpus}
py=${PYTHON:-../.venv/bin/python}
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked -q
"$py" -c "import atheris" 2>/dev/null || "$py" -m pip install -q atheris
built=0
for t in "${targets[@]}"; do
  mkdir -p "$corpus/$t" "artifacts/$t"
  log="$corpus/$t.$$.log"  # one per run: campaigns may run side by side
  if [[ " ${rust_targets[*]} " == *" $t "* ]]; then
    if [ $built = 0 ]; then cargo fuzz build -s none -a >/dev/null 2>&1 || cargo fuzz build -s none -a; built=1; fi
    echo "fuzz: $t for ${secs}s"
    set +e
    dict=()
    case $t in scenario | daemon_config) dict=(-dict=dicts/toml.dict) ;; esac
    cargo fuzz run -s none -a "$t" "$corpus/$t" "seeds/$t" -- \
      -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 "${dict[@]}" \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
  else
    echo "fuzz: $t for ${secs}s"
    set +e
    "$py" "py/$t.py" "$corpus/$t" "seeds/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
  fi
  grep -a -E "^stat::(number_of_executed_units|new_units_added)" "$log" || true
  if [ $rc -ne 0 ]; then
    grep -a -E -m 5 "panicked|Error|SUMMARY|Traceback|==[0-9]+==" "$log" || tail -20 "$log"
    echo "fuzz: $t crashed (exit $rc); its input is in fuzz/artifacts/$t/"
    exit 1
  fi
done
echo "fuzz: ${#targets[@]} passed, 0 failed"
