# Entry points used by the README and .ci/run. Each target does its own set-up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.deps-ok

.PHONY: demo test build venv bench clean cargo-test py-test lint fuzz pgo

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "maturin>=1.5,<2" "polars>=1.0" "numpy>=1.24" "dask[distributed]>=2024.1" "tqdm>=4.60" "matplotlib>=3.7" "pytest>=7" "mypy>=1.8"
	touch $(STAMP)

venv: $(STAMP)

build: $(STAMP)
	$(VENV)/bin/maturin develop --release -q

demo: build
	$(VENV)/bin/thinwire run scenarios/shared-link-sr.toml

cargo-test:
	cargo test --release -q --workspace

py-test: build
	$(PY) -m pytest -q tests

test: cargo-test py-test

# Every fuzz target for FUZZ_SECONDS each (cargo-fuzz and atheris; fuzz/run.sh).
FUZZ_SECONDS ?= 20
fuzz: build
	bash fuzz/run.sh $(FUZZ_SECONDS)

# Format and lint checks (run by .ci/run before the tests).
lint: $(STAMP)
	$(PY) -m pip install -q "ruff>=0.6"
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --release -q -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc -p thinwire --no-deps -q
	cargo build -q -p thinwire --no-default-features   # the model layer builds without the simulator
	$(VENV)/bin/ruff format --check -q .
	$(VENV)/bin/ruff check -q .

# A profile-guided build into .venv (opt-in; needs `rustup component add
# llvm-tools`; bench/pgo.py). `make build` puts the plain build back.
pgo: $(STAMP)
	$(PY) bench/pgo.py --install

bench: build
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) target
