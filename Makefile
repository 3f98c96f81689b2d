# SPDX-License-Identifier: GPL-2.0
#
# dmaplane top-level Makefile.
#
#   make                 module (against KDIR), library, tools, examples
#   make install         install module, headers, library, pkg-config, tools,
#                        the library's man pages (3), dpctl's man page and
#                        bash completion, udev rule; dmaplaned, dmaplanectl,
#                        their man pages and the systemd unit when built
#   make check           the whole test suite (test VM, stock kernel, host)
#   make demo            build, boot the test VM, load the module, run the demo
#   make bench           dp-bench in a stock-kernel VM, against the peers
#   make bench2          dp-bench across two VMs (rxe), against the RDMA/TCP peers
#   make soak            the long runs: fault injection, 1,000 kill rounds
#   make dedup           the dedup engine of dmaplaned, its test and bench
#   make fabric          the libfabric provider, libdmaplane-fi.so (needs
#                        libfabric-dev); part of make and make install when
#                        libfabric's pkg-config file is there
#   make daemon          dmaplaned, the arena service, and dmaplanectl (needs
#                        libmicrohttpd-dev and libjansson-dev); part of make
#                        when both pkg-config files are there
#
# The kernel objects are described in Kbuild; this file drives kbuild for
# them and builds the user-space parts itself into $(BUILD).

VERSION    := 0.1.0
SOVERSION  := 1

KDIR       ?= /lib/modules/$(shell uname -r)/build
BUILD      ?= build
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
UDEVDIR    ?= /lib/udev/rules.d
MANDIR     ?= $(PREFIX)/share/man
BASHCOMPDIR ?= /usr/share/bash-completion/completions
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR     ?= $(PREFIX)/share/doc/dmaplane
DESTDIR    ?=

CC         ?= cc
CFLAGS     ?= -O2 -g
WARN       := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS_U := -Iuapi -Ilibuser/include -D_GNU_SOURCE

LIB_SRCS   := $(wildcard libuser/*.c)
LIB_OBJS   := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB_SO     := $(BUILD)/libdmaplane.so.$(VERSION)
LIB_SONAME := libdmaplane.so.$(SOVERSION)
LIB_LINKS  := $(BUILD)/$(LIB_SONAME) $(BUILD)/libdmaplane.so
PC         := $(BUILD)/dmaplane.pc

TOOLS      := $(BUILD)/dpctl $(BUILD)/dp-bench
EXAMPLES   := $(BUILD)/dp-demo $(BUILD)/dp-pingpong $(BUILD)/dp-ring
EXAMPLES   += $(BUILD)/dp-kvstore

# kselftest harness header, from the test kernel's source tree.
KSFT_DIR   ?=
# io_uring submission (uring_test, dp-bench's uring modes) needs liburing
# (liburing-dev); without it uring_test is not built and dp-bench has no
# uring rows.
HAVE_URING := $(shell pkg-config --exists liburing 2>/dev/null && echo y)
URING_LIBS := $(if $(HAVE_URING),$(shell pkg-config --libs liburing))
# evil_frames_test is a host test (built into $(BUILD)/tests/host/, below).
TEST_SRCS  := $(filter-out tests/evil_frames_test.c,$(wildcard tests/*_test.c))
ifneq ($(HAVE_URING),y)
TEST_SRCS  := $(filter-out tests/uring_test.c,$(TEST_SRCS))
endif
TESTS      := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
HOST_TEST_SRCS := $(wildcard tests/host/*_test.c)
HOST_TESTS := $(HOST_TEST_SRCS:tests/host/%.c=$(BUILD)/tests/host/%)

USER_LDFLAGS = -L$(BUILD) -Wl,-rpath-link,$(BUILD)

.PHONY: all modules lib tools examples tests clean install install-user check demo bench \
	bench2 soak fabric install-fabric fabric-tests

# dmaplaned, the arena service (daemon/), and dmaplanectl, the small
# client of its attach socket.  daemon-asan: the same daemon built with
# AddressSanitizer and UBSan, for the VM job (tests/run-daemon.sh).
DAEMON_PKGS  := libmicrohttpd jansson libcurl libxxhash
HAVE_DAEMON  := $(shell pkg-config --exists $(DAEMON_PKGS) 2>/dev/null && echo y)
DAEMON_SRCS  := $(filter-out daemon/client.c daemon/dmaplanectl.c daemon/dedup.c,$(wildcard daemon/*.c))
DAEMON_HDRS  := daemon/dmaplaned.h
DAEMON_SAN   := -fsanitize=address,undefined -fno-omit-frame-pointer

.PHONY: daemon daemon-asan
daemon: $(BUILD)/dmaplaned $(BUILD)/dmaplanectl
daemon-asan: $(BUILD)/dmaplaned-asan

$(BUILD)/dmaplaned $(BUILD)/dmaplaned-asan: $(DAEMON_SRCS) $(DAEMON_HDRS) $(LIB_LINKS)
	@pkg-config --exists $(DAEMON_PKGS) || { echo "make daemon: apt-get install libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libxxhash-dev" >&2; exit 1; }
	$(CC) $(CPPFLAGS_U) $(shell pkg-config --cflags $(DAEMON_PKGS)) $(CFLAGS) $(WARN) \
		$(if $(filter %-asan,$@),$(DAEMON_SAN)) -pthread -o $@ $(DAEMON_SRCS) \
		$(USER_LDFLAGS) -ldmaplane $(shell pkg-config --libs $(DAEMON_PKGS))
$(BUILD)/dmaplanectl: daemon/dmaplanectl.c daemon/client.c daemon/client.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(WARN) -D_GNU_SOURCE -o $@ daemon/dmaplanectl.c daemon/client.c

# The libfabric provider (fabric/), built against the installed libfabric's
# public headers and installed into its provider directory.
FABRIC_SRCS   := $(wildcard fabric/*.c)
FABRIC_SO     := $(BUILD)/fabric/libdmaplane-fi.so
FABRIC_PROVDIR ?= $(shell pkg-config --variable=libdir libfabric 2>/dev/null)/libfabric
HAVE_FABRIC   := $(shell pkg-config --exists libfabric 2>/dev/null && echo y)

all: modules lib tools examples $(if $(HAVE_FABRIC),fabric) $(if $(HAVE_DAEMON),daemon)

modules:
	@test -d $(KDIR) || { echo "no kernel build tree at $(KDIR):" \
		"install linux-headers-$$(uname -r) or pass KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

lib: $(LIB_SO) $(LIB_LINKS) $(PC)
tools: $(TOOLS)
examples: $(EXAMPLES)

$(BUILD)/libuser/%.o: libuser/%.c libuser/include/dmaplane.h uapi/linux/dmaplane.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_U) $(CFLAGS) $(WARN) -fPIC -fvisibility=default -c -o $@ $<

$(LIB_SO): $(LIB_OBJS) libuser/libdmaplane.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,$(LIB_SONAME) \
		-Wl,--version-script=libuser/libdmaplane.map -o $@ $(LIB_OBJS)

$(BUILD)/$(LIB_SONAME): $(LIB_SO)
	ln -sf $(notdir $<) $@
$(BUILD)/libdmaplane.so: $(BUILD)/$(LIB_SONAME)
	ln -sf $(notdir $<) $@

# The pkg-config file names the install paths, so it is made at install
# time from the PREFIX/LIBDIR/INCLUDEDIR given then.
PC_SED = sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(LIBDIR)|' \
	     -e 's|@includedir@|$(INCLUDEDIR)|' -e 's|@version@|$(VERSION)|'
define install_pc
	$(PC_SED) libuser/dmaplane.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/dmaplane.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/dmaplane.pc
endef

$(PC): libuser/dmaplane.pc.in Makefile
	@mkdir -p $(dir $@)
	$(PC_SED) $< > $@

# dpctl and the in-VM tests speak generic netlink through libnl-genl-3.
LIBNL_CFLAGS := $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null)
LIBNL_LIBS   := $(shell pkg-config --libs libnl-genl-3.0 2>/dev/null)

$(BUILD)/dpctl: tools/dpctl.c tools/json_writer.c tools/json_writer.h $(LIB_LINKS)
	$(CC) $(CPPFLAGS_U) $(LIBNL_CFLAGS) -DDP_VERSION='"$(VERSION)"' $(CFLAGS) $(WARN) \
		-o $@ tools/dpctl.c tools/json_writer.c \
		$(USER_LDFLAGS) -ldmaplane $(LIBNL_LIBS)

# dp-bench compares against ibv_reg_mr() when libibverbs is available.
IBVERBS_LIBS := $(shell pkg-config --libs libibverbs 2>/dev/null)
ifneq ($(IBVERBS_LIBS),)
BENCH_FLAGS := -DHAVE_IBVERBS
endif
BENCH_FLAGS += $(if $(HAVE_URING),-DHAVE_LIBURING)

$(BUILD)/dp-bench: tools/dp-bench.c $(LIB_LINKS)
	$(CC) $(CPPFLAGS_U) $(BENCH_FLAGS) $(CFLAGS) $(WARN) -o $@ $< \
		$(USER_LDFLAGS) -ldmaplane $(IBVERBS_LIBS) $(URING_LIBS)

$(BUILD)/dp-demo: examples/demo.c $(LIB_LINKS)
	$(CC) $(CPPFLAGS_U) $(CFLAGS) $(WARN) -o $@ $< $(USER_LDFLAGS) -ldmaplane
$(BUILD)/dp-pingpong: examples/pingpong.c $(LIB_LINKS)
	$(CC) $(CPPFLAGS_U) $(CFLAGS) $(WARN) -o $@ $< $(USER_LDFLAGS) -ldmaplane
$(BUILD)/dp-ring: examples/ring.c $(LIB_LINKS)
	$(CC) $(CPPFLAGS_U) $(CFLAGS) $(WARN) -o $@ $< $(USER_LDFLAGS) -ldmaplane

# dp-kvstore has a ZeroMQ transport beside dmaplane's when libzmq is there
# (libzmq3-dev); without it, dmaplane's only.
HAVE_ZMQ   := $(shell pkg-config --exists libzmq 2>/dev/null && echo y)
ZMQ_FLAGS  := $(if $(HAVE_ZMQ),-DHAVE_ZMQ $(shell pkg-config --cflags libzmq))
ZMQ_LIBS   := $(if $(HAVE_ZMQ),$(shell pkg-config --libs libzmq))

$(BUILD)/dp-kvstore: examples/kvstore.c $(LIB_LINKS)
	@$(if $(HAVE_ZMQ),:,echo "dp-kvstore: no libzmq (apt-get install libzmq3-dev): dmaplane transport only")
	$(CC) $(CPPFLAGS_U) $(ZMQ_FLAGS) $(CFLAGS) $(WARN) -o $@ $< $(USER_LDFLAGS) \
		-ldmaplane $(ZMQ_LIBS) -lm

fabric: $(FABRIC_SO)

# Runpath $ORIGIN/..: libdmaplane beside the provider directory (the build
# tree's build/fabric/, or an install whose LIBDIR is libfabric's), then
# LIBDIR (make install puts the provider in libfabric's directory, which
# for Debian's libfabric is not PREFIX/lib).
$(FABRIC_SO): $(FABRIC_SRCS) fabric/dp_prov.h $(LIB_LINKS)
	@pkg-config --exists libfabric || { echo "make fabric: no libfabric (apt-get install libfabric-dev)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_U) $(shell pkg-config --cflags libfabric) $(CFLAGS) $(WARN) \
		-fPIC -shared -fvisibility=hidden -o $@ $(FABRIC_SRCS) \
		$(USER_LDFLAGS) -Wl,-rpath,'$$ORIGIN/..:$(LIBDIR)' -Wl,--no-undefined \
		-ldmaplane $(shell pkg-config --libs libfabric) -lpthread

# The provider's host tests: its sources linked into each test program, so
# that internal functions (dpf_getinfo_caps) can be called without a module.
FABRIC_TESTS := $(patsubst fabric/tests/%.c,$(BUILD)/fabric/tests/%,$(wildcard fabric/tests/*_test.c))
fabric-tests: $(FABRIC_TESTS)

$(BUILD)/fabric/tests/%: fabric/tests/%.c $(FABRIC_SRCS) fabric/dp_prov.h $(LIB_LINKS)
	@test -n "$(KSFT_DIR)" || { echo "KSFT_DIR= not set (see tests/run-check.sh)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_U) -I$(KSFT_DIR) $(shell pkg-config --cflags libfabric) $(CFLAGS) \
		-Wall -Werror -o $@ $< $(FABRIC_SRCS) $(USER_LDFLAGS) \
		-Wl,-rpath,$(CURDIR)/$(BUILD) -ldmaplane $(shell pkg-config --libs libfabric) -lpthread

# A malicious peer node (tests/vm/jobs/evil.sh), when librdmacm is there,
# and the host test of its --random frame generator (ASan+UBSan).
RDMACM_LIBS := $(shell pkg-config --libs librdmacm libibverbs 2>/dev/null)
ifneq ($(RDMACM_LIBS),)
EVIL_PEER := $(BUILD)/tests/evil_peer
EVIL_FRAMES_TEST := $(BUILD)/tests/host/evil_frames_test
endif
EVIL_SAN   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# In-VM tests: kselftest harness programs linked against libdmaplane, and
# the programs of the fault-injection, kill-loop and fuzz jobs.
VM_PROGS   := $(BUILD)/tests/faults $(BUILD)/tests/killloop $(BUILD)/tests/fuzz
tests: $(TESTS) $(HOST_TESTS) $(EVIL_PEER) $(EVIL_FRAMES_TEST) $(VM_PROGS)

$(BUILD)/tests/%: tests/%.c tests/dp_test.h $(LIB_LINKS)
	@test -n "$(KSFT_DIR)" || { echo "KSFT_DIR= not set (see tests/run-check.sh)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_U) $(LIBNL_CFLAGS) -I$(KSFT_DIR) $(CFLAGS) -Wall -Werror -o $@ $< \
		$(USER_LDFLAGS) -ldmaplane $(LIBNL_LIBS) $(TEST_LIBS)

$(BUILD)/tests/uring_test: TEST_LIBS := $(URING_LIBS)
# fuzz.c adds io_uring submissions when <liburing.h> is there.
$(BUILD)/tests/fuzz: TEST_LIBS := $(URING_LIBS)

# The malicious peer needs no library of dmaplane, only the wire format.
$(BUILD)/tests/evil_peer: tests/evil_peer.c kmod/ib_wire.h uapi/linux/dmaplane.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_U) $(CFLAGS) $(WARN) -Werror -o $@ $< $(RDMACM_LIBS)

# evil_peer.c's frames for many seeds, no RDMA device: it includes the
# peer's source, so it is a host test although its source is in tests/.
$(BUILD)/tests/host/evil_frames_test: tests/evil_frames_test.c tests/evil_peer.c \
		kmod/ib_wire.h uapi/linux/dmaplane.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_U) $(CFLAGS) $(WARN) -Werror $(EVIL_SAN) -o $@ $< $(RDMACM_LIBS)

$(BUILD)/tests/host/%: tests/host/%.c $(LIB_LINKS)
	@test -n "$(KSFT_DIR)" || { echo "KSFT_DIR= not set (see tests/run-check.sh)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_U) -I$(KSFT_DIR) $(CFLAGS) -Wall -Werror -o $@ $< \
		$(USER_LDFLAGS) -Wl,-rpath,$(CURDIR)/$(BUILD) -ldmaplane

# The JSON writer's test includes tools/json_writer.c.
$(BUILD)/tests/host/json_writer_test: tools/json_writer.c tools/json_writer.h

install: all install-user
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) \
		INSTALL_MOD_DIR=extra modules_install
	install -d $(DESTDIR)$(UDEVDIR)
	install -m 0644 udev/60-dmaplane.rules $(DESTDIR)$(UDEVDIR)/

# The user-space part of install (no kernel tree needed; the host tests use it).
install-user: lib tools
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/linux \
		$(DESTDIR)$(BINDIR)
	install -m 0644 uapi/linux/dmaplane.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -m 0644 libuser/include/dmaplane.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libdmaplane.so
	$(call install_pc)
	install -m 0755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR)
	install -m 0644 libuser/man/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 tools/dpctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 tools/dpctl.bash-completion $(DESTDIR)$(BASHCOMPDIR)/dpctl
	$(if $(HAVE_FABRIC),$(MAKE) install-fabric)
	$(if $(HAVE_DAEMON),$(MAKE) install-daemon)

# dmaplaned: the daemon and its client, man pages, the systemd unit (its
# ExecStart names BINDIR) and the example configuration.
.PHONY: install-daemon
install-daemon: daemon
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(BUILD)/dmaplaned $(BUILD)/dmaplanectl $(DESTDIR)$(BINDIR)/
	install -m 0644 daemon/dmaplaned.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 daemon/dmaplanectl.1 $(DESTDIR)$(MANDIR)/man1/
	sed 's|/usr/local/bin/|$(BINDIR)/|' daemon/dmaplaned.service \
		>$(DESTDIR)$(SYSTEMDUNITDIR)/dmaplaned.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/dmaplaned.service
	install -m 0644 daemon/dmaplaned.conf.example daemon/openapi.yaml $(DESTDIR)$(DOCDIR)/

install-fabric: fabric
	install -d $(DESTDIR)$(FABRIC_PROVDIR)
	install -m 0755 $(FABRIC_SO) $(DESTDIR)$(FABRIC_PROVDIR)/

check:
	tests/run-check.sh

demo:
	tests/run-demo.sh

bench:
	tests/run-bench.sh

bench2:
	tests/run-bench.sh 2node

soak:
	tests/run-soak.sh

clean:
	-test -d $(KDIR) && $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD)

# dmaplaned's deduplication engine: make dedup, dedup-check, dedup-bench.
-include daemon/dedup.mk
