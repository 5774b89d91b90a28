# Airlock top-level build.  See README.md; `make help` lists the targets.

BUILD ?= build
# absolute, so that BUILD=/tmp/x and BUILD=build name the same things to
# nginx's build, the tests and the sub-makes
B := $(abspath $(BUILD))

# auto/deps SET installs what a target needs (DEPS=true skips it: the
# package build, a machine prepared by hand)
DEPS ?= auto/deps

# make test's and make deb's builds run JOBS jobs at once (one per CPU)
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# goals that need no configuration do not make one
NOCONF_GOALS := help clean deps bench-deps down
ifneq ($(filter-out $(NOCONF_GOALS),$(or $(MAKECMDGOALS),all)),)
-include $(B)/config.mk
endif

CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(WARN) $(OPT) -Ipolicy $(LIB_CFLAGS)

POLICY_SRCS := $(sort $(wildcard policy/al_*.c))
POLICY_OBJS := $(POLICY_SRCS:%.c=$(B)/%.o)
POLICY_HDRS := $(wildcard policy/*.h)
LIB := $(B)/libairlock.a

CTL_SRCS := policy/airlockctl.c
CTL := $(B)/airlockctl

ALERTD_SRCS := $(sort $(wildcard alertd/*.c))
ALERTD := $(B)/airlock-alertd

# the Redis client code the agent and the worker share (hiredis: not in
# libairlock, which the nginx module links)
REDIS_SRCS := $(sort $(wildcard redis/*.c))
REDIS_HDRS := $(wildcard redis/*.h)

AGENT_SRCS := $(sort $(wildcard agent/ag_*.c))
AGENT := $(B)/airlock-agent
AIRLOCK_CLI := $(B)/airlock

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
# (no shell, no package manager run), from Debian's archive, built once:
# from the suite, its -updates and its -security, so that the Python and
# the libraries it links (libssl) have Debian's security fixes as of the
# build.
ROOTFS := $(B)/worker-rootfs
ROOTFS_SUITE ?= bookworm
ROOTFS_MIRROR ?= http://deb.debian.org/debian
ROOTFS_SECURITY_MIRROR ?= http://deb.debian.org/debian-security
ROOTFS_PKGS = python3-minimal,libpython3.11-stdlib

MOD_SRCS := $(wildcard modules/*.c modules/*.h) modules/config
MOD_SO := $(B)/modules/ngx_http_airlock_module.so
MOD_MAP := modules/ngx_http_airlock_module.map

# nginx modules that only tests load (tests/nginx/fixture/), never
# installed: built against the same configured nginx sources as the module
TEST_MOD_SRCS := $(sort $(wildcard tests/nginx/fixture/ngx_*_module.c))
TEST_MODS := $(TEST_MOD_SRCS:tests/nginx/fixture/%.c=$(B)/tests/nginx/%.so)

PROVE ?= prove
PROVE_FLAGS ?= -r --timer

.PHONY: all demo demo-up down deps lib ctl alertd agent modules unit test \
        asan fuzz fuzz-build bench bench-match bench-proxy bench-llm \
        bench-deny bench-load bench-deps install deb image image-test clean \
        help worker worker-rootfs bench-worker test-modules

all: lib ctl alertd agent worker modules unit test-modules

help:
	@echo "make, make all    build libairlock, airlockctl, airlock-alertd," \
	      "airlock-agent, the airlock CLI, airlock-worker, the nginx module" \
	      "and the unit tests (nothing when up to date)"
	@echo "make lib|ctl|alertd|agent|worker|modules|unit   one of those"
	@echo "make test-modules the nginx modules only tests load" \
	      "(tests/nginx/fixture/)"
	@echo "make worker-rootfs  the sandboxes' root file system (mmdebstrap," \
	      "Python 3 only, kept in BUILD/worker-rootfs)"
	@echo "ROOTFS_MIRROR=URL, ROOTFS_SECURITY_MIRROR=URL   the Debian" \
	      "archive and its security archive worker-rootfs installs from"
	@echo "make deps         install the build packages (auto/deps build)"
	@echo "make demo         install the demo's packages, build, run the demo"
	@echo "make demo-up      the same demo, left running to try airlock ask"
	@echo "make down         stop what make demo-up left running"
	@echo "make test         install the test packages, build, run every suite"
	@echo "make asan         the same suite built with ASan+UBSan (build-asan/)"
	@echo "JOBS=N            make test's and make deb's builds run N jobs" \
	      "at once (default: one per CPU)"
	@echo "make fuzz         run each libFuzzer target FUZZ_TIME seconds"
	@echo "make fuzz-build   build the libFuzzer targets only"
	@echo "make bench        run every benchmark below"
	@echo "make bench-match|bench-proxy|bench-llm|bench-deny|bench-load|bench-worker" \
	      "   one of them"
	@echo "make bench-deps   install the benchmarks' packages (wrk)"
	@echo "BENCH_ARGS=...    options for bench-proxy, bench-llm, bench-deny" \
	      "(make bench-llm BENCH_ARGS=--pin; see each script's head)"
	@echo "make install      install under DESTDIR (PREFIX=$(PREFIX))"
	@echo "make deb          Debian packages in BUILD/deb (dpkg-buildpackage)"
	@echo "make image        the appliance image in BUILD/image (qcow2, kernel," \
	      "initrd; mmdebstrap, needs the Debian archive)"
	@echo "make image-test   boot BUILD/image (made first when absent) under" \
	      "qemu (TCG) and check it; not part of make test"
	@echo "make clean        remove build directories"
	@echo "make help         this list"
	@echo "BUILD=DIR (default build, relative or absolute), DEPS=true skips" \
	      "auto/deps"

deps:
	@$(DEPS) build

$(B)/config.mk: auto/configure
	@$(DEPS) build
	@SAN=$(SAN) CC=$(or $(CONFIG_CC),cc) auto/configure $(B)

lib: $(LIB)
ctl: $(CTL)
alertd: $(if $(ALERTD_SRCS),$(ALERTD))
agent: $(if $(AGENT_SRCS),$(AGENT) $(AIRLOCK_CLI))
worker: $(WORKER)
worker-rootfs: $(ROOTFS)/.built
modules: $(MOD_SO)
unit: $(UNIT_TESTS)
test-modules: $(TEST_MODS)

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

$(AGENT): $(AGENT_SRCS) agent/agent.h $(REDIS_SRCS) $(REDIS_HDRS) \
    $(POLICY_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Iagent -Iredis $(AGENT_SRCS) $(REDIS_SRCS) -o $@ \
	    $(LIB) $(LDFLAGS) $(LIB_LIBS)

$(AIRLOCK_CLI): agent/airlock.c agent/ag_show.c agent/agent.h $(POLICY_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) agent/airlock.c agent/ag_show.c -o $@ $(LDFLAGS) \
	    $(LIB_LIBS)

$(WORKER): $(WORKER_SRCS) worker/aw.h $(REDIS_SRCS) $(REDIS_HDRS) \
    $(POLICY_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Wno-format-truncation -Iworker -Iredis \
	    $(WORKER_SRCS) $(REDIS_SRCS) -o $@ $(LIB) $(LDFLAGS) $(LIB_LIBS)

# extract: the listed packages and their dependencies unpacked, no
# maintainer script run; the mount points the sandboxes use are made here
# because the root is mounted read-only.
$(ROOTFS)/.built: Makefile
	@rm -rf $(ROOTFS) $(ROOTFS).tmp
	mmdebstrap --quiet --variant=extract --include=$(ROOTFS_PKGS) \
	    $(ROOTFS_SUITE) $(ROOTFS).tmp \
	    "deb $(ROOTFS_MIRROR) $(ROOTFS_SUITE) main" \
	    "deb $(ROOTFS_MIRROR) $(ROOTFS_SUITE)-updates main" \
	    "deb $(ROOTFS_SECURITY_MIRROR) $(ROOTFS_SUITE)-security main"
	cd $(ROOTFS).tmp && mkdir -p proc dev app/code app/data scratch tmp \
	    && rm -rf var/cache/apt var/lib/apt/lists/* etc/resolv.conf \
	       etc/hostname && chmod 755 . \
	    && test -x usr/bin/python3
	@touch $(ROOTFS).tmp/.built
	@mv $(ROOTFS).tmp $(ROOTFS)

$(B)/tests/unit/%.t: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Itests/unit $< -o $@ $(LIB) $(LDFLAGS) $(LIB_LIBS)

# the unit test of the shared Redis code links it too
$(B)/tests/unit/redis_reply.t: tests/unit/redis_reply.c \
    $(wildcard tests/unit/*.h) $(REDIS_SRCS) $(REDIS_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Itests/unit -Iredis $< $(REDIS_SRCS) -o $@ $(LIB) \
	    $(LDFLAGS) $(LIB_LIBS)

# The module is built by nginx's own build system from Debian's nginx-dev
# sources, configured with Debian's flags so the .so loads into the
# packaged nginx (--with-compat).  Our OPT comes after nginx's own -O, so
# the module is optimized like the library (and sanitized with it).
NGX_CC_OPT = $(WARN) -Wno-unused-parameter -Wno-shadow -Wno-format-nonliteral \
             -I$(CURDIR)/policy $(LIB_CFLAGS) $(OPT)
NGX_LD_OPT = $(LDFLAGS)

# nginx's configure writes objs/Makefile (and no Makefile: Debian's
# sources have none at the top).  It runs again only when the flags or the
# addon's config change.
NGX_OBJS := $(B)/nginx/objs

$(NGX_OBJS)/Makefile: $(B)/config.mk modules/config
	@rm -rf $(B)/nginx
	@mkdir -p $(B)
	cp -r $(NGX_SRC) $(B)/nginx
	cd $(B)/nginx && AIRLOCK_LIB="$(LIB)" \
	    AIRLOCK_LIBS="$(LIB_LIBS)" ./configure $(NGX_CONF_FLAGS) \
	    --add-dynamic-module=$(CURDIR)/modules \
	    --with-cc-opt="$(NGX_CC_OPT)" --with-ld-opt="$(NGX_LD_OPT)" \
	    > configure.log 2>&1 || { tail -20 configure.log; exit 1; }

# nginx's objs/Makefile knows neither libairlock.a, policy/airlock.h nor
# the version script the addon's config links with (the .so exports only
# what nginx loads): the .so is relinked whenever this rule runs, and the
# module's objects are rebuilt when the library's headers changed.
$(MOD_SO): $(NGX_OBJS)/Makefile $(MOD_SRCS) $(MOD_MAP) $(POLICY_HDRS) $(LIB)
	$(if $(filter $(POLICY_HDRS),$?),rm -f $(NGX_OBJS)/addon/modules/*.o)
	@rm -f $(NGX_OBJS)/ngx_http_airlock_module.so
	$(MAKE) -s -C $(B)/nginx -f objs/Makefile modules
	@mkdir -p $(@D)
	cp $(NGX_OBJS)/ngx_http_airlock_module.so $@

# A test module is one file holding its own module list (what nginx's
# configure would write into objs/), compiled with the module's flags and
# nginx's include paths.
NGX_INCS = $(addprefix -I$(B)/nginx/,src/core src/event src/event/modules \
             src/os/unix objs src/http src/http/modules src/http/v2)

$(B)/tests/nginx/%.so: tests/nginx/fixture/%.c $(NGX_OBJS)/Makefile
	@mkdir -p $(@D)
	$(CC) $(NGX_CC_OPT) $(NGX_INCS) -shared $< -o $@ $(NGX_LD_OPT)

# Fuzzing: clang + libFuzzer, ASan and UBSan, policy sources built in (a
# target of a worker parser includes its source, worker/aw_scan.c).
# The policy sources are compiled once, instrumented, into one archive
# that every target links (compiling them into each target took minutes).
FUZZ_SAN = -fsanitize=address,undefined
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -Ipolicy $(LIB_CFLAGS)
FUZZ_OBJS := $(POLICY_SRCS:%.c=$(B)/fuzz-obj/%.o)
FUZZ_LIB := $(B)/fuzz-obj/libairlock-fuzz.a

$(B)/fuzz-obj/%.o: %.c $(POLICY_HDRS) $(B)/config.mk
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_LIB): $(FUZZ_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB) $(POLICY_HDRS) tests/unit/nfkc.h \
    worker/aw_scan.c worker/aw_json.c worker/aw_job.c worker/aw.h \
    $(B)/config.mk
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer $< $(FUZZ_LIB) \
	    -o $@ $(LIB_LIBS)

# The agent's targets (tests/fuzz/fuzz_agent_*.c) include the source
# they fuzz, its parsers being static, with its main() renamed; the other
# agent and Redis client sources, main() excluded, are one more archive.
FUZZ_AGENT_SRCS := $(filter-out agent/ag_main.c,$(AGENT_SRCS)) $(REDIS_SRCS)
FUZZ_AGENT_OBJS := $(FUZZ_AGENT_SRCS:%.c=$(B)/fuzz-obj/%.o)
FUZZ_AGENT_LIB := $(B)/fuzz-obj/libairlock-agent-fuzz.a

$(FUZZ_AGENT_OBJS): agent/agent.h $(REDIS_HDRS)
$(FUZZ_AGENT_OBJS): FUZZ_CFLAGS += -Iagent -Iredis

$(FUZZ_AGENT_LIB): $(FUZZ_AGENT_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/fuzz/fuzz_agent_%: tests/fuzz/fuzz_agent_%.c $(FUZZ_AGENT_LIB) \
    $(FUZZ_LIB) $(wildcard agent/*.c) agent/agent.h $(POLICY_HDRS) \
    $(B)/config.mk
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -Iagent -Iredis $(FUZZ_SAN) -fsanitize=fuzzer $< \
	    $(FUZZ_AGENT_LIB) $(FUZZ_LIB) -o $@ $(LIB_LIBS)

# the alertd target includes the alertd sources it drives (no main)
$(B)/fuzz/fuzz_alertd_line: alertd/ad_alert.c alertd/ad_group.c \
    alertd/ad_log.c alertd/alertd.h

# so does the worker's status target (aw_sandbox.c's readers)
$(B)/fuzz/fuzz_aw_status: worker/aw_sandbox.c worker/aw_util.c

fuzz-build: $(FUZZ_BINS)

fuzz:
	@$(DEPS) fuzz
	@$(MAKE) --no-print-directory fuzz-build
	@for f in $(FUZZ_BINS); do \
	    n=$$(basename $$f); mkdir -p $(B)/fuzz/corpus/$$n; \
	    echo "== $$n for $(FUZZ_TIME)s"; \
	    $$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	        $(B)/fuzz/corpus/$$n tests/fuzz/seeds/$$n 2>&1 \
	        | grep -E '^(stat::|#[0-9]+ +DONE|==[0-9]+==ERROR)' ; \
	done

demo:
	@$(DEPS) demo
	@$(MAKE) --no-print-directory all worker-rootfs
	AIRLOCK_BUILD=$(B) conf/demo/run.sh

demo-up:
	@$(DEPS) demo
	@$(MAKE) --no-print-directory all worker-rootfs
	AIRLOCK_BUILD=$(B) conf/demo/run.sh --keep

down:
	@conf/demo/run.sh --down

# the fuzz smoke test (tests/fuzz/smoke.t) runs each target on its seeds
# The suite runs one test at a time, but for its four long ones (a second
# build of the tree, the packages, the image's root, the fuzz smoke run),
# which run one after another beside the rest, each at a lower priority
# (nice) so that the tests beside it keep their timing.
SLOW_TESTS = tests/{build/00-make,build/10-deb,image/10-root,fuzz/smoke}.t
PROVE_RULES = -j2 --rules='seq=$(SLOW_TESTS)' --rules='seq=**'

test:
	@$(DEPS) test
	@$(MAKE) --no-print-directory -j$(JOBS) all fuzz-build worker-rootfs
	AIRLOCK_BUILD=$(B) $(PROVE) $(PROVE_FLAGS) $(PROVE_RULES) \
	    tests $(B)/tests

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 test

$(B)/bench/%: tests/bench/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $< -o $@ $(LIB) $(LDFLAGS) $(LIB_LIBS)

bench-deps:
	@$(DEPS) bench

bench-match: bench-deps
	@$(MAKE) --no-print-directory $(B)/bench/bench_match
	$(B)/bench/bench_match

bench-proxy bench-llm bench-deny: bench-deps
	@$(MAKE) --no-print-directory all
	AIRLOCK_BUILD=$(B) perl tests/bench/$(@:bench-%=%).pl $(BENCH_ARGS)

bench-load: bench-deps
	@$(MAKE) --no-print-directory all
	AIRLOCK_BUILD=$(B) perl tests/bench/load.pl

bench-worker: bench-deps
	@$(MAKE) --no-print-directory all worker-rootfs
	AIRLOCK_BUILD=$(B) perl tests/bench/worker.pl

bench: bench-match bench-proxy bench-llm bench-deny bench-load bench-worker

# Installation, as the packages lay it out.  A new program is one line:
# INSTALL_BINS += $(B)/its-binary; a unit in conf/*.service comes with it.
# Its manual page is debian/NAME.1, listed in debian/airlock.manpages
# (tests/build/45-man-pages.t: every option its --help prints is in it).
# The units name the programs and docs under /usr; installed, they name
# them under PREFIX (with PREFIX=/usr/local, they would run /usr/bin's
# programs: none, or a package's older ones).
# Over an installed tree (an upgrade from source, DESTDIR empty) the
# operator's files stay: the policy and worker.conf are installed only
# where there is none, and /etc/airlock and /var/log/airlock only made
# when missing (install -d would reset the set-group-ID mode tmpfiles.d
# gives /var/log/airlock, and with it alertd's reading of the journal).
# The other files in /etc (INSTALL_CONF, SOURCE:TARGET) are dpkg's
# conffiles in the package; here they are handled as dpkg does: one
# still as the last make install wrote it (its checksum in CONF_SUMS) is
# replaced, one changed (or deleted) here is kept so and this version's
# is written beside it as FILE.dpkg-dist (a name logrotate's include
# skips), and said.  With no checksum recorded (a tree an older make
# install or the package laid) a file that differs is kept the same way.
# On the system it installs to (DESTDIR empty) make install then does
# what the package's postinst does: the users and groups the units run
# as (sysusers.d), /run/airlock and the mode of /var/log/airlock
# (tmpfiles.d), and a systemctl daemon-reload (until then a restart of a
# daemon runs its old unit, without what the new one changed).
# INSTALL_SETUP=yes does the first two under DESTDIR too (--root).
PREFIX ?= /usr
DESTDIR ?=
INSTALL_SETUP ?= $(if $(DESTDIR),no,yes)
SETUP_ROOT = $(if $(DESTDIR),--root=$(DESTDIR) )
INSTALL_BINS := $(CTL) $(if $(ALERTD_SRCS),$(ALERTD))
INSTALL_BINS += $(if $(AGENT_SRCS),$(AGENT) $(AIRLOCK_CLI))
INSTALL_BINS += $(if $(WORKER_SRCS),$(WORKER))
INSTALL_UNITS := $(wildcard conf/*.service)
INSTALL_ETC := conf/policy.example.yaml $(wildcard conf/airlock-location.conf)
INSTALL_DOCS := $(wildcard docs/*.md)
INSTALL_CONF := conf/airlock.logrotate:/etc/logrotate.d/airlock
INSTALL_CONF += $(if $(wildcard conf/airlock-location.conf),\
    conf/airlock-location.conf:/etc/airlock/airlock-location.conf)
CONF_SUMS := $(PREFIX)/share/airlock/conffiles.sha256
SYSTEMD_DIR ?= /lib/systemd/system
NGX_MOD_DIR ?= /usr/lib/nginx/modules
NGX_MOD_CONF_DIR ?= /usr/share/nginx/modules-available

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(NGX_MOD_DIR) \
	    $(DESTDIR)$(NGX_MOD_CONF_DIR) $(DESTDIR)$(SYSTEMD_DIR) \
	    $(DESTDIR)$(SYSTEMD_DIR)/nginx.service.d \
	    $(DESTDIR)$(SYSTEMD_DIR)/redis-server.service.d \
	    $(DESTDIR)/etc/logrotate.d \
	    $(DESTDIR)/usr/lib/sysusers.d $(DESTDIR)/usr/lib/tmpfiles.d \
	    $(DESTDIR)$(PREFIX)/share/doc/airlock \
	    $(DESTDIR)$(PREFIX)/share/airlock \
	    $(DESTDIR)/usr/lib/airlock $(DESTDIR)/usr/share/airlock
	for d in $(DESTDIR)/etc/airlock $(DESTDIR)/var/log/airlock; do \
	    test -d $$d || install -d $$d || exit 1; \
	done
	install -m 755 $(INSTALL_BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(MOD_SO) $(DESTDIR)$(NGX_MOD_DIR)/
	echo 'load_module modules/ngx_http_airlock_module.so;' \
	    > $(DESTDIR)$(NGX_MOD_CONF_DIR)/mod-http-airlock.conf
	for u in $(INSTALL_UNITS); do \
	    t=$(DESTDIR)$(SYSTEMD_DIR)/$${u##*/}; \
	    sed -e 's|^\(Exec[A-Za-z]*=[-+!@:|]*\)/usr/bin/|\1$(PREFIX)/bin/|' \
	        -e 's|file:///usr/share/doc/|file://$(PREFIX)/share/doc/|' \
	        $$u > $$t.new && chmod 644 $$t.new && mv $$t.new $$t || exit 1; \
	done
	install -m 644 conf/nginx-credentials.conf \
	    $(DESTDIR)$(SYSTEMD_DIR)/nginx.service.d/airlock.conf
	install -m 644 conf/nginx-restart.conf \
	    $(DESTDIR)$(SYSTEMD_DIR)/nginx.service.d/airlock-restart.conf
	install -m 644 conf/redis-runtime-dir.conf \
	    $(DESTDIR)$(SYSTEMD_DIR)/redis-server.service.d/airlock.conf
	$(if $(ALERTD_SRCS),install -m 644 conf/airlock-alertd-keyring.conf \
	    $(DESTDIR)$(PREFIX)/share/airlock/airlock-alertd-keyring.conf)
	install -m 755 conf/airlock-redis-users $(DESTDIR)/usr/lib/airlock/
	install -m 644 conf/redis-acl.conf $(DESTDIR)/usr/share/airlock/
	@if test -e $(DESTDIR)/etc/airlock/policy.yaml; then \
	    echo "keeping $(DESTDIR)/etc/airlock/policy.yaml"; \
	else \
	    echo "install -m 644 conf/policy.example.yaml" \
	         "$(DESTDIR)/etc/airlock/policy.yaml"; \
	    install -m 644 conf/policy.example.yaml \
	        $(DESTDIR)/etc/airlock/policy.yaml; \
	fi
	$(if $(WORKER_SRCS),@if test -e $(DESTDIR)/etc/airlock/worker.conf; then \
	    echo "keeping $(DESTDIR)/etc/airlock/worker.conf"; \
	else \
	    echo "install conf/worker.conf (redis_unix, redis_user)" \
	         "$(DESTDIR)/etc/airlock/worker.conf"; \
	    sed 's@^# *\(redis_\(unix\|user\|password_file\)  *[^ ]*\).*@\1@' \
	        conf/worker.conf \
	        > $(DESTDIR)/etc/airlock/worker.conf.new \
	    && grep -q '^redis_unix ' $(DESTDIR)/etc/airlock/worker.conf.new \
	    && grep -q '^redis_user ' $(DESTDIR)/etc/airlock/worker.conf.new \
	    && mv $(DESTDIR)/etc/airlock/worker.conf.new \
	          $(DESTDIR)/etc/airlock/worker.conf \
	    || { rm -f $(DESTDIR)/etc/airlock/worker.conf.new; exit 1; }; \
	fi)
	@sums=$(DESTDIR)$(CONF_SUMS); : > $$sums.new || exit 1; \
	for p in $(INSTALL_CONF); do \
	    src=$${p%%:*}; f=$${p#*:}; d=$(DESTDIR)$$f; \
	    new=$$(sha256sum < $$src | cut -d' ' -f1) || exit 1; \
	    was=$$(test -f $$sums && awk -v f="$$f" \
	           '$$2 == f { print $$1 }' $$sums); \
	    cur=$$(test -f $$d && sha256sum < $$d | cut -d' ' -f1); \
	    if { test ! -e $$d && test -z "$$was"; } \
	        || { test -e $$d && test "$$cur" = "$$new"; } \
	        || { test -n "$$was" && test "$$cur" = "$$was"; }; then \
	        echo "install -m 644 $$src $$d"; \
	        install -m 644 $$src $$d && rm -f $$d.dpkg-dist || exit 1; \
	    else \
	        echo "keeping $$d, $$(test -e $$d && echo changed \
	             || echo deleted) here: this version's is" \
	             "$$d.dpkg-dist" >&2; \
	        install -m 644 $$src $$d.dpkg-dist || exit 1; \
	    fi; \
	    echo "$$new  $$f" >> $$sums.new || exit 1; \
	done; \
	mv $$sums.new $$sums
	install -m 644 conf/airlock.sysusers \
	    $(DESTDIR)/usr/lib/sysusers.d/airlock.conf
	install -m 644 conf/airlock.tmpfiles \
	    $(DESTDIR)/usr/lib/tmpfiles.d/airlock.conf
	install -m 644 $(INSTALL_DOCS) $(DESTDIR)$(PREFIX)/share/doc/airlock/
	install -d -m 700 $(DESTDIR)/etc/airlock/credentials
	@if test "$(INSTALL_SETUP)" = yes; then \
	    for c in "systemd-sysusers $(SETUP_ROOT)airlock.conf" \
	        "systemd-tmpfiles $(SETUP_ROOT)--create airlock.conf"; do \
	        command -v $${c%% *} >/dev/null \
	            || { echo "make install: no $${c%% *} here: run" \
	                      "\"$$c\" before Airlock's units start" >&2; \
	                 continue; }; \
	        echo "$$c"; $$c || exit 1; \
	    done; \
	    if test -z "$(DESTDIR)" && test -d /run/systemd/system; then \
	        echo "systemctl daemon-reload"; systemctl daemon-reload || exit 1; \
	    fi; \
	fi

# Debian packages (debian/): built by dpkg-buildpackage from a copy of the
# files git tracks (committed or added, as they are in the working tree)
# in BUILD/deb/src; the .debs land in BUILD/deb.  Nothing git does not
# track reaches a package: the install takes every conf/*.service,
# docs/*.md and source file of a directory, and an editor's copy, a local
# unit or a note with a secret in it beside them would be shipped.  Those
# left out are named; `git add` one to package it.  A tree whose Makefile
# git does not track is refused: a copy of Airlock unpacked inside some
# other repository (whose top is above it) would be packaged from the
# few of its files that repository tracks, or from none.  The list is
# NUL-separated and read verbatim (tar --null): no name is quoted, or
# read as an option.
DEB_DIR := $(B)/deb

# The packages are built as released, without a sanitizer and in the
# packages' layout, whatever this make was given (make asan runs the
# package test too; make install deb PREFIX=/usr/local would hand its
# PREFIX to debian/rules' make install through the environment).
deb:
	@$(DEPS) deb
	@git rev-parse --is-inside-work-tree >/dev/null \
	    || { echo "make deb: packages are built from the files git" \
	              "tracks, and git lists none in $(CURDIR) (above)" >&2; \
	         exit 1; }
	@git ls-files --error-unmatch -- Makefile debian/control \
	    >/dev/null 2>&1 \
	    || { echo "make deb: packages are built from the files git" \
	              "tracks, and git (repository" \
	              "$$(git rev-parse --show-toplevel)) does not track the" \
	              "Makefile and debian/control of $(CURDIR): a copy of" \
	              "Airlock inside another repository, or a git init" \
	              "without git add -A?" >&2; \
	         exit 1; }
	@rm -rf $(DEB_DIR)
	@mkdir -p $(DEB_DIR)/src
	@git ls-files -o --exclude-standard \
	    | grep -v '^$(patsubst $(CURDIR)/%,%,$(B))/' \
	    | sed 's/^/make deb: not packaged (git does not track it): /' >&2
	git ls-files -c -z \
	    | tar -c --null --ignore-failed-read -T - -f - \
	    | tar -x -C $(DEB_DIR)/src -f -
	cd $(DEB_DIR)/src && env -u SAN -u BUILD -u MAKEFLAGS -u MFLAGS \
	    -u MAKELEVEL -u PREFIX -u DESTDIR -u SYSTEMD_DIR -u NGX_MOD_DIR \
	    -u NGX_MOD_CONF_DIR -u INSTALL_SETUP \
	    dpkg-buildpackage -b -us -uc -j$(JOBS) \
	    > $(DEB_DIR)/build.log 2>&1 || { tail -30 $(DEB_DIR)/build.log; exit 1; }
	@ls $(DEB_DIR)/*.deb

# The appliance image (appliance-image/): the packages above in a Debian 12
# root made by mmdebstrap, as an ext4 file system in a qcow2 disk, with
# the kernel and initrd to boot it.  image-test boots it under qemu with
# software emulation and checks it from the host: minutes, so it is not
# part of `make test`, which checks the image's root without booting it
# (tests/image/10-root.t).
IMAGE_DIR := $(B)/image

image:
	@$(DEPS) image
	@$(MAKE) --no-print-directory deb worker-rootfs
	appliance-image/build.sh --debs $(DEB_DIR) --rootfs $(ROOTFS) \
	    --out $(IMAGE_DIR)

image-test:
	@$(DEPS) image
	@test -f $(IMAGE_DIR)/airlock.qcow2 \
	    || $(MAKE) --no-print-directory image
	tests/image/boot.sh $(IMAGE_DIR)

clean:
	rm -rf $(B) $(abspath build-asan)
