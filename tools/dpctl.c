// SPDX-License-Identifier: GPL-2.0
/*
 * dpctl: administer dmaplane, on the grammar of iproute2's rdma tool:
 *
 *   dpctl [OPTIONS] OBJECT { COMMAND | help }
 *   OBJECT  := { dev | endpoint | region | peer | stats | monitor }
 *   OPTIONS := { -V[ersion] | -j[son] | -p[retty] | -d[etails] | -h[elp] }
 *
 * Every object has "show" as its default command and "help"; commands may
 * be abbreviated to any unique prefix (the first match in the table wins,
 * as in iproute2).  dev talks to /dev/dmaplane (an ioctl); everything else
 * to the generic netlink family "dmaplane" (uapi/linux/dmaplane.h)
 * through libnl-genl-3.  -j prints one JSON document per command
 * (monitor: one per event), -p indents it.  Exit status: 0 on success,
 * 1 when the kernel or the system refused, 2 on usage errors.
 *
 * Spellings of the first dpctl are kept as aliases: "info" (dev show),
 * "show [ep | region]" (endpoints and regions in one document), "ep"
 * (endpoint), "peer list" (peer show), "peer delete" (peer del).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
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

#include "json_writer.h"

#ifndef DP_VERSION
#define DP_VERSION "unknown"
#endif

#define DP_EUSAGE 2	/* exit status of usage errors */

struct nl_ctx {
	struct nl_sock *sk;
	int family;
};

struct peer_addr {
	uint16_t family;
	int len;
	unsigned char addr[16];
};

/**
 * struct dp - the state of one dpctl run
 * @argc: arguments left
 * @argv: the next argument
 * @json: -j
 * @pretty: -p
 * @details: -d
 * @what: the command, for error messages ("peer add")
 * @jw: the JSON document being written, or NULL
 * @nl: the netlink socket, once opened
 * @nl_open: @nl is open
 * @ep_filter: show only this endpoint id (endpoint show ID, region show
 *	endpoint ID); -1: all
 * @peer_filter: show only this peer (peer show ADDR); family 0: all
 */
struct dp {
	int argc;
	char **argv;
	bool json;
	bool pretty;
	bool details;
	char what[64];
	struct json_writer *jw;
	struct nl_ctx nl;
	bool nl_open;
	long long ep_filter;
	struct peer_addr peer_filter;
};

struct dp_cmd {
	const char *name;	/* NULL: the default command (no argument) */
	int (*func)(struct dp *dp);
};

/* ---- arguments and dispatch --------------------------------------------- */

static bool dp_no_arg(const struct dp *dp)
{
	return dp->argc <= 0;
}

static const char *dp_argv(const struct dp *dp)
{
	return dp->argc > 0 ? dp->argv[0] : NULL;
}

static void dp_next(struct dp *dp)
{
	if (dp->argc > 0) {
		dp->argc--;
		dp->argv++;
	}
}

/* @arg is a non-empty prefix of @name (iproute2's matches()). */
static bool matches(const char *arg, const char *name)
{
	size_t len = strlen(arg);

	return len && len <= strlen(name) && !strncmp(arg, name, len);
}

static int dp_usage_error(struct dp *dp, int (*help)(FILE *f), const char *fmt,
			  const char *arg)
{
	(void)dp;
	fprintf(stderr, "dpctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	if (help)
		help(stderr);
	return DP_EUSAGE;
}

/*
 * Run the command of @cmds that the next argument names: cmds[0] (the
 * default) when there is none, the first whose name it abbreviates
 * otherwise.  Within an object, "help" after a command runs the object's
 * help command.
 */
static int dp_exec_cmd(struct dp *dp, const struct dp_cmd *cmds, const char *object)
{
	const struct dp_cmd *c, *help = NULL;
	const char *arg = dp_argv(dp);

	for (c = cmds + 1; c->name; c++)
		if (!strcmp(c->name, "help"))
			help = c;
	if (!arg) {
		snprintf(dp->what, sizeof(dp->what), "%s", object);
		return cmds[0].func(dp);
	}
	for (c = cmds + 1; c->name; c++) {
		if (!matches(arg, c->name))
			continue;
		dp_next(dp);
		if (*object && help && dp_argv(dp) && !strcmp(dp_argv(dp), "help"))
			return help->func(dp);
		snprintf(dp->what, sizeof(dp->what), "%s%s%s", object,
			 *object ? " " : "", c->name);
		return c->func(dp);
	}
	if (*object)
		fprintf(stderr, "dpctl: %s: unknown command \"%s\"; try \"dpctl %s help\"\n",
			object, arg, object);
	else
		fprintf(stderr, "dpctl: unknown object \"%s\"; try \"dpctl help\"\n", arg);
	return DP_EUSAGE;
}

static int dp_fail(struct dp *dp, int err)
{
	fflush(stdout);
	fprintf(stderr, "dpctl: %s: %s\n", dp->what, strerror(err < 0 ? -err : err));
	return 1;
}

/* ---- output: text or JSON ----------------------------------------------- */

/* A JSON document is one object; text output has no frame. */
static void out_begin(struct dp *dp)
{
	if (!dp->json)
		return;
	dp->jw = jsonw_new(stdout, dp->pretty);
	if (!dp->jw) {
		perror("dpctl");
		exit(1);
	}
	jsonw_start_object(dp->jw);
}

static void out_end(struct dp *dp)
{
	if (!dp->jw)
		return;
	jsonw_end_object(dp->jw);
	jsonw_destroy(&dp->jw);
}

static void out_list_begin(struct dp *dp, const char *name)
{
	if (!dp->jw)
		return;
	jsonw_name(dp->jw, name);
	jsonw_start_array(dp->jw);
}

static void out_list_end(struct dp *dp)
{
	if (dp->jw)
		jsonw_end_array(dp->jw);
}

/* One item of a list: an object in JSON, a line starting with @label in text. */
static void out_item_begin(struct dp *dp, const char *label)
{
	if (dp->jw)
		jsonw_start_object(dp->jw);
	else
		fputs(label, stdout);
}

static void out_item_end(struct dp *dp)
{
	if (dp->jw)
		jsonw_end_object(dp->jw);
	else
		putchar('\n');
}

static void out_u64(struct dp *dp, const char *key, uint64_t v)
{
	if (dp->jw)
		jsonw_u64_field(dp->jw, key, v);
	else
		printf(" %s %" PRIu64, key, v);
}

/* A number JSON gives in decimal and text in hex (ids, bit masks). */
static void out_hex(struct dp *dp, const char *key, uint64_t v)
{
	if (dp->jw)
		jsonw_u64_field(dp->jw, key, v);
	else
		printf(" %s 0x%" PRIx64, key, v);
}

static void out_str(struct dp *dp, const char *key, const char *v)
{
	if (dp->jw)
		jsonw_string_field(dp->jw, key, v);
	else
		printf(" %s %s", key, v);
}

/* The names of the bits set in @v, comma-separated ("none" if none). */
static const char *flags_str(char *buf, size_t len, uint64_t v,
			     const char *const *names, unsigned int n)
{
	uint64_t known = n >= 64 ? ~0ULL : (1ULL << n) - 1;
	size_t off = 0;
	unsigned int i;

	buf[0] = 0;
	for (i = 0; i < n && i < 64; i++)
		if (v & (1ULL << i))
			off += snprintf(buf + off, off < len ? len - off : 0, "%s%s",
					off ? "," : "", names[i]);
	if (v & ~known)
		off += snprintf(buf + off, off < len ? len - off : 0, "%sunknown",
				off ? "," : "");
	if (!off)
		snprintf(buf, len, "none");
	return buf;
}

/* The names of the bits set in @v: a JSON array, a comma list in text. */
static void out_flags(struct dp *dp, const char *key, uint64_t v,
		      const char *const *names, unsigned int n)
{
	uint64_t known = n >= 64 ? ~0ULL : (1ULL << n) - 1;
	char buf[256];
	unsigned int i;

	if (!dp->jw) {
		printf(" %s %s", key, flags_str(buf, sizeof(buf), v, names, n));
		return;
	}
	jsonw_name(dp->jw, key);
	jsonw_start_array(dp->jw);
	for (i = 0; i < n && i < 64; i++)
		if (v & (1ULL << i))
			jsonw_string(dp->jw, names[i]);
	if (v & ~known)
		jsonw_string(dp->jw, "unknown");
	jsonw_end_array(dp->jw);
}

/* ---- netlink plumbing --------------------------------------------------- */

static int dp_nl(struct dp *dp)
{
	struct nl_ctx *c = &dp->nl;

	if (dp->nl_open)
		return 0;
	c->sk = nl_socket_alloc();
	if (!c->sk)
		return dp_fail(dp, ENOMEM);
	if (genl_connect(c->sk)) {
		int err = errno ? errno : EIO;

		nl_socket_free(c->sk);
		return dp_fail(dp, err);
	}
	c->family = genl_ctrl_resolve(c->sk, DMAPLANE_GENL_NAME);
	if (c->family < 0) {
		nl_socket_free(c->sk);
		fprintf(stderr, "dpctl: %s: generic netlink family \"%s\" not found "
			"(is the dmaplane module loaded?)\n", dp->what, DMAPLANE_GENL_NAME);
		return 1;
	}
	dp->nl_open = true;
	return 0;
}

static void dp_nl_close(struct dp *dp)
{
	if (dp->nl_open)
		nl_socket_free(dp->nl.sk);
	dp->nl_open = false;
}

typedef int (*row_fn)(struct dp *dp, struct nlattr **tb, uint8_t cmd);

struct nl_req {
	int status;	/* 1: waiting, 0: done, < 0: -errno */
	row_fn fn;
	struct dp *dp;
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
	if (r->fn) {
		int ret = r->fn(r->dp, tb, gh->cmd);

		if (ret) {
			r->status = ret;
			return NL_STOP;
		}
	}
	return NL_OK;
}

static struct nl_msg *req_new(struct dp *dp, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, dp->nl.family, 0, flags, cmd,
			 DMAPLANE_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* Send @msg (consumed) and run @fn on every reply; returns 0 or -errno. */
static int req_run(struct dp *dp, struct nl_msg *msg, row_fn fn)
{
	struct nl_req r = { .status = 1, .fn = fn, .dp = dp };
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
	ret = nl_send_auto(dp->nl.sk, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		nl_cb_put(cb);
		return -EIO;
	}
	while (r.status > 0) {
		ret = nl_recvmsgs(dp->nl.sk, cb);
		if (ret < 0 && r.status > 0)
			r.status = -EIO;
	}
	nl_cb_put(cb);
	return r.status;
}

static int dump(struct dp *dp, uint8_t cmd, row_fn fn)
{
	struct nl_msg *msg = req_new(dp, cmd, NLM_F_DUMP);

	if (!msg)
		return -ENOMEM;
	return req_run(dp, msg, fn);
}

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

/* A number argument in [0, max]; -1 (after a message) if it is not one. */
static long long parse_num(const char *what, const char *s, unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s || *s == '-' || v > max) {
		fprintf(stderr, "dpctl: %s: invalid %s \"%s\"\n", what,
			max == 65535 ? "port" : "number", s);
		return -1;
	}
	return (long long)v;
}

/* ---- help --------------------------------------------------------------- */

static int help_main(FILE *f)
{
	fprintf(f,
		"Usage: dpctl [ OPTIONS ] OBJECT { COMMAND | help }\n"
		"       dpctl [ -j[son] ] [ -p[retty] ] [ -d[etails] ] OBJECT ...\n"
		"where  OBJECT := { dev | endpoint | region | peer | stats | monitor | help }\n"
		"       OPTIONS := { -V[ersion] | -j[son] | -p[retty] | -d[etails] | -h[elp] }\n"
		"Every OBJECT has \"show\" as its default COMMAND; see dpctl(8).\n");
	return 0;
}

static int help_dev(FILE *f)
{
	fprintf(f,
		"Usage: dpctl dev show [ DEVICE ]\n"
		"       dpctl dev help\n"
		"DEVICE is the character device, " DP_DEFAULT_PATH " by default.\n"
		"-d: names of the capability bits and the device's path.\n");
	return 0;
}

static int help_endpoint(FILE *f)
{
	fprintf(f,
		"Usage: dpctl endpoint show [ ID ]\n"
		"       dpctl endpoint help\n"
		"Without CAP_NET_ADMIN, only endpoints opened with your own uid are shown.\n");
	return 0;
}

static int help_region(FILE *f)
{
	fprintf(f,
		"Usage: dpctl region show [ endpoint ID ]\n"
		"       dpctl region help\n"
		"-d: names of the access bits.\n");
	return 0;
}

static int help_peer(FILE *f)
{
	fprintf(f,
		"Usage: dpctl peer show [ ADDR ]\n"
		"       dpctl peer add ADDR [ port PORT ]\n"
		"       dpctl peer del ADDR\n"
		"       dpctl peer help\n"
		"ADDR is an IPv4 or IPv6 address; add and del need CAP_NET_ADMIN.\n");
	return 0;
}

static int help_stats(FILE *f)
{
	fprintf(f,
		"Usage: dpctl stats show\n"
		"       dpctl stats help\n"
		"Every counter and integer parameter the loaded module reports.\n");
	return 0;
}

static int help_monitor(FILE *f)
{
	fprintf(f,
		"Usage: dpctl monitor [ show ]\n"
		"       dpctl monitor help\n"
		"Prints events until interrupted; needs CAP_NET_ADMIN.\n");
	return 0;
}

/* ---- dev (ioctl) -------------------------------------------------------- */

static const char *const cap_names[] = {
	"info", "arena", "mr", "dmabuf_export", "dmabuf_import", "msg", "rma", "remote",
	"cq_data", "src_av", "region_buf", "put_data", "uring_cmd",
	"recv_inline",
};

static int dev_show(struct dp *dp)
{
	const char *dev = DP_DEFAULT_PATH;
	struct dmaplane_info info;
	struct dp_ep *ep;
	int ret;

	if (!dp_no_arg(dp)) {
		dev = dp_argv(dp);
		dp_next(dp);
	}
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_dev, "dev show: unexpected \"%s\"", dp_argv(dp));
	ret = dp_open(dev, 0, &ep);
	if (ret) {
		fprintf(stderr, "dpctl: %s: %s\n", dev, strerror(-ret));
		return 1;
	}
	ret = dp_info(ep, &info);
	dp_close(ep);
	if (ret) {
		fprintf(stderr, "dpctl: GET_INFO: %s\n", strerror(-ret));
		return 1;
	}
	out_begin(dp);
	if (dp->jw) {
		jsonw_u64_field(dp->jw, "abi_version", info.abi_version);
		jsonw_u64_field(dp->jw, "caps", info.caps);
		jsonw_u64_field(dp->jw, "page_size", info.page_size);
		jsonw_string_field(dp->jw, "device", dev);
		if (dp->details)
			out_flags(dp, "caps_names", info.caps, cap_names,
				  sizeof(cap_names) / sizeof(cap_names[0]));
	} else {
		printf("abi_version %u\ncaps 0x%llx\npage_size %u\n",
		       info.abi_version, (unsigned long long)info.caps, info.page_size);
		if (dp->details) {
			char buf[256];

			printf("device %s\ncaps_names %s\n", dev,
			       flags_str(buf, sizeof(buf), info.caps, cap_names,
					 sizeof(cap_names) / sizeof(cap_names[0])));
		}
	}
	out_end(dp);
	return 0;
}

static int dev_help(struct dp *dp)
{
	(void)dp;
	return help_dev(stdout);
}

static int cmd_dev(struct dp *dp)
{
	static const struct dp_cmd cmds[] = {
		{ NULL, dev_show },
		{ "show", dev_show },
		{ "list", dev_show },
		{ "help", dev_help },
		{ NULL, NULL },
	};

	return dp_exec_cmd(dp, cmds, "dev");
}

/* The first dpctl's "info": dev show, no arguments. */
static int cmd_info(struct dp *dp)
{
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_dev, "info: unexpected \"%s\"", dp_argv(dp));
	snprintf(dp->what, sizeof(dp->what), "dev show");
	return dev_show(dp);
}

/* ---- endpoint and region ------------------------------------------------ */

static int print_ep(struct dp *dp, struct nlattr **tb, uint8_t cmd)
{
	uint64_t id = get_u(tb, DMAPLANE_ATTR_EP_ID);

	(void)cmd;
	if (dp->ep_filter >= 0 && id != (uint64_t)dp->ep_filter)
		return 0;
	out_item_begin(dp, "ep");
	if (dp->jw)
		jsonw_u64_field(dp->jw, "id", id);
	else
		printf(" %" PRIu64, id);
	out_hex(dp, "ep_uid", get_u(tb, DMAPLANE_ATTR_EP_UID));
	out_u64(dp, "uid", get_u(tb, DMAPLANE_ATTR_EP_USER));
	out_u64(dp, "regions", get_u(tb, DMAPLANE_ATTR_EP_NR_REGIONS));
	out_u64(dp, "posted_recvs", get_u(tb, DMAPLANE_ATTR_EP_POSTED_RECVS));
	out_u64(dp, "unexp_msgs", get_u(tb, DMAPLANE_ATTR_EP_UNEXP_MSGS));
	out_item_end(dp);
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

static const char *const access_names[] = {
	"local_write", "remote_read", "remote_write",
};

static void print_region_fields(struct dp *dp, struct nlattr **tb)
{
	out_u64(dp, "ep", get_u(tb, DMAPLANE_ATTR_EP_ID));
	out_u64(dp, "handle", get_u(tb, DMAPLANE_ATTR_REGION_HANDLE));
	out_str(dp, "kind", kind_name(get_u(tb, DMAPLANE_ATTR_REGION_KIND)));
	if (tb[DMAPLANE_ATTR_REGION_LEN])
		out_u64(dp, "len", get_u(tb, DMAPLANE_ATTR_REGION_LEN));
	if (tb[DMAPLANE_ATTR_REGION_ACCESS]) {
		out_hex(dp, "access", get_u(tb, DMAPLANE_ATTR_REGION_ACCESS));
		if (dp->details)
			out_flags(dp, "access_names", get_u(tb, DMAPLANE_ATTR_REGION_ACCESS),
				  access_names,
				  sizeof(access_names) / sizeof(access_names[0]));
	}
	if (tb[DMAPLANE_ATTR_REGION_STATE])
		out_str(dp, "state", get_u(tb, DMAPLANE_ATTR_REGION_STATE) ==
			DMAPLANE_NL_REGION_VALID ? "valid" : "invalid");
}

static int print_region(struct dp *dp, struct nlattr **tb, uint8_t cmd)
{
	(void)cmd;
	if (dp->ep_filter >= 0 && get_u(tb, DMAPLANE_ATTR_EP_ID) != (uint64_t)dp->ep_filter)
		return 0;
	out_item_begin(dp, "region");
	print_region_fields(dp, tb);
	out_item_end(dp);
	return 0;
}

/* Endpoints and/or regions, one document: {"endpoints":[...],"regions":[...]}. */
static int show_objects(struct dp *dp, bool eps, bool regions)
{
	int ret = 0;

	if (dp_nl(dp))
		return 1;
	out_begin(dp);
	if (eps) {
		out_list_begin(dp, "endpoints");
		ret = dump(dp, DMAPLANE_CMD_GET_ENDPOINT, print_ep);
		out_list_end(dp);
	}
	if (!ret && regions) {
		out_list_begin(dp, "regions");
		ret = dump(dp, DMAPLANE_CMD_GET_REGION, print_region);
		out_list_end(dp);
	}
	out_end(dp);
	return ret ? dp_fail(dp, ret) : 0;
}

static int endpoint_show(struct dp *dp)
{
	if (!dp_no_arg(dp)) {
		dp->ep_filter = parse_num(dp->what, dp_argv(dp), UINT32_MAX);
		if (dp->ep_filter < 0)
			return DP_EUSAGE;
		dp_next(dp);
	}
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_endpoint, "endpoint show: unexpected \"%s\"",
				      dp_argv(dp));
	return show_objects(dp, true, false);
}

static int endpoint_help(struct dp *dp)
{
	(void)dp;
	return help_endpoint(stdout);
}

static int cmd_endpoint(struct dp *dp)
{
	static const struct dp_cmd cmds[] = {
		{ NULL, endpoint_show },
		{ "show", endpoint_show },
		{ "list", endpoint_show },
		{ "help", endpoint_help },
		{ NULL, NULL },
	};

	return dp_exec_cmd(dp, cmds, "endpoint");
}

static int region_show(struct dp *dp)
{
	if (!dp_no_arg(dp) && (!strcmp(dp_argv(dp), "endpoint") ||
			       !strcmp(dp_argv(dp), "ep"))) {
		dp_next(dp);
		if (dp_no_arg(dp))
			return dp_usage_error(dp, help_region, "region show: %s",
					      "endpoint needs an ID");
		dp->ep_filter = parse_num(dp->what, dp_argv(dp), UINT32_MAX);
		if (dp->ep_filter < 0)
			return DP_EUSAGE;
		dp_next(dp);
	}
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_region, "region show: unexpected \"%s\"",
				      dp_argv(dp));
	return show_objects(dp, false, true);
}

static int region_help(struct dp *dp)
{
	(void)dp;
	return help_region(stdout);
}

static int cmd_region(struct dp *dp)
{
	static const struct dp_cmd cmds[] = {
		{ NULL, region_show },
		{ "show", region_show },
		{ "list", region_show },
		{ "help", region_help },
		{ NULL, NULL },
	};

	return dp_exec_cmd(dp, cmds, "region");
}

/* The first dpctl's "show [ep | endpoint | region]": one document for both. */
static int cmd_show(struct dp *dp)
{
	bool eps = true, regions = true;

	if (!dp_no_arg(dp)) {
		if (!strcmp(dp_argv(dp), "ep") || !strcmp(dp_argv(dp), "endpoint"))
			regions = false;
		else if (!strcmp(dp_argv(dp), "region"))
			eps = false;
		else
			return dp_usage_error(dp, help_main, "show: unexpected \"%s\"",
					      dp_argv(dp));
		dp_next(dp);
	}
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_main, "show: unexpected \"%s\"", dp_argv(dp));
	return show_objects(dp, eps, regions);
}

/* ---- stats -------------------------------------------------------------- */

/* Print one %DMAPLANE_ATTR_STAT_COUNTERS or %DMAPLANE_ATTR_PARAMS list. */
static void print_named(struct dp *dp, struct nlattr *nest, const char *indent)
{
	struct nlattr *e;
	int rem;

	if (!nest)
		return;
	nla_for_each_nested(e, nest, rem) {
		struct nlattr *tb[DMAPLANE_ATTR_MAX + 1];
		struct nlattr *name, *val;

		if (nla_type(e) != DMAPLANE_ATTR_STAT_ENTRY ||
		    nla_parse_nested(tb, DMAPLANE_ATTR_MAX, e, NULL))
			continue;
		name = tb[DMAPLANE_ATTR_STAT_ENTRY_NAME];
		val = tb[DMAPLANE_ATTR_STAT_ENTRY_VALUE];
		if (!name || !val || nla_len(val) != sizeof(uint64_t) ||
		    !memchr(nla_data(name), 0, nla_len(name)))
			continue;
		if (dp->jw)
			jsonw_u64_field(dp->jw, nla_get_string(name), nla_get_u64(val));
		else
			printf("%s%s %" PRIu64 "\n", indent, nla_get_string(name),
			       nla_get_u64(val));
	}
}

static int print_stats(struct dp *dp, struct nlattr **tb, uint8_t cmd)
{
	(void)cmd;
	if (!tb[DMAPLANE_ATTR_STAT_COUNTERS]) {
		fprintf(stderr, "dpctl: %s: the module does not name its counters "
			"(older than this dpctl)\n", dp->what);
		return -EPROTONOSUPPORT;
	}
	out_begin(dp);
	if (dp->jw) {
		jsonw_name(dp->jw, "stats");
		jsonw_start_object(dp->jw);
	}
	print_named(dp, tb[DMAPLANE_ATTR_STAT_COUNTERS], "");
	if (dp->jw) {
		jsonw_end_object(dp->jw);
		jsonw_name(dp->jw, "params");
		jsonw_start_object(dp->jw);
	} else {
		printf("params:\n");
	}
	print_named(dp, tb[DMAPLANE_ATTR_PARAMS], "  ");
	if (dp->jw)
		jsonw_end_object(dp->jw);
	out_end(dp);
	return 0;
}

static int stats_show(struct dp *dp)
{
	struct nl_msg *msg;
	int ret;

	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_stats, "stats show: unexpected \"%s\"",
				      dp_argv(dp));
	if (dp_nl(dp))
		return 1;
	msg = req_new(dp, DMAPLANE_CMD_GET_STATS, 0);
	if (!msg)
		return dp_fail(dp, ENOMEM);
	ret = req_run(dp, msg, print_stats);
	if (ret == -EPROTONOSUPPORT)
		return 1;
	return ret ? dp_fail(dp, ret) : 0;
}

static int stats_help(struct dp *dp)
{
	(void)dp;
	return help_stats(stdout);
}

static int cmd_stats(struct dp *dp)
{
	static const struct dp_cmd cmds[] = {
		{ NULL, stats_show },
		{ "show", stats_show },
		{ "list", stats_show },
		{ "help", stats_help },
		{ NULL, NULL },
	};

	return dp_exec_cmd(dp, cmds, "stats");
}

/* ---- peer --------------------------------------------------------------- */

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

static bool peer_matches(const struct peer_addr *f, struct nlattr **tb)
{
	struct nlattr *a = tb[DMAPLANE_ATTR_PEER_ADDR];

	if (!f->family)
		return true;
	return a && get_u(tb, DMAPLANE_ATTR_PEER_FAMILY) == f->family &&
	       nla_len(a) == f->len && !memcmp(nla_data(a), f->addr, f->len);
}

static int print_peer(struct dp *dp, struct nlattr **tb, uint8_t cmd)
{
	char addr[INET6_ADDRSTRLEN];

	(void)cmd;
	if (!peer_matches(&dp->peer_filter, tb))
		return 0;
	format_addr(tb, addr, sizeof(addr));
	out_item_begin(dp, "peer");
	out_str(dp, "addr", addr);
	out_u64(dp, "port", get_u(tb, DMAPLANE_ATTR_PEER_PORT));
	out_str(dp, "state", peer_state_name(get_u(tb, DMAPLANE_ATTR_PEER_STATE)));
	out_hex(dp, "node_id", get_u(tb, DMAPLANE_ATTR_PEER_NODE_ID));
	out_u64(dp, "slot", get_u(tb, DMAPLANE_ATTR_PEER_SLOT));
	out_u64(dp, "tx_msgs", get_u(tb, DMAPLANE_ATTR_PEER_TX_MSGS));
	out_u64(dp, "rx_msgs", get_u(tb, DMAPLANE_ATTR_PEER_RX_MSGS));
	out_u64(dp, "tx_bytes", get_u(tb, DMAPLANE_ATTR_PEER_TX_BYTES));
	out_u64(dp, "rx_bytes", get_u(tb, DMAPLANE_ATTR_PEER_RX_BYTES));
	out_u64(dp, "drops", get_u(tb, DMAPLANE_ATTR_PEER_DROPS));
	out_u64(dp, "mem_bytes", get_u(tb, DMAPLANE_ATTR_PEER_MEM_BYTES));
	out_item_end(dp);
	return 0;
}

/* ADDR of a peer command; DP_EUSAGE after a message when missing or bad. */
static int peer_arg_addr(struct dp *dp, struct peer_addr *a)
{
	if (dp_no_arg(dp))
		return dp_usage_error(dp, help_peer, "%s: missing ADDR", dp->what);
	if (parse_addr(dp_argv(dp), a)) {
		fprintf(stderr, "dpctl: %s: invalid address \"%s\"\n", dp->what, dp_argv(dp));
		return DP_EUSAGE;
	}
	dp_next(dp);
	return 0;
}

static int peer_show(struct dp *dp)
{
	int ret;

	if (!dp_no_arg(dp)) {
		ret = peer_arg_addr(dp, &dp->peer_filter);
		if (ret)
			return ret;
	}
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_peer, "peer show: unexpected \"%s\"",
				      dp_argv(dp));
	if (dp_nl(dp))
		return 1;
	out_begin(dp);
	out_list_begin(dp, "peers");
	ret = dump(dp, DMAPLANE_CMD_GET_PEER, print_peer);
	out_list_end(dp);
	out_end(dp);
	return ret ? dp_fail(dp, ret) : 0;
}

static int peer_change(struct dp *dp, uint8_t cmd, const struct peer_addr *a, long port)
{
	struct nl_msg *msg;
	int ret;

	if (dp_nl(dp))
		return 1;
	msg = req_new(dp, cmd, 0);
	if (!msg)
		return dp_fail(dp, ENOMEM);
	if (nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, a->family) ||
	    nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, a->len, a->addr) ||
	    (port >= 0 && nla_put_u16(msg, DMAPLANE_ATTR_PEER_PORT, (uint16_t)port))) {
		nlmsg_free(msg);
		return dp_fail(dp, ENOMEM);
	}
	ret = req_run(dp, msg, NULL);
	if (ret)
		return dp_fail(dp, ret);
	out_begin(dp);
	out_end(dp);
	return 0;
}

static int peer_add(struct dp *dp)
{
	struct peer_addr a;
	long port = -1;
	int ret;

	ret = peer_arg_addr(dp, &a);
	if (ret)
		return ret;
	if (!dp_no_arg(dp) && !strcmp(dp_argv(dp), "port")) {
		dp_next(dp);
		if (dp_no_arg(dp))
			return dp_usage_error(dp, help_peer, "%s: port needs a PORT", dp->what);
		port = parse_num(dp->what, dp_argv(dp), 65535);
		if (port < 0)
			return DP_EUSAGE;
		dp_next(dp);
	}
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_peer, "peer add: unexpected \"%s\"", dp_argv(dp));
	return peer_change(dp, DMAPLANE_CMD_PEER_ADD, &a, port);
}

static int peer_del(struct dp *dp)
{
	struct peer_addr a;
	int ret;

	/* "peer delete": the message says "peer del" as it always did. */
	snprintf(dp->what, sizeof(dp->what), "peer del");
	ret = peer_arg_addr(dp, &a);
	if (ret)
		return ret;
	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_peer, "peer del: unexpected \"%s\"", dp_argv(dp));
	return peer_change(dp, DMAPLANE_CMD_PEER_DEL, &a, -1);
}

static int peer_help(struct dp *dp)
{
	(void)dp;
	return help_peer(stdout);
}

static int cmd_peer(struct dp *dp)
{
	static const struct dp_cmd cmds[] = {
		{ NULL, peer_show },
		{ "show", peer_show },
		{ "list", peer_show },
		{ "add", peer_add },
		{ "del", peer_del },
		{ "delete", peer_del },
		{ "help", peer_help },
		{ NULL, NULL },
	};

	return dp_exec_cmd(dp, cmds, "peer");
}

/* ---- monitor ------------------------------------------------------------ */

static int print_event(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[DMAPLANE_ATTR_MAX + 1];
	struct dp *dp = arg;
	const char *name;

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
	out_begin(dp);
	if (dp->jw)
		jsonw_string_field(dp->jw, "event", name);
	else
		fputs(name, stdout);
	if (gh->cmd == DMAPLANE_CMD_EVENT_REGION_INVALIDATED) {
		print_region_fields(dp, tb);
	} else {
		char addr[INET6_ADDRSTRLEN];

		format_addr(tb, addr, sizeof(addr));
		out_str(dp, "addr", addr);
		out_u64(dp, "port", get_u(tb, DMAPLANE_ATTR_PEER_PORT));
		if (gh->cmd == DMAPLANE_CMD_EVENT_PEER_UP ||
		    gh->cmd == DMAPLANE_CMD_EVENT_PEER_DOWN) {
			out_hex(dp, "node_id", get_u(tb, DMAPLANE_ATTR_PEER_NODE_ID));
			out_u64(dp, "slot", get_u(tb, DMAPLANE_ATTR_PEER_SLOT));
		}
	}
	if (dp->jw)
		out_end(dp);
	else
		putchar('\n');
	fflush(stdout);
	return NL_OK;
}

static int monitor_run(struct dp *dp)
{
	int grp, ret;

	if (!dp_no_arg(dp))
		return dp_usage_error(dp, help_monitor, "monitor: unexpected \"%s\"",
				      dp_argv(dp));
	snprintf(dp->what, sizeof(dp->what), "monitor");
	if (dp_nl(dp))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * The group exists only where the kernel can keep it to
	 * CAP_NET_ADMIN (6.7 and newer), and only that may join it.
	 */
	grp = genl_ctrl_resolve_grp(dp->nl.sk, DMAPLANE_GENL_NAME, DMAPLANE_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return dp_fail(dp, EOPNOTSUPP);
	nl_socket_disable_seq_check(dp->nl.sk);
	nl_socket_modify_cb(dp->nl.sk, NL_CB_VALID, NL_CB_CUSTOM, print_event, dp);
	ret = nl_socket_add_membership(dp->nl.sk, grp);
	if (ret < 0)
		return dp_fail(dp, ret == -NLE_PERM ? EPERM : EIO);
	for (;;) {
		ret = nl_recvmsgs_default(dp->nl.sk);
		if (ret < 0 && ret != -NLE_INTR && ret != -NLE_AGAIN)
			return dp_fail(dp, EIO);
	}
}

static int monitor_help(struct dp *dp)
{
	(void)dp;
	return help_monitor(stdout);
}

static int cmd_monitor(struct dp *dp)
{
	static const struct dp_cmd cmds[] = {
		{ NULL, monitor_run },
		{ "show", monitor_run },
		{ "help", monitor_help },
		{ NULL, NULL },
	};

	return dp_exec_cmd(dp, cmds, "monitor");
}

/* ---- main --------------------------------------------------------------- */

static int cmd_help(struct dp *dp)
{
	(void)dp;
	return help_main(stdout);
}

static int cmd_objects(struct dp *dp)
{
	static const struct dp_cmd cmds[] = {
		{ NULL, cmd_help },
		{ "dev", cmd_dev },
		{ "endpoint", cmd_endpoint },
		{ "region", cmd_region },
		{ "peer", cmd_peer },
		{ "stats", cmd_stats },
		{ "monitor", cmd_monitor },
		{ "help", cmd_help },
		/* Spellings of the first dpctl. */
		{ "ep", cmd_endpoint },
		{ "info", cmd_info },
		{ "show", cmd_show },
		{ NULL, NULL },
	};

	return dp_exec_cmd(dp, cmds, "");
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "details", no_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	struct dp dp = { .ep_filter = -1 };
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "+Vhjpd", long_opts, NULL)) >= 0) {
		switch (opt) {
		case 'V':
			printf("dpctl (dmaplane) %s, netlink family \"%s\" version %d, "
			       "ABI version %d\n", DP_VERSION, DMAPLANE_GENL_NAME,
			       DMAPLANE_GENL_VERSION, DMAPLANE_ABI_VERSION);
			return 0;
		case 'h':
			return help_main(stdout);
		case 'j':
			dp.json = true;
			break;
		case 'p':
			dp.pretty = true;
			break;
		case 'd':
			dp.details = true;
			break;
		default:
			help_main(stderr);
			return DP_EUSAGE;
		}
	}
	dp.argc = argc - optind;
	dp.argv = argv + optind;
	ret = cmd_objects(&dp);
	dp_nl_close(&dp);
	if (fflush(stdout) && !ret)
		ret = 1;
	return ret;
}
