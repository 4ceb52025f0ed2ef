# SPDX-License-Identifier: GPL-2.0
#
# dfkv top-level build.  The kernel module builds through Kbuild
# (make -C $(KDIR) M=$(CURDIR)); the client library, the tools and the
# selftests are plain userspace builds.  V=1, W=1 and C=2 pass through to
# Kbuild.
#
#   make              module, libdfkv, tools, selftests
#   make deps         install the Debian packages everything needs
#   make check        native unit tests, the kselftests in a VM, the disk
#                     crash test, the engine connectors, then the
#                     kselftests (all but the churn run) and the crash
#                     test on the debug kernel (vmtest-debug)
#   make vmtest-debug the kselftests but the churn run, and the crash test,
#                     on the debug kernel (KASAN, lockdep, kmemleak, fault
#                     injection)
#   make fuzz         dfkv_fuzz on the debug kernel for FUZZ_SECONDS
#   make demo         the main job: a node in a VM storing and loading blocks
#   make check-connectors  only the engine connectors (real engine packages
#                     on the host, dfkv.ko nodes in a VM)
#   make lint         checkpatch --strict and sparse on kmod/; clang-tidy
#                     (.clang-tidy) and cppcheck on lib/ and tools/
#   make nlgen        regenerate the code generated from uapi/dfkv.yaml
#                     (and the Python error codes from lib/dfkv.h)
#   make bench        benchmarks in a VM (table + build/bench.json)
#   make fleet-sim    the membership directory at fleet scale, on the host:
#                     etcd, 3 mdsd, simulated agents and clients, libdfkv's
#                     ring (table + build/fleet-sim.json; FLEET_ARGS)
#   make warm-restart a node from modprobe to serving a disk image of 1 M
#                     records, in a VM (build/warm-restart.json; WARM_ARGS)
#   make fleet        the churn run's long form in a VM: 8 nodes, etcd of
#                     3, 3 mdsd, 4 clients under load through node and
#                     directory failures (table + build/fleet-churn.json)
#   make soak         ten minutes of mixed load, faults and restarts in a VM
#   make vm-shell     interactive shell in the test VM
#   make install      module (to /lib/modules), library, headers, tools
#   make dkms-install register, build and install with DKMS

SHELL := /bin/bash
KDIR ?= $(shell tools/vm/kdir)
KVER := $(notdir $(patsubst %/,%,$(dir $(realpath $(KDIR)))))
DFKV_VERSION := $(shell sed -n 's/^DFKV_VERSION := //p' kmod/Kbuild)
PREFIX ?= /usr/local
DESTDIR ?=
KSRC_TAR ?= /usr/src/linux-source-6.1.tar.xz
KSRC := $(CURDIR)/build/ksrc
VM_RUN := tools/vm/vm-run

export KDIR KSRC DFKV_VERSION PREFIX DESTDIR

.PHONY: all module lib tools selftests ksrc deps unit vmtest module-debug vmtest-debug vmtest-debug-api check check-connectors lint nlgen tidy cppcheck \
	demo bench fleet fleet-sim warm-restart soak fuzz vm-shell install dkms-install clean

all: module lib tools selftests

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

lib:
	$(MAKE) -C lib

tools: lib
	$(MAKE) -C tools

# dfkv_disk.sh attaches an image that tools/bench's dfkv-mkimage writes.
selftests: lib ksrc
	$(MAKE) -C selftests
	$(MAKE) -C tools/bench $(CURDIR)/build/bench/dfkv-mkimage

# Test harness, checkpatch and selftest headers come from Debian's kernel
# source package, unpacked once; never copied into the repository.
ksrc: $(KSRC)/.stamp
$(KSRC)/.stamp: $(KSRC_TAR)
	mkdir -p $(KSRC)
	tar -xJf $(KSRC_TAR) -C $(KSRC) --strip-components=1 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/tools/testing/selftests/kselftest \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	touch $@

deps:
	tools/install-deps

# The discovery unit test drives a real mdsd, so tools come first.
unit: lib tools ksrc
	$(MAKE) -C selftests/unit run

# The kselftests in one VM, then the disk crash test (two boots).
vmtest: all
	@mkdir -p build
	$(VM_RUN) --numa 2 --disk 256M --timeout 3600 -- \
		tools/vm/run-selftests build/vm-tap.log; \
	vm=$$?; selftests/crash/run build/crash-tap.log; crash=$$?; \
	[ $$vm -eq 0 ] && [ $$crash -eq 0 ]

# The same kselftests (but the churn run: selftests/Makefile's
# SUITE=debug) and crash test on the debug kernel
# (tools/vm/debug-kernel: KASAN, lockdep, kmemleak, KFENCE, UBSAN, fault
# injection; built once per machine and cached), with dfkv.ko built
# against it apart from the distribution kernel's; then a kmemleak scan
# after the suite, with the module unloaded.  Guest log:
# build/vm/dmesg-debug.log.
DEBUG_MOD := $(CURDIR)/build/debug/mod
DEBUG_KO := $(DEBUG_MOD)/kmod/dfkv.ko
DEBUG_SUITE := tools/vm/run-selftests build/vm-debug-tap.log; r=$$?; tools/vm/kmemleak-check "after the suite" >>build/vm-debug-tap.log || r=1; exit $$r

module-debug:
	@dk=$$(tools/vm/debug-kernel) && mkdir -p $(DEBUG_MOD) && \
	cp -a --update Kbuild kmod uapi $(DEBUG_MOD)/ && \
	$(MAKE) -C $$dk/src M=$(DEBUG_MOD) modules

vmtest-debug: all module-debug
	@mkdir -p build/vm
	DFKV_KO=$(DEBUG_KO) $(VM_RUN) --debug --numa 2 --disk 256M --timeout 5400 \
		--log build/vm/dmesg-debug.log -- sh -c 'DFKV_SUITE=debug $(DEBUG_SUITE)'; \
	vm=$$?; DFKV_VM_DEBUG=1 DFKV_KO=$(DEBUG_KO) selftests/crash/run build/crash-debug-tap.log; \
	crash=$$?; [ $$vm -eq 0 ] && [ $$crash -eq 0 ]

# The C kselftests alone on the debug kernel (the module's interfaces, the
# fuzzer and fault injection; selftests/Makefile's SUITE=api) in one
# boot, then the kmemleak scan: a quick pass while changing kernel code.
vmtest-debug-api: all module-debug
	@mkdir -p build/vm
	DFKV_KO=$(DEBUG_KO) $(VM_RUN) --debug --numa 2 --disk 256M --timeout 2400 \
		--log build/vm/dmesg-debug.log -- sh -c 'DFKV_SUITE=api $(DEBUG_SUITE)'

# dfkv_fuzz again and again on the debug kernel, one seed after another,
# for FUZZ_SECONDS (FUZZ_SEED: the first seed, default the time); prints
# each run's executions and the totals, and fails on a failed run, any
# kernel report or a leak.
FUZZ_SECONDS ?= 600
fuzz: all module-debug
	@mkdir -p build/vm
	DFKV_KO=$(DEBUG_KO) $(VM_RUN) --debug --timeout $$(($(FUZZ_SECONDS) + 900)) \
		--log build/vm/dmesg-fuzz.log -- tools/vm/fuzz $(FUZZ_SECONDS) $(FUZZ_SEED)

# Both kernels: the distribution kernel's stages (unit, kselftests, crash
# test, connectors), then the same kselftests and crash test on the debug
# kernel (vmtest-debug); a debug kernel that cannot be built leaves its
# logs empty, which tap-summary counts as a failure.
CHECK_LOGS := build/unit-tap.log build/vm-tap.log build/crash-tap.log \
	build/connectors-tap.log build/vm-debug-tap.log build/crash-debug-tap.log
check:
	@mkdir -p build
	@rm -f $(CHECK_LOGS)
	@$(MAKE) --no-print-directory unit 2>&1 | tee build/unit-tap.log; \
	unit=$${PIPESTATUS[0]}; \
	$(MAKE) --no-print-directory vmtest; vm=$$?; \
	selftests/connectors/run build/connectors-tap.log; conn=$$?; \
	$(MAKE) --no-print-directory vmtest-debug; dbg=$$?; \
	tools/tap-summary $(CHECK_LOGS); sum=$$?; \
	[ $$unit -eq 0 ] && [ $$vm -eq 0 ] && [ $$conn -eq 0 ] && [ $$dbg -eq 0 ] && \
		[ $$sum -eq 0 ]

# The netlink family's policies, ops table and enum names come from its
# YNL spec (tools/ynl-gen/dfkv-nlgen.py); the output is checked in, and
# the unit tests fail when it is stale.
nlgen:
	tools/ynl-gen/dfkv-nlgen.py

# clang-tidy over the userspace C, one file per target (make -j lint runs
# them in parallel); a file is checked again when it, a header or the
# config changed.
TIDY_SRCS := $(wildcard lib/*.c tools/*/*.c)
TIDY_FLAGS := -std=c11 -D_GNU_SOURCE -Iuapi -Ilib -Itools/common
build/tidy/%.ok: %.c .clang-tidy $(wildcard lib/*.h tools/*/*.h) uapi/linux/dfkv.h
	@command -v clang-tidy >/dev/null || { echo "clang-tidy missing: make deps"; exit 1; }
	@mkdir -p $(dir $@)
	clang-tidy --quiet $< -- $(TIDY_FLAGS)
	@touch $@

tidy: $(TIDY_SRCS:%.c=build/tidy/%.ok)
# The image writer includes the module's codec, built against the shim.
build/tidy/tools/bench/mkimage.ok: TIDY_FLAGS += -Iselftests/unit/kshim -Ikmod

# cppcheck's flow analysis (null pointers, leaks, uninitialized reads) of
# the same files; tools/lint/cppcheck.h spells out the libmnl loop macros
# it does not read from the system headers.
cppcheck:
	@command -v cppcheck >/dev/null || { echo "cppcheck missing: make deps"; exit 1; }
	cppcheck -q --std=c11 -D_GNU_SOURCE --enable=warning,portability \
		--inconclusive --error-exitcode=1 --inline-suppr -j2 \
		--suppress=missingIncludeSystem --include=tools/lint/cppcheck.h \
		-Iuapi -Ilib -Itools/common lib tools

# The engine connectors alone: the engines' real packages
# (tools/engines/setup-venvs) on the host, dfkv.ko nodes in a VM
# (selftests/connectors/run).
check-connectors: all
	@mkdir -p build
	selftests/connectors/run build/connectors-tap.log; conn=$$?; \
	tools/tap-summary build/connectors-tap.log && [ $$conn -eq 0 ]

lint: ksrc tidy cppcheck
	@command -v sparse >/dev/null || { echo "sparse missing: make deps"; exit 1; }
	$(KSRC)/scripts/checkpatch.pl --strict --no-tree --terse --show-types \
		--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES \
		-f $(filter-out %.mod.c,$(wildcard kmod/*.c)) kmod/*.h uapi/linux/dfkv.h
	$(MAKE) -C $(KDIR) M=$(CURDIR) C=2 W=1 modules 2>&1 | tee build/sparse.log; \
	! grep -E 'warning:|error:' build/sparse.log

# The main job in the VM, then an engine connector (LMCache, on the host)
# against a node in a second boot.
demo: all
	$(VM_RUN) --disk 256M -- tools/demo --transport $(or $(TRANSPORT),tcp)
	tools/demo-connector

# The churn run (selftests/dfkv_churn.sh, whose short form is in the
# kselftests) at 8 nodes, 1,000 keys a client and 6,000 operations a
# client between events; not in `make check`.  Guest log:
# build/vm/dmesg-fleet.log.
fleet: all
	@mkdir -p build/vm
	$(VM_RUN) --numa 2 --disk 256M --timeout 1800 --log build/vm/dmesg-fleet.log -- \
		env DFKV_CHURN_NODES=8 DFKV_CHURN_KEYS=1000 DFKV_CHURN_OPS=6000 \
		DFKV_CHURN_JSON=$(CURDIR)/build/fleet-churn.json \
		DFKV_REPO=$(CURDIR) DFKV_KO=$(CURDIR)/kmod/dfkv.ko \
		sh $(CURDIR)/selftests/dfkv_churn.sh

# Native, not in a VM and not in `make check`: tools/bench/fleet-sim
# --help lists FLEET_ARGS (--agents, --clients, --duration, ...).
fleet-sim: lib tools
	$(MAKE) -C tools/bench $(CURDIR)/build/bench/fleet-ring
	tools/bench/fleet-sim --json build/fleet-sim.json $(FLEET_ARGS)

# In a VM, not in `make check`: tools/bench/warm-restart --help lists
# WARM_ARGS (--records, --size, --every, ...).  Its image is on a tmpfs in
# the guest: N * 64 bytes of records (64 MiB at 1 M) within --mem.
warm-restart: all
	$(VM_RUN) --mem 2048 --timeout 1800 -- \
		tools/bench/warm-restart --json build/warm-restart.json $(WARM_ARGS)

# The VM stage (tools/bench/run), then the connectors on the host against
# a VM of their own (tools/bench/connectors: "connectors" in the JSON).
bench: all
	$(VM_RUN) --mem 2048 --disk 2G --timeout 3600 -- tools/bench/run build/bench.json
	tools/bench/connectors build/bench.json

# Not part of check: ten minutes of mixed load with disk faults and
# restarts (tools/soak/run); SOAK_SECONDS shortens or lengthens it, and
# DEBUG=1 runs it on the debug kernel (then kmemleak scans after it).
soak: all $(if $(DEBUG),module-debug)
	$(MAKE) -C tools/soak
	$(if $(DEBUG),DFKV_KO=$(DEBUG_KO)) $(VM_RUN) $(if $(DEBUG),--debug --log build/vm/dmesg-soak-debug.log) \
		--mem 2048 --disk 512M --timeout $$(( $(or $(SOAK_SECONDS),600) + 900 )) -- \
		tools/soak/run $(or $(SOAK_SECONDS),600)

vm-shell: all
	$(VM_RUN) --disk 256M --shell

install: all
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=extra modules_install
	depmod -a $(KVER)
	install -D -m 0644 uapi/linux/dfkv.h $(DESTDIR)$(PREFIX)/include/linux/dfkv.h
	install -D -m 0644 tools/udev/60-dfkv.rules $(DESTDIR)/etc/udev/rules.d/60-dfkv.rules
	install -D -m 0644 tools/systemd/mdsd.service $(DESTDIR)/etc/systemd/system/mdsd.service
	install -D -m 0644 tools/systemd/dfkv-node.service $(DESTDIR)/etc/systemd/system/dfkv-node.service
	[ -e $(DESTDIR)/etc/dfkv/mdsd.conf ] || \
		install -D -m 0644 tools/systemd/mdsd.conf $(DESTDIR)/etc/dfkv/mdsd.conf
	$(MAKE) -C lib install
	$(MAKE) -C tools install

dkms-install:
	rm -rf /usr/src/dfkv-$(DFKV_VERSION)
	mkdir -p /usr/src/dfkv-$(DFKV_VERSION)
	cp -r Kbuild Makefile dkms.conf kmod uapi tools /usr/src/dfkv-$(DFKV_VERSION)/
	dkms add -m dfkv -v $(DFKV_VERSION) || true
	dkms build -m dfkv -v $(DFKV_VERSION) -k $(KVER)
	dkms install -m dfkv -v $(DFKV_VERSION) -k $(KVER)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C lib clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests clean
	-$(MAKE) -C selftests/unit clean
	rm -rf build/vm build/*.log
