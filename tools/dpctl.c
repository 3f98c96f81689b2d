// SPDX-License-Identifier: GPL-2.0
/*
 * dpctl: administer dmaplane, in the manner of iproute2's rdma tool.
 *
 *   dpctl [-j] [-d DEVICE] info        ABI version and capabilities (ioctl)
 *   dpctl [-j] show [ep|region]        endpoints and their regions
 *   dpctl [-j] stats                   object counters and module parameters
 *   dpctl [-j] peer add ADDR [port N]  add a peer node (CAP_NET_ADMIN)
 *   dpctl [-j] peer del ADDR           remove a peer node (CAP_NET_ADMIN)
 *   dpctl [-j] peer list               the peer table
 *   dpctl [-j] monitor                 print events until interrupted
 *
 * Everything but info talks to the generic netlink family "dmaplane"
 * (uapi/linux/dmaplane.h) through libnl-genl-3.  -j prints JSON, one
 * document per command (monitor: one object per line).  Exit status: 0 on
 * success, 1 when the kernel or the system refused, 2 on usage errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <dmaplane.h>
#include <linux/dmaplane.h>

static bool json;
static const char *what;	/* command name for error messages */

static int usage(FILE *f)
{
	fprintf(f,
		"usage: dpctl [-j] [-d DEVICE] info\n"
		"       dpctl [-j] show [ep | region]\n"
		"       dpctl [-j] stats\n"
		"       dpctl [-j] peer add ADDR [port PORT]\n"
		"       dpctl [-j] peer del ADDR\n"
		"       dpctl [-j] peer list\n"
		"       dpctl [-j] monitor\n"
		"ADDR is an IPv4 or IPv6 address.  -j: JSON output.\n");
	return f == stderr ? 2 : 0;
}

static int fail(int err)
{
	fprintf(stderr, "dpctl: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

/* ---- netlink plumbing --------------------------------------------------- */

struct nl_ctx {
	struct nl_sock *sk;
	int family;
};

static int dp_nl_open(struct nl_ctx *c)
{
	c->sk = nl_socket_alloc();
	if (!c->sk)
		return -ENOMEM;
	if (genl_connect(c->sk)) {
		nl_socket_free(c->sk);
		return -errno ? -errno : -EIO;
	}
	c->family = genl_ctrl_resolve(c->sk, DMAPLANE_GENL_NAME);
	if (c->family < 0) {
		nl_socket_free(c->sk);
		fprintf(stderr, "dpctl: %s: generic netlink family \"%s\" not found "
			"(is the dmaplane module loaded?)\n", what, DMAPLANE_GENL_NAME);
		return -ENOENT;
	}
	return 0;
}

static void dp_nl_close(struct nl_ctx *c)
{
	nl_socket_free(c->sk);
}

struct nl_req {
	int status;	/* 1: waiting, 0: done, < 0: -errno */
	int (*fn)(struct nlattr **tb, uint8_t cmd, void *arg);
	void *arg;
};

static int req_err(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nl_req *r = arg;

	(void)nla;
	r->status = e->error ? e->error : 0;
	return NL_STOP;
}

static int req_done(struct nl_msg *msg, void *arg)
{
	struct nl_req *r = arg;

	(void)msg;
	if (r->status > 0)
		r->status = 0;
	return NL_STOP;
}

static int req_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[DMAPLANE_ATTR_MAX + 1];
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nl_req *r = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, DMAPLANE_ATTR_MAX, NULL))
		return NL_SKIP;
	if (r->fn && r->fn(tb, gh->cmd, r->arg))
		return NL_STOP;
	return NL_OK;
}

static struct nl_msg *req_new(struct nl_ctx *c, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, flags, cmd,
			 DMAPLANE_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* Send @msg (consumed) and run @fn on every reply; returns 0 or -errno. */
static int req_run(struct nl_ctx *c, struct nl_msg *msg,
		   int (*fn)(struct nlattr **tb, uint8_t cmd, void *arg), void *arg)
{
	struct nl_req r = { .status = 1, .fn = fn, .arg = arg };
	struct nl_cb *cb;
	int ret;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_err(cb, NL_CB_CUSTOM, req_err, &r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, req_done, &r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, req_done, &r);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, req_valid, &r);
	ret = nl_send_auto(c->sk, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		nl_cb_put(cb);
		return -EIO;
	}
	while (r.status > 0) {
		ret = nl_recvmsgs(c->sk, cb);
		if (ret < 0 && r.status > 0)
			r.status = -EIO;
	}
	nl_cb_put(cb);
	return r.status;
}

/* ---- output helpers ---------------------------------------------------- */

static bool first_item;

static void out_begin_list(const char *name, bool first)
{
	if (json)
		printf("%s\"%s\":[", first ? "" : ",", name);
	first_item = true;
}

static void out_end_list(void)
{
	if (json)
		printf("]");
}

static void out_item_begin(const char *label)
{
	if (json) {
		printf("%s{", first_item ? "" : ",");
	} else {
		printf("%s", label);
	}
	first_item = false;
}

static bool first_field = true;

static void out_u64(const char *key, uint64_t v)
{
	if (json)
		printf("%s\"%s\":%" PRIu64, first_field ? "" : ",", key, v);
	else
		printf(" %s %" PRIu64, key, v);
	first_field = false;
}

static void out_hex(const char *key, uint64_t v)
{
	if (json)
		printf("%s\"%s\":%" PRIu64, first_field ? "" : ",", key, v);
	else
		printf(" %s 0x%" PRIx64, key, v);
	first_field = false;
}

static void out_str(const char *key, const char *v)
{
	if (json)
		printf("%s\"%s\":\"%s\"", first_field ? "" : ",", key, v);
	else
		printf(" %s %s", key, v);
	first_field = false;
}

static void out_item_end(void)
{
	printf(json ? "}" : "\n");
	first_field = true;
}

/* ---- info (ioctl) ------------------------------------------------------ */

static int cmd_info(const char *dev)
{
	struct dmaplane_info info;
	struct dp_ep *ep;
	int ret;

	ret = dp_open(dev, 0, &ep);
	if (ret) {
		fprintf(stderr, "dpctl: %s: %s\n", dev ? dev : DP_DEFAULT_PATH,
			strerror(-ret));
		return 1;
	}
	ret = dp_info(ep, &info);
	dp_close(ep);
	if (ret) {
		fprintf(stderr, "dpctl: GET_INFO: %s\n", strerror(-ret));
		return 1;
	}
	if (json)
		printf("{\"abi_version\":%u,\"caps\":%llu,\"page_size\":%u}\n",
		       info.abi_version, (unsigned long long)info.caps, info.page_size);
	else
		printf("abi_version %u\ncaps 0x%llx\npage_size %u\n",
		       info.abi_version, (unsigned long long)info.caps, info.page_size);
	return 0;
}

/* ---- stats ------------------------------------------------------------- */

static const struct {
	int attr;
	const char *name;
	bool param;
} stat_names[] = {
	{ DMAPLANE_ATTR_STAT_ENDPOINTS, "endpoints", false },
	{ DMAPLANE_ATTR_STAT_REGIONS, "regions", false },
	{ DMAPLANE_ATTR_STAT_ARENAS, "arenas", false },
	{ DMAPLANE_ATTR_STAT_ARENA_PAGES, "arena_pages", false },
	{ DMAPLANE_ATTR_STAT_USER_MRS, "user_mrs", false },
	{ DMAPLANE_ATTR_STAT_PINNED_PAGES, "pinned_pages", false },
	{ DMAPLANE_ATTR_STAT_CHARGED_PAGES, "charged_pages", false },
	{ DMAPLANE_ATTR_STAT_DMABUFS, "dmabufs", false },
	{ DMAPLANE_ATTR_STAT_IMPORTS, "imports", false },
	{ DMAPLANE_ATTR_STAT_INVALIDATIONS, "invalidations", false },
	{ DMAPLANE_ATTR_STAT_POSTED_RECVS, "posted_recvs", false },
	{ DMAPLANE_ATTR_STAT_UNEXP_MSGS, "unexp_msgs", false },
	{ DMAPLANE_ATTR_STAT_XFER_PAGES, "xfer_pages", false },
	{ DMAPLANE_ATTR_PARAM_EAGER_THRESHOLD, "eager_threshold", true },
	{ DMAPLANE_ATTR_PARAM_UNEXP_BUDGET, "unexp_budget", true },
	{ DMAPLANE_ATTR_PARAM_UNEXP_MAX, "unexp_max", true },
	{ DMAPLANE_ATTR_PARAM_MAX_PINNED_MB, "max_pinned_mb", true },
	{ DMAPLANE_ATTR_PARAM_MR_CACHE_MAX_ENTRIES, "mr_cache_max_entries", true },
	{ DMAPLANE_ATTR_PARAM_PORT, "port", true },
};

static int print_stats(struct nlattr **tb, uint8_t cmd, void *arg)
{
	bool first = true;
	int pass;
	size_t i;

	(void)cmd;
	(void)arg;
	if (json)
		printf("{");
	for (pass = 0; pass < 2; pass++) {
		bool fresh = true;

		if (json)
			printf("%s\"%s\":{", first ? "" : ",", pass ? "params" : "stats");
		else if (pass)
			printf("params:\n");
		first = false;
		for (i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++) {
			uint64_t v;

			if (stat_names[i].param != pass || !tb[stat_names[i].attr])
				continue;
			v = nla_get_u64(tb[stat_names[i].attr]);
			if (json)
				printf("%s\"%s\":%" PRIu64, fresh ? "" : ",",
				       stat_names[i].name, v);
			else
				printf("%s%s %" PRIu64 "\n", pass ? "  " : "",
				       stat_names[i].name, v);
			fresh = false;
		}
		if (json)
			printf("}");
	}
	if (json)
		printf("}\n");
	return 0;
}

static int cmd_stats(struct nl_ctx *c)
{
	struct nl_msg *msg = req_new(c, DMAPLANE_CMD_GET_STATS, 0);

	if (!msg)
		return -ENOMEM;
	return req_run(c, msg, print_stats, NULL);
}

/* ---- show -------------------------------------------------------------- */

static uint64_t get_u(struct nlattr **tb, int attr)
{
	struct nlattr *a = tb[attr];

	if (!a)
		return 0;
	switch (nla_len(a)) {
	case 1:
		return nla_get_u8(a);
	case 2:
		return nla_get_u16(a);
	case 4:
		return nla_get_u32(a);
	default:
		return nla_get_u64(a);
	}
}

static int print_ep(struct nlattr **tb, uint8_t cmd, void *arg)
{
	(void)cmd;
	(void)arg;
	out_item_begin("ep");
	if (!json) {
		printf(" %" PRIu64, get_u(tb, DMAPLANE_ATTR_EP_ID));
		first_field = false;
	} else {
		out_u64("id", get_u(tb, DMAPLANE_ATTR_EP_ID));
	}
	out_hex("ep_uid", get_u(tb, DMAPLANE_ATTR_EP_UID));
	out_u64("uid", get_u(tb, DMAPLANE_ATTR_EP_USER));
	out_u64("regions", get_u(tb, DMAPLANE_ATTR_EP_NR_REGIONS));
	out_u64("posted_recvs", get_u(tb, DMAPLANE_ATTR_EP_POSTED_RECVS));
	out_u64("unexp_msgs", get_u(tb, DMAPLANE_ATTR_EP_UNEXP_MSGS));
	out_item_end();
	return 0;
}

static const char *kind_name(uint64_t kind)
{
	switch (kind) {
	case DMAPLANE_NL_REGION_ARENA:
		return "arena";
	case DMAPLANE_NL_REGION_USER:
		return "user";
	case DMAPLANE_NL_REGION_DMABUF:
		return "dmabuf";
	}
	return "unknown";
}

static void print_region_fields(struct nlattr **tb)
{
	out_u64("ep", get_u(tb, DMAPLANE_ATTR_EP_ID));
	out_u64("handle", get_u(tb, DMAPLANE_ATTR_REGION_HANDLE));
	out_str("kind", kind_name(get_u(tb, DMAPLANE_ATTR_REGION_KIND)));
	if (tb[DMAPLANE_ATTR_REGION_LEN])
		out_u64("len", get_u(tb, DMAPLANE_ATTR_REGION_LEN));
	if (tb[DMAPLANE_ATTR_REGION_ACCESS])
		out_hex("access", get_u(tb, DMAPLANE_ATTR_REGION_ACCESS));
	if (tb[DMAPLANE_ATTR_REGION_STATE])
		out_str("state", get_u(tb, DMAPLANE_ATTR_REGION_STATE) ==
			DMAPLANE_NL_REGION_VALID ? "valid" : "invalid");
}

static int print_region(struct nlattr **tb, uint8_t cmd, void *arg)
{
	(void)cmd;
	(void)arg;
	out_item_begin("region");
	print_region_fields(tb);
	out_item_end();
	return 0;
}

static int dump(struct nl_ctx *c, uint8_t cmd,
		int (*fn)(struct nlattr **tb, uint8_t cmd, void *arg))
{
	struct nl_msg *msg = req_new(c, cmd, NLM_F_DUMP);

	if (!msg)
		return -ENOMEM;
	return req_run(c, msg, fn, NULL);
}

static int cmd_show(struct nl_ctx *c, bool eps, bool regions)
{
	int ret = 0;

	first_field = true;
	if (json)
		printf("{");
	if (eps) {
		out_begin_list("endpoints", true);
		ret = dump(c, DMAPLANE_CMD_GET_ENDPOINT, print_ep);
		out_end_list();
	}
	if (!ret && regions) {
		out_begin_list("regions", !eps);
		ret = dump(c, DMAPLANE_CMD_GET_REGION, print_region);
		out_end_list();
	}
	if (json)
		printf("}\n");
	return ret;
}

/* ---- peers ------------------------------------------------------------- */

struct peer_addr {
	uint16_t family;
	int len;
	unsigned char addr[16];
};

static int parse_addr(const char *s, struct peer_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->addr) == 1) {
		a->family = AF_INET;
		a->len = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->addr) == 1) {
		a->family = AF_INET6;
		a->len = 16;
		return 0;
	}
	return -EINVAL;
}

static void format_addr(struct nlattr **tb, char *buf, size_t len)
{
	int family = (int)get_u(tb, DMAPLANE_ATTR_PEER_FAMILY);
	struct nlattr *a = tb[DMAPLANE_ATTR_PEER_ADDR];

	snprintf(buf, len, "?");
	if (!a || (family != AF_INET && family != AF_INET6) ||
	    nla_len(a) != (family == AF_INET ? 4 : 16))
		return;
	inet_ntop(family, nla_data(a), buf, len);
}

static const char *peer_state_name(uint64_t state)
{
	switch (state) {
	case DMAPLANE_NL_PEER_UP:
		return "up";
	case DMAPLANE_NL_PEER_CONNECTING:
		return "connecting";
	default:
		return "down";
	}
}

static int print_peer(struct nlattr **tb, uint8_t cmd, void *arg)
{
	char addr[INET6_ADDRSTRLEN];

	(void)cmd;
	(void)arg;
	format_addr(tb, addr, sizeof(addr));
	out_item_begin("peer");
	out_str("addr", addr);
	out_u64("port", get_u(tb, DMAPLANE_ATTR_PEER_PORT));
	out_str("state", peer_state_name(get_u(tb, DMAPLANE_ATTR_PEER_STATE)));
	out_hex("node_id", get_u(tb, DMAPLANE_ATTR_PEER_NODE_ID));
	out_u64("slot", get_u(tb, DMAPLANE_ATTR_PEER_SLOT));
	out_u64("tx_msgs", get_u(tb, DMAPLANE_ATTR_PEER_TX_MSGS));
	out_u64("rx_msgs", get_u(tb, DMAPLANE_ATTR_PEER_RX_MSGS));
	out_u64("tx_bytes", get_u(tb, DMAPLANE_ATTR_PEER_TX_BYTES));
	out_u64("rx_bytes", get_u(tb, DMAPLANE_ATTR_PEER_RX_BYTES));
	out_u64("drops", get_u(tb, DMAPLANE_ATTR_PEER_DROPS));
	out_u64("mem_bytes", get_u(tb, DMAPLANE_ATTR_PEER_MEM_BYTES));
	out_item_end();
	return 0;
}

static int cmd_peer_list(struct nl_ctx *c)
{
	int ret;

	first_field = true;
	if (json)
		printf("{");
	out_begin_list("peers", true);
	ret = dump(c, DMAPLANE_CMD_GET_PEER, print_peer);
	out_end_list();
	if (json)
		printf("}\n");
	return ret;
}

static int cmd_peer_change(struct nl_ctx *c, uint8_t cmd, const struct peer_addr *a,
			   long port)
{
	struct nl_msg *msg = req_new(c, cmd, 0);
	int ret;

	if (!msg)
		return -ENOMEM;
	if (nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, a->family) ||
	    nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, a->len, a->addr) ||
	    (port >= 0 && nla_put_u16(msg, DMAPLANE_ATTR_PEER_PORT, (uint16_t)port))) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	ret = req_run(c, msg, NULL, NULL);
	if (!ret && json)
		printf("{}\n");
	return ret;
}

/* ---- monitor ----------------------------------------------------------- */

static int print_event(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[DMAPLANE_ATTR_MAX + 1];
	const char *name;

	(void)arg;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, DMAPLANE_ATTR_MAX, NULL))
		return NL_SKIP;
	switch (gh->cmd) {
	case DMAPLANE_CMD_EVENT_PEER_ADDED:
		name = "peer_added";
		break;
	case DMAPLANE_CMD_EVENT_PEER_REMOVED:
		name = "peer_removed";
		break;
	case DMAPLANE_CMD_EVENT_REGION_INVALIDATED:
		name = "region_invalidated";
		break;
	case DMAPLANE_CMD_EVENT_PEER_UP:
		name = "peer_up";
		break;
	case DMAPLANE_CMD_EVENT_PEER_DOWN:
		name = "peer_down";
		break;
	default:
		return NL_SKIP;
	}
	first_item = true;
	first_field = true;
	if (json) {
		printf("{");
		out_str("event", name);
	} else {
		printf("%s", name);
	}
	if (gh->cmd == DMAPLANE_CMD_EVENT_REGION_INVALIDATED) {
		print_region_fields(tb);
	} else {
		char addr[INET6_ADDRSTRLEN];

		format_addr(tb, addr, sizeof(addr));
		out_str("addr", addr);
		out_u64("port", get_u(tb, DMAPLANE_ATTR_PEER_PORT));
		if (gh->cmd == DMAPLANE_CMD_EVENT_PEER_UP ||
		    gh->cmd == DMAPLANE_CMD_EVENT_PEER_DOWN) {
			out_hex("node_id", get_u(tb, DMAPLANE_ATTR_PEER_NODE_ID));
			out_u64("slot", get_u(tb, DMAPLANE_ATTR_PEER_SLOT));
		}
	}
	printf(json ? "}\n" : "\n");
	first_field = true;
	fflush(stdout);
	return NL_OK;
}

static int cmd_monitor(struct nl_ctx *c)
{
	int grp, ret;

	/*
	 * The group exists only where the kernel can keep it to
	 * CAP_NET_ADMIN (6.7 and newer), and only that may join it.
	 */
	grp = genl_ctrl_resolve_grp(c->sk, DMAPLANE_GENL_NAME, DMAPLANE_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return -EOPNOTSUPP;
	nl_socket_disable_seq_check(c->sk);
	nl_socket_modify_cb(c->sk, NL_CB_VALID, NL_CB_CUSTOM, print_event, NULL);
	ret = nl_socket_add_membership(c->sk, grp);
	if (ret < 0)
		return ret == -NLE_PERM ? -EPERM : -EIO;
	for (;;) {
		ret = nl_recvmsgs_default(c->sk);
		if (ret < 0 && ret != -NLE_INTR && ret != -NLE_AGAIN)
			return -EIO;
	}
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
	const char *dev = NULL;
	struct nl_ctx c;
	int i = 1, ret;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			json = true;
			i++;
		} else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			dev = argv[i + 1];
			i += 2;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			return usage(stdout);
		} else {
			return usage(stderr);
		}
	}
	if (i >= argc)
		return usage(stderr);
	what = argv[i];
	if (!strcmp(argv[i], "info"))
		return i + 1 == argc ? cmd_info(dev) : usage(stderr);

	if (!strcmp(argv[i], "show")) {
		bool eps = true, regions = true;

		if (i + 2 == argc && (!strcmp(argv[i + 1], "ep") ||
				      !strcmp(argv[i + 1], "endpoint")))
			regions = false;
		else if (i + 2 == argc && !strcmp(argv[i + 1], "region"))
			eps = false;
		else if (i + 1 != argc)
			return usage(stderr);
		if (dp_nl_open(&c))
			return 1;
		ret = cmd_show(&c, eps, regions);
	} else if (!strcmp(argv[i], "stats")) {
		if (i + 1 != argc)
			return usage(stderr);
		if (dp_nl_open(&c))
			return 1;
		ret = cmd_stats(&c);
	} else if (!strcmp(argv[i], "monitor")) {
		if (i + 1 != argc)
			return usage(stderr);
		if (dp_nl_open(&c))
			return 1;
		setvbuf(stdout, NULL, _IOLBF, 0);
		ret = cmd_monitor(&c);
	} else if (!strcmp(argv[i], "peer") && i + 1 < argc) {
		const char *sub = argv[i + 1];
		static char name[32];
		struct peer_addr a;
		long port = -1;

		snprintf(name, sizeof(name), "peer %s", sub);
		what = name;
		if (!strcmp(sub, "list") || !strcmp(sub, "show")) {
			if (i + 2 != argc)
				return usage(stderr);
			if (dp_nl_open(&c))
				return 1;
			ret = cmd_peer_list(&c);
		} else if (!strcmp(sub, "add") || !strcmp(sub, "del")) {
			if (i + 3 > argc)
				return usage(stderr);
			if (parse_addr(argv[i + 2], &a)) {
				fprintf(stderr, "dpctl: %s: invalid address \"%s\"\n",
					what, argv[i + 2]);
				return 2;
			}
			if (!strcmp(sub, "add") && i + 5 == argc &&
			    !strcmp(argv[i + 3], "port")) {
				char *end;

				errno = 0;
				port = strtol(argv[i + 4], &end, 0);
				if (errno || *end || end == argv[i + 4] ||
				    port < 0 || port > 65535) {
					fprintf(stderr, "dpctl: %s: invalid port \"%s\"\n",
						what, argv[i + 4]);
					return 2;
				}
			} else if (i + 3 != argc) {
				return usage(stderr);
			}
			if (dp_nl_open(&c))
				return 1;
			ret = cmd_peer_change(&c, !strcmp(sub, "add") ? DMAPLANE_CMD_PEER_ADD :
					      DMAPLANE_CMD_PEER_DEL, &a, port);
		} else {
			return usage(stderr);
		}
	} else {
		return usage(stderr);
	}
	dp_nl_close(&c);
	fflush(stdout);
	return ret ? fail(ret) : 0;
}
