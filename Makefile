# Airlock top-level build.  See README.md; `make help` lists the targets.

BUILD ?= build
B := $(BUILD)

-include $(B)/config.mk

CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(WARN) $(OPT) -Ipolicy $(LIB_CFLAGS)

POLICY_SRCS := $(sort $(wildcard policy/al_*.c))
POLICY_OBJS := $(POLICY_SRCS:%.c=$(B)/%.o)
POLICY_HDRS := $(wildcard policy/*.h)
LIB := $(B)/libairlock.a

CTL_SRCS := policy/airlockctl.c
CTL := $(B)/airlockctl

ALERTD_SRCS := $(sort $(wildcard alertd/*.c))
ALERTD := $(B)/airlock-alertd

UNIT_SRCS := $(sort $(wildcard tests/unit/*.c))
UNIT_TESTS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%.t)

FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(B)/fuzz/%)
FUZZ_TIME ?= 600

WORKER_SRCS := $(sort $(wildcard worker/*.c))
WORKER := $(B)/airlock-worker
# configuration paths are at most 512 bytes (aw_config.c) and every path
# buffer is sized for that; snprintf still bounds each one

# The sandbox root file system: Python 3 and what it links, nothing else
# (no shell, no package manager run), from Debian's archive, built once.
ROOTFS := $(B)/worker-rootfs
ROOTFS_SUITE ?= bookworm
ROOTFS_MIRROR ?= http://deb.debian.org/debian
ROOTFS_PKGS = python3-minimal,libpython3.11-stdlib

MOD_SRCS := $(wildcard modules/*.c modules/*.h) modules/config
MOD_SO := $(B)/modules/ngx_http_airlock_module.so

PROVE ?= prove
PROVE_FLAGS ?= -r

.PHONY: all demo deps lib ctl alertd modules unit test asan fuzz fuzz-build \
        bench bench-match bench-proxy bench-llm bench-deny clean help \
        worker worker-rootfs bench-worker

all: lib ctl alertd modules unit worker

help:
	@echo "make            build libairlock, airlockctl, the nginx module"
	@echo "make deps       install the Debian packages (root), or say which"
	@echo "make demo       install what is missing, build, run the demo"
	@echo "make test       install what is missing, build, run every suite"
	@echo "make asan       the same suite built with ASan+UBSan (build-asan/)"
	@echo "make fuzz       run each libFuzzer target FUZZ_TIME seconds"
	@echo "make bench      run the benchmarks"
	@echo "make clean      remove build directories"

deps:
	@auto/deps

$(B)/config.mk: auto/configure auto/deps
	@auto/deps
	@SAN=$(SAN) CC=$(or $(CONFIG_CC),cc) auto/configure $(B)

lib: $(LIB)
ctl: $(CTL)
alertd: $(if $(ALERTD_SRCS),$(ALERTD))
modules: $(MOD_SO)
unit: $(UNIT_TESTS)
worker: $(WORKER)
worker-rootfs: $(ROOTFS)/.built

$(B)/policy/%.o: policy/%.c $(POLICY_HDRS) $(B)/config.mk
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(LIB): $(POLICY_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(CTL): $(CTL_SRCS) $(POLICY_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(CTL_SRCS) -o $@ $(LIB) $(LDFLAGS) $(LIB_LIBS)

$(ALERTD): $(ALERTD_SRCS) $(wildcard alertd/*.h) $(POLICY_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Ialertd $(ALERTD_SRCS) -o $@ $(LIB) $(LDFLAGS) \
	    $(LIB_LIBS)

$(WORKER): $(WORKER_SRCS) worker/aw.h $(POLICY_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Wno-format-truncation -Iworker $(WORKER_SRCS) \
	    -o $@ $(LIB) $(LDFLAGS) $(LIB_LIBS)

# extract: the listed packages and their dependencies unpacked, no
# maintainer script run; the mount points the sandboxes use are made here
# because the root is mounted read-only.
$(ROOTFS)/.built: Makefile
	@rm -rf $(ROOTFS) $(ROOTFS).tmp
	mmdebstrap --quiet --variant=extract --include=$(ROOTFS_PKGS) \
	    $(ROOTFS_SUITE) $(ROOTFS).tmp $(ROOTFS_MIRROR)
	cd $(ROOTFS).tmp && mkdir -p proc dev app/code app/data scratch tmp \
	    && rm -rf var/cache/apt var/lib/apt/lists/* etc/resolv.conf \
	       etc/hostname && chmod 755 . \
	    && test -x usr/bin/python3
	@touch $(ROOTFS).tmp/.built
	@mv $(ROOTFS).tmp $(ROOTFS)

$(B)/tests/unit/%.t: tests/unit/%.c tests/unit/tap.h $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Itests/unit $< -o $@ $(LIB) $(LDFLAGS) $(LIB_LIBS)

# The module is built by nginx's own build system from Debian's nginx-dev
# sources, configured with Debian's flags so the .so loads into the
# packaged nginx (--with-compat).  Our OPT comes after nginx's own -O, so
# the module is optimized like the library (and sanitized with it).
NGX_CC_OPT = $(WARN) -Wno-unused-parameter -Wno-shadow -Wno-format-nonliteral \
             -I$(CURDIR)/policy $(LIB_CFLAGS) $(OPT)
NGX_LD_OPT = $(LDFLAGS)

$(B)/nginx/Makefile: $(B)/config.mk modules/config
	@rm -rf $(B)/nginx
	@mkdir -p $(B)
	cp -r $(NGX_SRC) $(B)/nginx
	cd $(B)/nginx && AIRLOCK_LIB="$(CURDIR)/$(LIB)" \
	    AIRLOCK_LIBS="$(LIB_LIBS)" ./configure $(NGX_CONF_FLAGS) \
	    --add-dynamic-module=$(CURDIR)/modules \
	    --with-cc-opt="$(NGX_CC_OPT)" --with-ld-opt="$(NGX_LD_OPT)" \
	    > configure.log 2>&1 || { tail -20 configure.log; exit 1; }

$(MOD_SO): $(B)/nginx/Makefile $(MOD_SRCS) $(LIB)
	$(MAKE) -s -C $(B)/nginx -f objs/Makefile modules
	@mkdir -p $(@D)
	cp $(B)/nginx/objs/ngx_http_airlock_module.so $@

# Fuzzing: clang + libFuzzer, ASan and UBSan, policy sources built in.
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Ipolicy $(LIB_CFLAGS) \
              -fsanitize=fuzzer,address,undefined
$(B)/fuzz/%: tests/fuzz/%.c $(POLICY_SRCS) $(POLICY_HDRS) $(B)/config.mk
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) $< $(POLICY_SRCS) -o $@ $(LIB_LIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@for f in $(FUZZ_BINS); do \
	    n=$$(basename $$f); mkdir -p $(B)/fuzz/corpus/$$n; \
	    echo "== $$n for $(FUZZ_TIME)s"; \
	    $$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	        $(B)/fuzz/corpus/$$n tests/fuzz/seeds/$$n 2>&1 \
	        | grep -E '^(stat::|#[0-9]+ +DONE|==[0-9]+==ERROR)' ; \
	done

demo: all
	@auto/deps --demo
	AIRLOCK_BUILD=$(CURDIR)/$(B) conf/demo/run.sh

test: all fuzz-build worker-rootfs
	AIRLOCK_BUILD=$(CURDIR)/$(B) $(PROVE) $(PROVE_FLAGS) tests $(B)/tests

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 test

$(B)/bench/%: tests/bench/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $< -o $@ $(LIB) $(LDFLAGS) $(LIB_LIBS)

bench-match: $(B)/bench/bench_match
	$(B)/bench/bench_match

bench-proxy: all
	AIRLOCK_BUILD=$(CURDIR)/$(B) perl tests/bench/proxy.pl

bench-llm: all
	AIRLOCK_BUILD=$(CURDIR)/$(B) perl tests/bench/llm.pl

bench-deny: all
	AIRLOCK_BUILD=$(CURDIR)/$(B) perl tests/bench/deny.pl

bench-worker: all worker-rootfs
	AIRLOCK_BUILD=$(CURDIR)/$(B) perl tests/bench/worker.pl

bench: bench-match bench-proxy bench-llm bench-deny bench-worker

clean:
	rm -rf build build-asan
