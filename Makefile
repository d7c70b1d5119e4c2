# blklab: build, run and test. See README.md.
#
#   make scenario [SCENARIO=name] [RUN_ARGS=...]
#                                   build what is missing, run scenarios/<name>.toml
#                                   (RUN_ARGS: blklab run's options, e.g. "--jobs 1 --short")
#   make test                       build everything and run every test
#   make test-full                  run and check every scenario's full form (hours)
#   make test-host-debian13         the same cells from a Debian 13 root's build (1-1.5 h)
#
# Steps: deps qemu cmake blkgen image. Builds that take minutes (QEMU, the
# guest image) are cached by the hash of their inputs under $(BLKLAB_CACHE)
# and linked into build/.

SHELL := /bin/bash
PYTHON := /usr/bin/python3
BLKLAB_CACHE ?= $(HOME)/.cache/blklab
BUILD := $(CURDIR)/build
CMAKE_BUILD := $(BUILD)/cmake
# The guest kernel of `make image`: <series>-<flavour> (guest-images/
# kernel-series), or a flavour of the default series.
KERNEL ?= amd64
# The images make test builds: every flavour of the default series
# (tests/e2e/test_flavours.py boots them), the amd64 flavour of each other
# series (tests/e2e/test_kernels.py boots each once) and 6.1's cloud-amd64,
# the one flavour without a driver (AHCI) that test_flavours.py is refused.
IMAGES := amd64 cloud-amd64 rt-amd64 6.1-amd64 6.1-cloud-amd64 5.10-amd64
SCENARIO ?= default
RUN_ARGS ?=
JOBS ?= $(shell nproc)
export BLKLAB_CACHE
# Fuzzing (libFuzzer, clang) and sanitizer (ASan + UBSan) trees, apart from
# the release tree: `make fuzz [FUZZ_SECONDS=N]` fuzzes each target N seconds;
# `make test` runs each FUZZ_TEST_SECONDS from its corpus in tests/fuzz/;
# `make test SANITIZE=1` also runs the C++ unit tests under the sanitizers,
# builds the sanitizer QEMU (build/qemu-asan, `make qemu-asan`) and runs the
# qtests and a short end-to-end scenario on it (test-sanitize-qemu).
FUZZ_BUILD := $(BUILD)/cmake-fuzz
ASAN_BUILD := $(BUILD)/cmake-asan
FUZZ_TARGETS := devmodel_abi_fuzz devmodel_profile_fuzz
FUZZ_SECONDS ?= 600
FUZZ_TEST_SECONDS ?= 40
# Device fuzzing through qtest (tests/fuzz/qtest/): NVMe, AHCI, PIIX IDE and
# virtio-blk with a device model, on the QEMU in BLKLAB_QEMU_DIR (default
# build/qemu; build/qemu-asan is the sanitizer build). `make test` runs the
# harness's self-test, then each family's checked-in inputs and a fixed
# number of fuzzed runs, the four families at once (a run mostly waits for
# QEMU's answers and its idle checks, not for a CPU: about 100 s of CPU in
# six minutes of wall time, one family after another, on a loaded host);
# `make fuzz` fuzzes each family FUZZ_SECONDS as well.
QTEST_FUZZ := $(PYTHON) tests/fuzz/qtest/qtest_fuzz.py
QTEST_FUZZ_FAMILIES := nvme ahci ide virtio-blk
QTEST_FUZZ_TEST_RUNS ?= nvme:150 ahci:40 ide:55 virtio-blk:60
# make test fuzzes from a fixed seed, a fixed number of runs, without
# coverage feedback (which events a run logs depends a little on the host)
# and without a slow host (null-co latency-ns is host time), so that every
# run of it tries the same inputs (it prints their sha1) with the same
# outcome on any machine, loaded or not; a new
# crash shows up in `make fuzz`, which draws a new seed each time and keeps
# slow hosts, rather than at random in someone's test run. Checked-in inputs
# (regressions, corpus) keep their slow hosts.
QTEST_FUZZ_TEST_SEED ?= 1
SANITIZE ?=

# Every Debian package blklab needs to build, run and test.
DEB_PACKAGES := \
	build-essential ccache cmake ninja-build meson pkg-config flex bison dpkg-dev \
	libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev \
	busybox-static fio blktrace cpio kmod zstd xz-utils git debootstrap \
	liburing-dev libaio-dev \
	libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-dev llvm linux-perf \
	python3-pytest python3-pytest-xdist python3-venv python3-numpy python3-scipy python3-jinja2 \
	python3-jsonschema python3-rich python3-matplotlib chromium mkdocs python3-yaml \
	libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients python3-libvirt python3-distributed

.PHONY: all deps qemu cmake blkgen image images apps scenario test test-unit test-qtest test-e2e test-short-forms test-full clean \
	docs reference \
	test-host-debian13 \
	bench-device bench-io-path bench-blkgen bench-determinism bench-vcpu-clocks bench-cpu-rate \
	bench-cpu-paths bench-pause
.PHONY: fuzz-build fuzz test-fuzz fuzz-qtest test-qtest-fuzz cmake-asan test-sanitize qemu-asan test-sanitize-qemu

all: qemu image

deps:
	@missing=$$(dpkg-query -W -f='$${db:Status-Abbrev} $${Package}\n' $(DEB_PACKAGES) 2>/dev/null \
	    | awk '$$1 == "ii" {print $$2}' | sort -u | comm -13 - <(printf '%s\n' $(DEB_PACKAGES) | sort -u)); \
	if [ -n "$$missing" ]; then \
	    echo "deps: installing" $$missing; \
	    if [ ! -f /var/lib/apt/lists/.blklab-updated ]; then \
	        apt-get update -q && touch /var/lib/apt/lists/.blklab-updated; \
	    fi; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else \
	    echo "deps: all $(words $(DEB_PACKAGES)) packages present"; \
	fi
	@# libvirtd needs the QEMU user that Debian's libvirt-daemon-system would
	@# create; blklab does not install that package (it pulls in systemd).
	@getent passwd libvirt-qemu >/dev/null || \
	    useradd --system --no-create-home --home-dir /var/lib/libvirt \
	        --shell /usr/sbin/nologin --user-group libvirt-qemu

qemu: deps
	qemu-patches/build-qemu.sh

# QEMU and libdevmodel with ASan and UBSan, cached apart (build/qemu-asan).
qemu-asan: deps
	BLKLAB_QEMU_SANITIZE=1 qemu-patches/build-qemu.sh

cmake: deps
	scripts/configure-cmake.sh $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(CMAKE_BUILD) -j $(JOBS)

blkgen: cmake

# The image is built in its own pinned root (guest-images/build-root.sh),
# blkgen included; nothing of the host's build goes into it.
image: deps
	guest-images/build-image.sh --kernel $(KERNEL)

images: deps
	@for k in $(IMAGES); do \
	    guest-images/build-image.sh --kernel $$k || exit 1; \
	done

# The applications' root a scenario's [guest] apps mounts (one image for
# every kernel), built in the same pinned root from guest-images/apps.lock.
apps: deps
	guest-images/build-apps.sh

# The image of the kernel the scenario's [guest] kernel names; an invalid
# scenario stops here with blklab's message.
scenario: qemu blkgen
	@kernel=$$(cd harness && $(PYTHON) -m blklab validate --kernel ../scenarios/$(SCENARIO).toml) && \
	    $(MAKE) --no-print-directory image KERNEL=$$kernel
	cd harness && $(PYTHON) -m blklab run $(RUN_ARGS) ../scenarios/$(SCENARIO).toml

test: qemu images apps
	$(MAKE) test-unit
	$(MAKE) test-qtest
	$(MAKE) test-qtest-fuzz
	$(MAKE) test-e2e
	$(if $(filter 1,$(SANITIZE)),$(MAKE) test-sanitize-qemu)

test-unit: cmake
	$(MAKE) docs
	ctest --test-dir $(CMAKE_BUILD) --output-on-failure -j $(JOBS)
	cd harness && $(PYTHON) -m pytest -q -n $(JOBS) tests
	$(PYTHON) -m pytest -q -n $(JOBS) tests/bad-input
	$(PYTHON) -m pytest -q tests/host
	$(PYTHON) -m pytest -q tests/bench
	$(MAKE) test-fuzz
	$(if $(filter 1,$(SANITIZE)),$(MAKE) test-sanitize)

# The documentation site, from every tracked Markdown file, built offline by
# Debian's mkdocs into build/docs/site; a link to a missing page fails it.
# (harness/tests/test_docs.py checks every link's file and #anchor and the
# getting-started guide's commands.)
docs: deps
	cd harness && $(PYTHON) -m blklab.docs_site $(BUILD)/docs

# The reference pages in docs/reference/, generated from the code that
# checks each key; commit the result (harness/tests/test_reference.py fails
# when the committed pages differ).
reference: cmake
	cd harness && BLKLAB_BUILD=$(BUILD) $(PYTHON) -m blklab reference --out $(CURDIR)/docs/reference

# libFuzzer targets (devmodel/fuzz/), built with clang, ASan and UBSan.
fuzz-build: deps
	CC=clang CXX=clang++ scripts/configure-cmake.sh $(FUZZ_BUILD) \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBLKLAB_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)

# Every checked-in input (regressions included), then FUZZ_TEST_SECONDS of
# fuzzing per target; new inputs stay under build/, crashes fail the target.
test-fuzz: fuzz-build
	tests/fuzz/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_TEST_SECONDS) $(FUZZ_TARGETS)

fuzz: fuzz-build
	tests/fuzz/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)
	$(MAKE) fuzz-qtest

# The patched QEMU's disk devices through qtest; needs `make qemu` (or
# qemu-asan with BLKLAB_QEMU_DIR=build/qemu-asan). Every family runs even if
# one fails; failing inputs are kept under build/fuzz/qtest/<family>/.
test-qtest-fuzz:
	$(QTEST_FUZZ) selftest
	@mkdir -p $(BUILD)/fuzz/qtest; status=0; pids=; \
	for f in $(QTEST_FUZZ_TEST_RUNS); do \
	    $(QTEST_FUZZ) check --seed $(QTEST_FUZZ_TEST_SEED) --runs $${f##*:} \
	        --no-slow-host $${f%%:*} 0 >$(BUILD)/fuzz/qtest/check-$${f%%:*}.log 2>&1 & \
	    pids="$$pids $$!"; \
	done; \
	for p in $$pids; do wait $$p || status=1; done; \
	for f in $(QTEST_FUZZ_TEST_RUNS); do cat $(BUILD)/fuzz/qtest/check-$${f%%:*}.log; done; \
	exit $$status

fuzz-qtest:
	@status=0; for f in $(QTEST_FUZZ_FAMILIES); do \
	    $(QTEST_FUZZ) fuzz $$f $(FUZZ_SECONDS) || status=1; \
	done; exit $$status

# devmodel and blkgen with -fsanitize=address,undefined (dynamic blkgen).
cmake-asan: deps
	scripts/configure-cmake.sh $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBLKLAB_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)

test-sanitize: cmake-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)
	BLKLAB_CMAKE_BUILD=$(ASAN_BUILD) ASAN_OPTIONS=detect_leaks=1 \
	    $(PYTHON) -m pytest -q tests/bad-input/test_bad_profiles.py tests/bad-input/test_bad_jobs.py

test-qtest:
	tests/qtest/run-qtests.sh

# The qtests and a short scenario (tests/e2e/test_sanitizers.py, skipped
# without BLKLAB_SANITIZE_E2E=1) on the sanitizer QEMU; the runtime options and
# the report lines that fail a run are in tests/sanitizers.env.
test-sanitize-qemu: qemu-asan image cmake
	BLKLAB_QEMU_DIR=$(BUILD)/qemu-asan tests/qtest/run-qtests.sh
	BLKLAB_SANITIZE_E2E=1 $(PYTHON) -m pytest -q tests/e2e/test_sanitizers.py

# Every scenario's full form, run and checked, with one summary table
# (results/test-full/<date>/summary.md). Not part of `make test`: hours of
# VM time on a 2-core machine. TEST_FULL_ARGS: scenario names, --jobs N,
# --resume --out results/test-full/<date> (go on with a run cut short).
test-full: qemu images apps
	$(PYTHON) tests/full/run-full.py $(TEST_FULL_ARGS)

# The second supported host: a Debian 13 root, made by debootstrap from this
# machine's own apt entries and kept in $(BLKLAB_CACHE)/host-debian13, builds
# a fresh clone of HEAD from source (the applications' image too) and runs
# tests/host/debian13.toml and debian13-app.toml (one MariaDB cell); their
# cells must be the bytes this host's build gives (tests/host/debian13.sh).
# Not part of `make test`: QEMU's build in the root alone takes 17-38 min.
# HOST_DEBIAN13_ARGS: --jobs N (cells in parallel), --fresh-downloads.
test-host-debian13: deps
	tests/host/debian13.sh $(HOST_DEBIAN13_ARGS)

# The slowest tests are listed so that the time budget can be watched.
# E2E_WORKERS pytest-xdist workers share the tests out, a module (or a
# scenario's short form) at a time, longest first (tests/e2e/conftest.py):
# one worker left a 2-core machine's second core idle for much of the run.
E2E_WORKERS ?= 2
test-e2e:
	$(PYTHON) -m pytest -q --durations=25 -n $(E2E_WORKERS) --dist loadgroup \
	    -m "not long_short_form" tests/e2e

# Every scenario's short form with its expectations on three seeds, the
# long ones make test leaves out (tests/e2e/test_scenarios.py,
# LONG_SHORT_FORMS) included: 45 min on the idle 2-core machine
# (scenarios/README.md, "The short form").
test-short-forms: qemu images apps
	$(PYTHON) -m pytest -q --durations=25 -n $(E2E_WORKERS) --dist loadgroup \
	    tests/e2e/test_scenarios.py

# Benchmarks print measurements; they are never part of `make test`.
# Builds (once, cached) the stock QEMU it compares with: the same source with
# only the series' build patches.
bench-device: qemu image
	$(PYTHON) tests/bench/device-cost.py

# Host cost per guest I/O (wall, and perf stat's instructions, task-clock and
# context switches of QEMU) on NVMe: stock QEMU against deterministic mode
# with a zero-latency, a 100 us and the default scenario's drive, the steps
# alternated. Builds (once, cached) the same stock QEMU as bench-device.
bench-io-path: qemu image cmake
	$(PYTHON) tests/bench/io-path-cost.py

bench-blkgen: qemu image
	$(PYTHON) tests/bench/blkgen-vs-fio.py

# Builds (once, cached) QEMU without the determinism patches to compare with.
bench-determinism: qemu image
	$(PYTHON) tests/bench/determinism-cost.py

# The default scenario with shared and with parallel vCPU clocks, side by side.
bench-vcpu-clocks: qemu image
	$(PYTHON) tests/bench/vcpu-clocks-cost.py

# Host seconds per cell at the calibrated rate with parallel clocks: a PAUSE
# of one instruction against [guest] pause_ns = 40, side by side.
bench-pause: qemu image
	$(PYTHON) tests/bench/pause-cost.py --short

# Guest instructions per polled io_uring read on each kernel, and the rate at
# which they take the published core's time (docs/determinism.md).
bench-cpu-rate: qemu images
	$(PYTHON) tests/bench/cpu-rate.py

bench-cpu-paths: qemu images
	$(PYTHON) tests/bench/cpu-paths.py

clean:
	rm -rf $(BUILD)
