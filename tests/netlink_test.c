// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family "dmaplane" and dpctl: statistics follow real
 * objects, endpoint and region dumps, visibility and CAP_NET_ADMIN for
 * unprivileged users, strict attribute validation, the peer table and
 * its errnos, events, and dpctl's JSON output.
 *
 * Runs as root in the VM.  A peer is left in the table on purpose: the
 * suite unloads the module afterwards and kmemleak must find nothing.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <linux/dmaplane.h>

#include "dp_test.h"

#define NOBODY 65534

/* ---- a small genetlink client --------------------------------------- */

struct nlt {
	struct nl_sock *sk;
	int fam;
};

static int nlt_open(struct nlt *t)
{
	t->sk = nl_socket_alloc();
	if (!t->sk)
		return -ENOMEM;
	if (genl_connect(t->sk)) {
		nl_socket_free(t->sk);
		t->sk = NULL;
		return -EIO;
	}
	t->fam = genl_ctrl_resolve(t->sk, DMAPLANE_GENL_NAME);
	if (t->fam < 0) {
		nl_socket_free(t->sk);
		t->sk = NULL;
		return -ENOENT;
	}
	return 0;
}

static void nlt_close(struct nlt *t)
{
	nl_socket_free(t->sk);
}

typedef void (*row_fn)(struct nlattr **tb, uint8_t cmd, void *arg);

struct nlt_req {
	int status;
	row_fn fn;
	void *arg;
};

static int nlt_err(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	((struct nlt_req *)arg)->status = e->error;
	return NL_STOP;
}

static int nlt_done(struct nl_msg *msg, void *arg)
{
	struct nlt_req *r = arg;

	if (r->status > 0)
		r->status = 0;
	return NL_STOP;
}

static int nlt_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[DMAPLANE_ATTR_MAX + 1];
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlt_req *r = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, DMAPLANE_ATTR_MAX, NULL))
		return NL_SKIP;
	if (r->fn)
		r->fn(tb, gh->cmd, r->arg);
	return NL_OK;
}

static struct nl_msg *nlt_msg(struct nlt *t, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, t->fam, 0, flags, cmd,
		    DMAPLANE_GENL_VERSION);
	return msg;
}

/* Send @msg (freed) and collect the replies; 0 or -errno. */
static int nlt_run(struct nlt *t, struct nl_msg *msg, row_fn fn, void *arg)
{
	struct nlt_req r = { .status = 1, .fn = fn, .arg = arg };
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int ret;

	nl_cb_err(cb, NL_CB_CUSTOM, nlt_err, &r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, nlt_done, &r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, nlt_done, &r);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, nlt_valid, &r);
	ret = nl_send_auto(t->sk, msg);
	nlmsg_free(msg);
	if (ret < 0) {
		nl_cb_put(cb);
		return -EIO;
	}
	while (r.status > 0)
		if (nl_recvmsgs(t->sk, cb) < 0 && r.status > 0)
			r.status = -EIO;
	nl_cb_put(cb);
	return r.status;
}

/* ---- stats and dumps -------------------------------------------------- */

#define MAX_NAMED 64

/* A %DMAPLANE_ATTR_STAT_COUNTERS or %DMAPLANE_ATTR_PARAMS list. */
struct named {
	int n;
	bool bad;	/* an entry without a name or a value, or too many */
	char name[MAX_NAMED][64];
	uint64_t v[MAX_NAMED];
};

struct stats {
	uint64_t v[DMAPLANE_ATTR_MAX + 1];
	bool have[DMAPLANE_ATTR_MAX + 1];
	struct named counters, params;
};

static void named_parse(struct nlattr *nest, struct named *nm)
{
	struct nlattr *e;
	int rem;

	nm->n = 0;
	if (!nest)
		return;
	nla_for_each_nested(e, nest, rem) {
		struct nlattr *tb[DMAPLANE_ATTR_MAX + 1];

		if (nla_type(e) != DMAPLANE_ATTR_STAT_ENTRY || nm->n == MAX_NAMED ||
		    nla_parse_nested(tb, DMAPLANE_ATTR_MAX, e, NULL) ||
		    !tb[DMAPLANE_ATTR_STAT_ENTRY_NAME] ||
		    !tb[DMAPLANE_ATTR_STAT_ENTRY_VALUE] ||
		    nla_len(tb[DMAPLANE_ATTR_STAT_ENTRY_VALUE]) != 8) {
			nm->bad = true;
			continue;
		}
		snprintf(nm->name[nm->n], sizeof(nm->name[0]), "%s",
			 nla_get_string(tb[DMAPLANE_ATTR_STAT_ENTRY_NAME]));
		nm->v[nm->n++] = nla_get_u64(tb[DMAPLANE_ATTR_STAT_ENTRY_VALUE]);
	}
}

/* The value of @name in @nm, or -1. */
static long long named_get(const struct named *nm, const char *name)
{
	for (int i = 0; i < nm->n; i++)
		if (!strcmp(nm->name[i], name))
			return (long long)nm->v[i];
	return -1;
}

static void stats_row(struct nlattr **tb, uint8_t cmd, void *arg)
{
	struct stats *s = arg;

	for (int a = DMAPLANE_ATTR_STAT_ENDPOINTS;
	     a <= DMAPLANE_ATTR_PARAM_MR_CACHE_MAX_ENTRIES; a++) {
		if (tb[a]) {
			s->v[a] = nla_get_u64(tb[a]);
			s->have[a] = true;
		}
	}
	for (int a = DMAPLANE_ATTR_PARAM_PORT; a <= DMAPLANE_ATTR_STAT_XFER_PAGES; a++) {
		if (tb[a]) {
			s->v[a] = nla_get_u64(tb[a]);
			s->have[a] = true;
		}
	}
	s->have[DMAPLANE_ATTR_STAT_COUNTERS] = tb[DMAPLANE_ATTR_STAT_COUNTERS];
	s->have[DMAPLANE_ATTR_PARAMS] = tb[DMAPLANE_ATTR_PARAMS];
	named_parse(tb[DMAPLANE_ATTR_STAT_COUNTERS], &s->counters);
	named_parse(tb[DMAPLANE_ATTR_PARAMS], &s->params);
}

static int get_stats(struct nlt *t, struct stats *s)
{
	memset(s, 0, sizeof(*s));
	return nlt_run(t, nlt_msg(t, DMAPLANE_CMD_GET_STATS, 0), stats_row, s);
}

/* Wait until the netlink counter @attr equals @want; its last value. */
static uint64_t wait_stat(struct nlt *t, int attr, uint64_t want)
{
	struct stats s;

	for (int i = 0; i < 500; i++) {
		if (get_stats(t, &s))
			return ~0ULL;
		if (s.v[attr] == want)
			break;
		usleep(10000);
	}
	return s.v[attr];
}

#define MAX_ROWS 256

struct row {
	uint32_t ep, handle, uid, nr_regions, access;
	uint8_t kind, state;
	uint64_t ep_uid, len;
	bool has_rkey_like;	/* any attribute outside the documented set */
};

struct rows {
	int n;
	struct row r[MAX_ROWS];
};

static void rows_add(struct nlattr **tb, uint8_t cmd, void *arg)
{
	struct rows *rs = arg;
	struct row *r;

	if (rs->n == MAX_ROWS)
		return;
	r = &rs->r[rs->n++];
	memset(r, 0, sizeof(*r));
	if (tb[DMAPLANE_ATTR_EP_ID])
		r->ep = nla_get_u32(tb[DMAPLANE_ATTR_EP_ID]);
	if (tb[DMAPLANE_ATTR_EP_UID])
		r->ep_uid = nla_get_u64(tb[DMAPLANE_ATTR_EP_UID]);
	if (tb[DMAPLANE_ATTR_EP_USER])
		r->uid = nla_get_u32(tb[DMAPLANE_ATTR_EP_USER]);
	if (tb[DMAPLANE_ATTR_EP_NR_REGIONS])
		r->nr_regions = nla_get_u32(tb[DMAPLANE_ATTR_EP_NR_REGIONS]);
	if (tb[DMAPLANE_ATTR_REGION_HANDLE])
		r->handle = nla_get_u32(tb[DMAPLANE_ATTR_REGION_HANDLE]);
	if (tb[DMAPLANE_ATTR_REGION_KIND])
		r->kind = nla_get_u8(tb[DMAPLANE_ATTR_REGION_KIND]);
	if (tb[DMAPLANE_ATTR_REGION_STATE])
		r->state = nla_get_u8(tb[DMAPLANE_ATTR_REGION_STATE]);
	if (tb[DMAPLANE_ATTR_REGION_LEN])
		r->len = nla_get_u64(tb[DMAPLANE_ATTR_REGION_LEN]);
	if (tb[DMAPLANE_ATTR_REGION_ACCESS])
		r->access = nla_get_u32(tb[DMAPLANE_ATTR_REGION_ACCESS]);
	for (int a = DMAPLANE_ATTR_STAT_ENDPOINTS; a < DMAPLANE_ATTR_EP_ID; a++)
		if (tb[a])
			r->has_rkey_like = true;
}

static int dump(struct nlt *t, uint8_t cmd, struct rows *rs)
{
	rs->n = 0;
	return nlt_run(t, nlt_msg(t, cmd, NLM_F_DUMP), rows_add, rs);
}

static uint32_t ep_id(struct dp_ep *ep)
{
	struct dmaplane_name name;

	if (dp_getname(ep, &name))
		return 0;
	return (uint32_t)name.ep_uid;
}

static struct row *find_ep(struct rows *rs, uint32_t id)
{
	for (int i = 0; i < rs->n; i++)
		if (rs->r[i].ep == id)
			return &rs->r[i];
	return NULL;
}

static struct row *find_region(struct rows *rs, uint32_t ep, uint8_t kind)
{
	for (int i = 0; i < rs->n; i++)
		if (rs->r[i].ep == ep && rs->r[i].kind == kind)
			return &rs->r[i];
	return NULL;
}

FIXTURE(nl) {
	struct nlt t;
};

FIXTURE_SETUP(nl)
{
	int ret = nlt_open(&self->t);

	if (ret == -ENOENT)
		SKIP(return, "generic netlink family dmaplane not registered");
	ASSERT_EQ(0, ret);
}

/* A skip in the setup does not stop the test body in this harness. */
#define NEED_NL() do {							\
		if (!self->t.sk)					\
			SKIP(return, "no generic netlink family dmaplane"); \
	} while (0)

FIXTURE_TEARDOWN(nl)
{
	if (self->t.sk)
		nlt_close(&self->t);
}

TEST_F(nl, stats_has_every_counter_and_parameter)
{
	struct stats s;

	NEED_NL();

	ASSERT_EQ(0, get_stats(&self->t, &s));
	for (int a = DMAPLANE_ATTR_STAT_ENDPOINTS;
	     a <= DMAPLANE_ATTR_PARAM_MR_CACHE_MAX_ENTRIES; a++) {
		EXPECT_TRUE(s.have[a]) TH_LOG("attribute %d missing", a);
	}
	EXPECT_EQ(16384, s.v[DMAPLANE_ATTR_PARAM_EAGER_THRESHOLD]);
	EXPECT_TRUE(s.have[DMAPLANE_ATTR_PARAM_PORT]);
	EXPECT_EQ(20886, s.v[DMAPLANE_ATTR_PARAM_PORT]);
	EXPECT_TRUE(s.have[DMAPLANE_ATTR_STAT_XFER_PAGES]);
	/* debugfs and netlink agree on quiet counters. */
	EXPECT_EQ(dp_test_stat("arenas"), (long)s.v[DMAPLANE_ATTR_STAT_ARENAS]);
	EXPECT_EQ(dp_test_stat("xfer_pages"), (long)s.v[DMAPLANE_ATTR_STAT_XFER_PAGES]);
}

/*
 * The named list carries every counter of the debugfs file, by the same
 * names in the same order, and every integer module parameter; the
 * numbered attributes say the same.
 */
TEST_F(nl, stats_carry_every_counter_and_parameter_by_name)
{
	static const char *const params[] = {
		"eager_threshold", "unexp_budget", "unexp_max", "max_pinned_mb",
		"mr_cache_max_entries", "av_max", NULL,
	};
	char key[64];
	struct stats s;
	long val;
	FILE *f;
	int i;

	NEED_NL();

	ASSERT_EQ(0, get_stats(&self->t, &s));
	ASSERT_TRUE(s.have[DMAPLANE_ATTR_STAT_COUNTERS]);
	ASSERT_TRUE(s.have[DMAPLANE_ATTR_PARAMS]);
	EXPECT_FALSE(s.counters.bad);
	EXPECT_FALSE(s.params.bad);

	f = fopen(DP_STATS, "r");
	ASSERT_NE(NULL, f) TH_LOG("%s: %s", DP_STATS, strerror(errno));
	for (i = 0; fscanf(f, "%63s %ld", key, &val) == 2; i++) {
		ASSERT_LT(i, s.counters.n) TH_LOG("%s missing from netlink", key);
		EXPECT_STREQ(key, s.counters.name[i]);
	}
	fclose(f);
	EXPECT_EQ(i, s.counters.n) TH_LOG("netlink has counters debugfs has not");
	EXPECT_LE(14, s.counters.n);
	EXPECT_LE(0, named_get(&s.counters, "deliveries"));

	/* Quiet counters agree between the numbered and the named lists. */
	EXPECT_EQ(s.v[DMAPLANE_ATTR_STAT_ARENAS], named_get(&s.counters, "arenas"));
	EXPECT_EQ(s.v[DMAPLANE_ATTR_STAT_XFER_PAGES],
		  named_get(&s.counters, "xfer_pages"));
	EXPECT_EQ(dp_test_stat("arenas"), named_get(&s.counters, "arenas"));

	for (i = 0; params[i]; i++) {
		const char *name = params[i];

		EXPECT_LE(0, named_get(&s.params, name)) TH_LOG("%s", name);
	}
	EXPECT_EQ(16384, named_get(&s.params, "eager_threshold"));
	EXPECT_EQ(s.v[DMAPLANE_ATTR_PARAM_UNEXP_MAX], named_get(&s.params, "unexp_max"));
	if (s.have[DMAPLANE_ATTR_PARAM_PORT])
		EXPECT_EQ(20886, named_get(&s.params, "port"));
}

TEST_F(nl, stats_and_dumps_follow_objects)
{
	struct stats base, s;
	struct rows *rs = calloc(1, sizeof(*rs));
	struct dp_ep *ep1, *ep2;
	struct dp_arena *arena;
	struct dp_mr *mr;
	struct row *r;
	uint32_t id1, id2;
	void *buf;

	NEED_NL();

	ASSERT_NE(NULL, rs);
	ASSERT_EQ(0, get_stats(&self->t, &base));
	ASSERT_EQ(0, dp_open(NULL, 0, &ep1));
	ASSERT_EQ(0, dp_open(NULL, 0, &ep2));
	id1 = ep_id(ep1);
	id2 = ep_id(ep2);
	ASSERT_NE(0, id1);
	ASSERT_NE(id1, id2);
	ASSERT_EQ(0, dp_arena_create(ep1, 2 << 20, 0, DMAPLANE_NUMA_ANY,
				     DMAPLANE_ACCESS_ALL, &arena));
	buf = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 1, 65536);
	ASSERT_EQ(0, dp_mr_reg(ep2, buf, 65536, DMAPLANE_ACCESS_LOCAL_WRITE |
			       DMAPLANE_ACCESS_REMOTE_READ, &mr));

	ASSERT_EQ(0, get_stats(&self->t, &s));
	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_ENDPOINTS] + 2, s.v[DMAPLANE_ATTR_STAT_ENDPOINTS]);
	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_REGIONS] + 2, s.v[DMAPLANE_ATTR_STAT_REGIONS]);
	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_ARENAS] + 1, s.v[DMAPLANE_ATTR_STAT_ARENAS]);
	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_ARENA_PAGES] + 512,
		  s.v[DMAPLANE_ATTR_STAT_ARENA_PAGES]);
	EXPECT_LE(base.v[DMAPLANE_ATTR_STAT_USER_MRS] + 1, s.v[DMAPLANE_ATTR_STAT_USER_MRS]);
	EXPECT_LE(base.v[DMAPLANE_ATTR_STAT_PINNED_PAGES] + 16,
		  s.v[DMAPLANE_ATTR_STAT_PINNED_PAGES]);
	EXPECT_EQ((long)s.v[DMAPLANE_ATTR_STAT_ENDPOINTS], dp_test_stat("endpoints"));

	ASSERT_EQ(0, dump(&self->t, DMAPLANE_CMD_GET_ENDPOINT, rs));
	r = find_ep(rs, id1);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(0, r->uid);
	EXPECT_EQ(1, r->nr_regions);
	EXPECT_EQ(id1, (uint32_t)r->ep_uid);
	EXPECT_FALSE(r->has_rkey_like);
	r = find_ep(rs, id2);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(1, r->nr_regions);

	ASSERT_EQ(0, dump(&self->t, DMAPLANE_CMD_GET_REGION, rs));
	r = find_region(rs, id1, DMAPLANE_NL_REGION_ARENA);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(2 << 20, r->len);
	EXPECT_EQ(DMAPLANE_ACCESS_ALL, r->access);
	EXPECT_EQ(DMAPLANE_NL_REGION_VALID, r->state);
	EXPECT_NE(0, r->handle);
	r = find_region(rs, id2, DMAPLANE_NL_REGION_USER);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(65536, r->len);
	EXPECT_EQ(DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_READ, r->access);
	EXPECT_EQ(DMAPLANE_NL_REGION_VALID, r->state);
	EXPECT_EQ(NULL, find_region(rs, id2, DMAPLANE_NL_REGION_ARENA));

	/* munmap invalidates the registration: the dump says so. */
	ASSERT_EQ(0, munmap(buf, 65536));
	ASSERT_EQ(0, dump(&self->t, DMAPLANE_CMD_GET_REGION, rs));
	r = find_region(rs, id2, DMAPLANE_NL_REGION_USER);
	ASSERT_NE(NULL, r);
	EXPECT_EQ(DMAPLANE_NL_REGION_INVALID, r->state);

	EXPECT_EQ(0, dp_mr_dereg(mr));
	EXPECT_EQ(0, dp_arena_destroy(arena));
	dp_close(ep1);
	dp_close(ep2);

	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_ENDPOINTS],
		  wait_stat(&self->t, DMAPLANE_ATTR_STAT_ENDPOINTS,
			    base.v[DMAPLANE_ATTR_STAT_ENDPOINTS]));
	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_REGIONS],
		  wait_stat(&self->t, DMAPLANE_ATTR_STAT_REGIONS,
			    base.v[DMAPLANE_ATTR_STAT_REGIONS]));
	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_ARENAS],
		  wait_stat(&self->t, DMAPLANE_ATTR_STAT_ARENAS,
			    base.v[DMAPLANE_ATTR_STAT_ARENAS]));
	EXPECT_EQ(base.v[DMAPLANE_ATTR_STAT_PINNED_PAGES],
		  wait_stat(&self->t, DMAPLANE_ATTR_STAT_PINNED_PAGES,
			    base.v[DMAPLANE_ATTR_STAT_PINNED_PAGES]));
	ASSERT_EQ(0, dump(&self->t, DMAPLANE_CMD_GET_ENDPOINT, rs));
	EXPECT_EQ(NULL, find_ep(rs, id1));
	EXPECT_EQ(NULL, find_ep(rs, id2));
	ASSERT_EQ(0, dump(&self->t, DMAPLANE_CMD_GET_REGION, rs));
	EXPECT_EQ(NULL, find_region(rs, id1, DMAPLANE_NL_REGION_ARENA));
	free(rs);
}

/* Enough regions that the dump spans several messages. */
TEST_F(nl, region_dump_resumes_across_messages)
{
	enum { N = 200 };
	struct rows *rs = calloc(1, sizeof(*rs));
	static struct dp_mr *mrs[N];
	struct dp_ep *ep;
	uint32_t id;
	char *buf;
	int n = 0;

	NEED_NL();

	ASSERT_NE(NULL, rs);
	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	id = ep_id(ep);
	buf = mmap(NULL, N * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0, N * 4096);
	for (int i = 0; i < N; i++)
		ASSERT_EQ(0, dp_mr_reg(ep, buf + i * 4096, 4096,
				       DMAPLANE_ACCESS_LOCAL_WRITE, &mrs[i]));
	ASSERT_EQ(0, dump(&self->t, DMAPLANE_CMD_GET_REGION, rs));
	for (int i = 0; i < rs->n; i++)
		if (rs->r[i].ep == id && rs->r[i].kind == DMAPLANE_NL_REGION_USER)
			n++;
	EXPECT_EQ(N, n);
	/* No region twice. */
	for (int i = 0; i < rs->n; i++)
		for (int j = i + 1; j < rs->n; j++)
			EXPECT_FALSE(rs->r[i].ep == rs->r[j].ep &&
				     rs->r[i].handle == rs->r[j].handle);
	ASSERT_EQ(0, dump(&self->t, DMAPLANE_CMD_GET_ENDPOINT, rs));
	ASSERT_NE(NULL, find_ep(rs, id));
	EXPECT_EQ(N, find_ep(rs, id)->nr_regions);
	for (int i = 0; i < N; i++)
		dp_mr_dereg(mrs[i]);
	dp_close(ep);
	munmap(buf, N * 4096);
	free(rs);
}

/* ---- peers ----------------------------------------------------------- */

static int peer_req(struct nlt *t, uint8_t cmd, int family, const char *addr, int port)
{
	struct nl_msg *msg = nlt_msg(t, cmd, 0);
	unsigned char a[16];

	if (inet_pton(family, addr, a) != 1) {
		nlmsg_free(msg);
		return -EDOM;
	}
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, family);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, family == AF_INET ? 4 : 16, a);
	if (port >= 0)
		nla_put_u16(msg, DMAPLANE_ATTR_PEER_PORT, port);
	return nlt_run(t, msg, NULL, NULL);
}

struct peer_row {
	char addr[INET6_ADDRSTRLEN];
	int port, state;
};

struct peers {
	int n;
	struct peer_row p[64];
};

static void peer_row(struct nlattr **tb, uint8_t cmd, void *arg)
{
	struct peers *ps = arg;
	struct peer_row *p;
	int family;

	if (ps->n == 64 || !tb[DMAPLANE_ATTR_PEER_FAMILY] || !tb[DMAPLANE_ATTR_PEER_ADDR])
		return;
	p = &ps->p[ps->n++];
	family = nla_get_u16(tb[DMAPLANE_ATTR_PEER_FAMILY]);
	inet_ntop(family, nla_data(tb[DMAPLANE_ATTR_PEER_ADDR]), p->addr, sizeof(p->addr));
	p->port = tb[DMAPLANE_ATTR_PEER_PORT] ? nla_get_u16(tb[DMAPLANE_ATTR_PEER_PORT]) : -1;
	p->state = tb[DMAPLANE_ATTR_PEER_STATE] ? nla_get_u8(tb[DMAPLANE_ATTR_PEER_STATE]) : -1;
}

static struct peer_row *find_peer(struct peers *ps, const char *addr)
{
	for (int i = 0; i < ps->n; i++)
		if (!strcmp(ps->p[i].addr, addr))
			return &ps->p[i];
	return NULL;
}

static int list_peers(struct nlt *t, struct peers *ps)
{
	ps->n = 0;
	return nlt_run(t, nlt_msg(t, DMAPLANE_CMD_GET_PEER, NLM_F_DUMP), peer_row, ps);
}

TEST_F(nl, peer_add_dup_del_unknown)
{
	struct peers ps;
	struct peer_row *p;

	NEED_NL();

	ASSERT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET, "10.1.2.3", 4791));
	EXPECT_EQ(-EEXIST, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET, "10.1.2.3", 4791));
	EXPECT_EQ(-EEXIST, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET, "10.1.2.3", 1));
	ASSERT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET6, "fd00::7", -1));
	EXPECT_EQ(-EEXIST, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET6, "fd00::7", -1));

	ASSERT_EQ(0, list_peers(&self->t, &ps));
	p = find_peer(&ps, "10.1.2.3");
	ASSERT_NE(NULL, p);
	EXPECT_EQ(4791, p->port);
	/* Nothing answers at 10.1.2.3: never up, trying or waiting to retry. */
	EXPECT_NE(DMAPLANE_NL_PEER_UP, p->state);
	EXPECT_TRUE(p->state == DMAPLANE_NL_PEER_DOWN ||
		    p->state == DMAPLANE_NL_PEER_CONNECTING);
	p = find_peer(&ps, "fd00::7");
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, p->port);

	EXPECT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.1.2.3", -1));
	EXPECT_EQ(-ENOENT, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.1.2.3", -1));
	EXPECT_EQ(-ENOENT, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.9.9.9", -1));
	/* The IPv6 twin of an IPv4 address is another peer. */
	EXPECT_EQ(-ENOENT, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET6, "::ffff:10.1.2.3",
				    -1));
	EXPECT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET6, "fd00::7", -1));
	ASSERT_EQ(0, list_peers(&self->t, &ps));
	EXPECT_EQ(NULL, find_peer(&ps, "10.1.2.3"));
	EXPECT_EQ(NULL, find_peer(&ps, "fd00::7"));
}

TEST_F(nl, many_peers_dump_and_stay_for_unload)
{
	struct peers ps;
	char addr[32];

	NEED_NL();

	for (int i = 0; i < 40; i++) {
		snprintf(addr, sizeof(addr), "192.168.77.%d", i + 1);
		ASSERT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET, addr, i));
	}
	ASSERT_EQ(0, list_peers(&self->t, &ps));
	EXPECT_EQ(40, ps.n);
	/* Half of them stay: module unload frees them (kmemleak checks). */
	for (int i = 0; i < 20; i++) {
		snprintf(addr, sizeof(addr), "192.168.77.%d", i + 1);
		EXPECT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, addr, -1));
	}
	ASSERT_EQ(0, list_peers(&self->t, &ps));
	EXPECT_EQ(20, ps.n);
}

/* ---- strict validation ------------------------------------------------ */

TEST_F(nl, policy_rejects_bad_attributes)
{
	struct nl_msg *msg;
	unsigned char a[16] = { 10, 0, 0, 1 };

	NEED_NL();

	/* Family as u32 instead of u16. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u32(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_INET);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, 4, a);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));

	/* Address too short, too long. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_INET);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, 3, a);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_INET6);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, 17, a);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));

	/* Length that does not match the family. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_INET);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, 16, a);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));

	/* Unknown family. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_UNIX);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, 4, a);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));

	/* Port as u8. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_INET);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, 4, a);
	nla_put_u8(msg, DMAPLANE_ATTR_PEER_PORT, 1);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));

	/* Missing address. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_INET);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));

	/* An output-only attribute in a request, and one past the maximum. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_PEER_ADD, 0);
	nla_put_u16(msg, DMAPLANE_ATTR_PEER_FAMILY, AF_INET);
	nla_put(msg, DMAPLANE_ATTR_PEER_ADDR, 4, a);
	nla_put_u8(msg, DMAPLANE_ATTR_PEER_STATE, 1);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));
	msg = nlt_msg(&self->t, DMAPLANE_CMD_GET_STATS, 0);
	nla_put_u32(msg, DMAPLANE_ATTR_MAX + 1, 0);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));
	msg = nlt_msg(&self->t, DMAPLANE_CMD_GET_REGION, NLM_F_DUMP);
	nla_put_u64(msg, DMAPLANE_ATTR_STAT_ENDPOINTS, 0);
	EXPECT_EQ(-EINVAL, nlt_run(&self->t, msg, NULL, NULL));

	/* Unknown command. */
	msg = nlt_msg(&self->t, DMAPLANE_CMD_MAX + 1, 0);
	EXPECT_EQ(-EOPNOTSUPP, nlt_run(&self->t, msg, NULL, NULL));

	/* Nothing was added by any of them. */
	EXPECT_EQ(-ENOENT, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.0.0.1", -1));
}

/* ---- events ----------------------------------------------------------- */

#define NO_EVENTS "no events group: this kernel cannot restrict it to CAP_NET_ADMIN"

struct ev {
	int n;
	uint8_t cmd[16];
	uint32_t ep[16];
	uint8_t kind[16];
	int port[16];
};

static int ev_valid(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *tb[DMAPLANE_ATTR_MAX + 1];
	struct ev *ev = arg;

	if (ev->n == 16 || genlmsg_parse(nlmsg_hdr(msg), 0, tb, DMAPLANE_ATTR_MAX, NULL))
		return NL_SKIP;
	ev->cmd[ev->n] = gh->cmd;
	ev->ep[ev->n] = tb[DMAPLANE_ATTR_EP_ID] ? nla_get_u32(tb[DMAPLANE_ATTR_EP_ID]) : 0;
	ev->kind[ev->n] = tb[DMAPLANE_ATTR_REGION_KIND] ?
			  nla_get_u8(tb[DMAPLANE_ATTR_REGION_KIND]) : 0xff;
	ev->port[ev->n] = tb[DMAPLANE_ATTR_PEER_PORT] ?
			  nla_get_u16(tb[DMAPLANE_ATTR_PEER_PORT]) : -1;
	ev->n++;
	return NL_OK;
}

static int ev_open(struct nlt *t, struct ev *ev)
{
	struct timeval tv = { .tv_sec = 2 };
	int grp, ret;

	ret = nlt_open(t);
	if (ret)
		return ret;
	grp = genl_ctrl_resolve_grp(t->sk, DMAPLANE_GENL_NAME, DMAPLANE_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return -ENOENT;
	nl_socket_disable_seq_check(t->sk);
	nl_socket_modify_cb(t->sk, NL_CB_VALID, NL_CB_CUSTOM, ev_valid, ev);
	setsockopt(nl_socket_get_fd(t->sk), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return nl_socket_add_membership(t->sk, grp) ? -EIO : 0;
}

/* Receive until @n events arrived or the socket times out. */
static void ev_wait(struct nlt *t, struct ev *ev, int n)
{
	while (ev->n < n && nl_recvmsgs_default(t->sk) >= 0)
		;
}

TEST_F(nl, events_for_peers_and_invalidated_regions)
{
	struct nlt mon;
	struct ev ev = { 0 };
	struct dp_ep *ep;
	struct dp_mr *mr;
	void *buf;

	NEED_NL();

	if (ev_open(&mon, &ev) == -ENOENT) {
		nlt_close(&mon);
		SKIP(return, NO_EVENTS);
	}
	ASSERT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET, "10.7.7.7", 99));
	ASSERT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.7.7.7", -1));
	ev_wait(&mon, &ev, 2);
	ASSERT_EQ(2, ev.n);
	EXPECT_EQ(DMAPLANE_CMD_EVENT_PEER_ADDED, ev.cmd[0]);
	EXPECT_EQ(99, ev.port[0]);
	EXPECT_EQ(DMAPLANE_CMD_EVENT_PEER_REMOVED, ev.cmd[1]);

	/* munmap under a registration: the MMU notifier sends an event. */
	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0, 8192);
	ASSERT_EQ(0, dp_mr_reg(ep, buf, 8192, DMAPLANE_ACCESS_LOCAL_WRITE, &mr));
	ASSERT_EQ(0, munmap(buf, 8192));
	ev_wait(&mon, &ev, 3);
	ASSERT_EQ(3, ev.n);
	EXPECT_EQ(DMAPLANE_CMD_EVENT_REGION_INVALIDATED, ev.cmd[2]);
	EXPECT_EQ(ep_id(ep), ev.ep[2]);
	EXPECT_EQ(DMAPLANE_NL_REGION_USER, ev.kind[2]);
	dp_mr_dereg(mr);
	dp_close(ep);
	nlt_close(&mon);
}

/* ---- unprivileged users ------------------------------------------------ */

static const char *dpctl_path(void)
{
	const char *p = getenv("DPCTL");

	if (!p)
		p = "/dmaplane/dpctl";
	return access(p, X_OK) ? NULL : p;
}

/* Run dpctl with @argv; its stdout+stderr in @out; exit status or -1. */
static int run_dpctl(char *const argv[], char *out, size_t len)
{
	int pfd[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	while (got < (ssize_t)len - 1 && (n = read(pfd[0], out + got, len - 1 - got)) > 0)
		got += n;
	out[got] = 0;
	close(pfd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The child's checks, numbered so that the parent can say which failed. */
static int nobody_checks(uint32_t root_ep)
{
	struct rows *rs = calloc(1, sizeof(*rs));
	struct nlt t;
	struct dp_ep *ep;
	uint32_t mine;
	const char *dpctl;

	if (!rs || setgid(NOBODY) || setuid(NOBODY))
		return 1;
	if (dp_open(NULL, 0, &ep))
		return 2;
	mine = ep_id(ep);
	if (nlt_open(&t))
		return 3;
	if (peer_req(&t, DMAPLANE_CMD_PEER_ADD, AF_INET, "10.5.5.5", -1) != -EPERM)
		return 4;
	if (peer_req(&t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.5.5.5", -1) != -EPERM)
		return 5;
	if (dump(&t, DMAPLANE_CMD_GET_ENDPOINT, rs))
		return 6;
	if (!find_ep(rs, mine) || find_ep(rs, root_ep))
		return 7;
	for (int i = 0; i < rs->n; i++)
		if (rs->r[i].uid != NOBODY)
			return 8;
	if (dump(&t, DMAPLANE_CMD_GET_REGION, rs))
		return 9;
	if (find_region(rs, root_ep, DMAPLANE_NL_REGION_ARENA))
		return 10;
	/* Reading stats and the peer table is allowed. */
	{
		struct stats s;
		struct peers ps;

		if (get_stats(&t, &s) || list_peers(&t, &ps))
			return 11;
	}
	dpctl = dpctl_path();
	if (dpctl) {
		char out[512];
		char *argv[] = { (char *)dpctl, "peer", "add", "10.5.5.5", NULL };

		if (run_dpctl(argv, out, sizeof(out)) != 1)
			return 12;
		if (!strstr(out, "dpctl: peer add: Operation not permitted"))
			return 13;
	}
	/* Events name other users' objects: the group is not for nobody. */
	{
		int grp = genl_ctrl_resolve_grp(t.sk, DMAPLANE_GENL_NAME,
						DMAPLANE_GENL_MCGRP_EVENTS);

		if (grp >= 0 && !nl_socket_add_membership(t.sk, grp))
			return 14;
	}
	nlt_close(&t);
	dp_close(ep);
	free(rs);
	return 0;
}

TEST_F(nl, unprivileged_user_sees_own_endpoints_and_cannot_change_peers)
{
	struct dp_ep *ep;
	struct dp_arena *arena;
	int status;
	pid_t pid;

	NEED_NL();

	if (geteuid())
		SKIP(return, "needs root to switch to nobody");
	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	ASSERT_EQ(0, dp_arena_create(ep, 2 << 20, 0, DMAPLANE_NUMA_ANY,
				     DMAPLANE_ACCESS_ALL, &arena));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(nobody_checks(ep_id(ep)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("check %d of the unprivileged child failed",
						 WEXITSTATUS(status));
	dp_arena_destroy(arena);
	dp_close(ep);
}

/* ---- dpctl ----------------------------------------------------------- */

/* A small JSON validator: value := object | array | string | number | literal */
static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if (*p == '\\' && !*++p)
			return NULL;
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		bool obj = *p == '{';

		p = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = json_string(json_ws(p));
				if (!p)
					return NULL;
				p = json_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = json_value(p);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '"')
		return json_string(p);
	if (*p == '-' || isdigit((unsigned char)*p)) {
		char *end;

		strtod(p, &end);
		return end;
	}
	for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
		if (!strncmp(p, lit, strlen(lit)))
			return p + strlen(lit);
	return NULL;
}

static bool json_ok(const char *s)
{
	const char *end = json_value(s);

	return end && !*json_ws(end);
}

TEST(json_validator_works)
{
	EXPECT_TRUE(json_ok("{\"a\":[1,2,{\"b\":\"c\"}],\"d\":true}\n"));
	EXPECT_FALSE(json_ok("{\"a\":1,}"));
	EXPECT_FALSE(json_ok("{\"a\" 1}"));
	EXPECT_FALSE(json_ok("[1,2"));
}

TEST(dpctl_json_and_errors)
{
	const char *dpctl = dpctl_path();
	static char out[65536];
	char *stats[] = { (char *)dpctl, "-j", "stats", NULL };
	char *show_json[] = { (char *)dpctl, "-j", "show", NULL };
	char *show[] = { (char *)dpctl, "show", NULL };
	char *add[] = { (char *)dpctl, "peer", "add", "fd00::42", "port", "7", NULL };
	char *list[] = { (char *)dpctl, "-j", "peer", "list", NULL };
	char *del[] = { (char *)dpctl, "peer", "del", "fd00::42", NULL };
	char *bad[] = { (char *)dpctl, "peer", "add", "not-an-address", NULL };
	struct dp_ep *ep;

	if (!dpctl)
		SKIP(return, "no dpctl (set DPCTL=)");
	ASSERT_EQ(0, dp_open(NULL, 0, &ep));

	ASSERT_EQ(0, run_dpctl(stats, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"endpoints\":"));
	EXPECT_NE(NULL, strstr(out, "\"eager_threshold\":"));

	ASSERT_EQ(0, run_dpctl(show_json, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"regions\":["));

	ASSERT_EQ(0, run_dpctl(add, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(1, run_dpctl(add, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "dpctl: peer add: File exists")) TH_LOG("%s", out);
	ASSERT_EQ(0, run_dpctl(list, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"addr\":\"fd00::42\",\"port\":7,\"state\":\""))
		TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "\"state\":\"up\"")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"node_id\":")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"drops\":0")) TH_LOG("%s", out);
	ASSERT_EQ(0, run_dpctl(del, out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(1, run_dpctl(del, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "dpctl: peer del: No such file or directory"));

	EXPECT_EQ(2, run_dpctl(bad, out, sizeof(out)));

	ASSERT_EQ(0, run_dpctl(show, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ep ")) TH_LOG("%s", out);
	dp_close(ep);
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Run dpctl with the NULL-terminated arguments after @len; as run_dpctl(). */
static int dpctl_run(char *out, size_t len, ...)
{
	char *argv[16];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)dpctl_path();
	va_start(ap, len);
	while (n < 15 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return run_dpctl(argv, out, len);
}

/* "help" at every level of the grammar, -h, -V, and usage errors. */
TEST(dpctl_help_at_every_level)
{
	static const char *const helps[][4] = {
		{ "help" }, { "-h" }, { "--help" },
		{ "dev", "help" }, { "dev", "show", "help" },
		{ "endpoint", "help" }, { "endpoint", "show", "help" },
		{ "region", "help" }, { "region", "show", "help" },
		{ "peer", "help" }, { "peer", "show", "help" },
		{ "peer", "add", "help" }, { "peer", "del", "help" },
		{ "stats", "help" }, { "stats", "show", "help" },
		{ "monitor", "help" },
	};
	static char out[8192];
	unsigned int i;

	if (!dpctl_path())
		SKIP(return, "no dpctl (set DPCTL=)");
	for (i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		const char *const *h = helps[i];

		EXPECT_EQ(0, dpctl_run(out, sizeof(out), h[0], h[1], h[2], h[3]))
			TH_LOG("%s %s %s: %s", h[0], h[1] ?: "", h[2] ?: "", out);
		EXPECT_TRUE(starts_with(out, "Usage: dpctl")) TH_LOG("%s: %s", h[0], out);
		if (h[1])
			EXPECT_NE(NULL, strstr(out, h[0])) TH_LOG("%s", out);
	}
	EXPECT_EQ(0, dpctl_run(out, sizeof(out), "-V", NULL));
	EXPECT_NE(NULL, strstr(out, "dpctl")) TH_LOG("%s", out);
	EXPECT_EQ(2, dpctl_run(out, sizeof(out), "frob", NULL));
	EXPECT_NE(NULL, strstr(out, "unknown object \"frob\"")) TH_LOG("%s", out);
	EXPECT_EQ(2, dpctl_run(out, sizeof(out), "peer", "frob", NULL));
	EXPECT_NE(NULL, strstr(out, "peer: unknown command \"frob\"")) TH_LOG("%s", out);
	EXPECT_EQ(2, dpctl_run(out, sizeof(out), "-x", "stats", NULL));
	EXPECT_EQ(2, dpctl_run(out, sizeof(out), "stats", "show", "extra", NULL));
	EXPECT_EQ(2, dpctl_run(out, sizeof(out), "endpoint", "show", "x", NULL));
	EXPECT_EQ(2, dpctl_run(out, sizeof(out), "peer", "add", "10.1.1.1", "port",
			       "65536", NULL));
}

/*
 * The OBJECT COMMAND grammar: show is the default, abbreviations, filters,
 * -d, -p, the aliases kept from the first dpctl, counters the module names
 * (deliveries has no numbered attribute: dpctl must have it from the
 * module), and a string that needs escaping in JSON (a device path with a
 * quote, a backslash and a tab).
 */
TEST(dpctl_objects_commands_and_aliases)
{
	static const char weird[] = "/tmp/dp\"dev\\ice\tx";
	static char out[65536], out2[65536];
	struct dp_arena *arena;
	struct dp_ep *ep;
	char id[16], want[64];

	if (!dpctl_path())
		SKIP(return, "no dpctl (set DPCTL=)");
	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	ASSERT_EQ(0, dp_arena_create(ep, 2 << 20, 0, DMAPLANE_NUMA_ANY,
				     DMAPLANE_ACCESS_LOCAL_WRITE, &arena));
	snprintf(id, sizeof(id), "%u", ep_id(ep));

	/* dev: show is the default; info is the old spelling. */
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "dev", "show", NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"abi_version\":1,")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"device\":\"/dev/dmaplane\"")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out2, sizeof(out2), "-j", "dev", NULL));
	EXPECT_STREQ(out, out2);
	ASSERT_EQ(0, dpctl_run(out2, sizeof(out2), "-j", "info", NULL));
	EXPECT_STREQ(out, out2);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "info", NULL));
	EXPECT_TRUE(starts_with(out, "abi_version 1\ncaps 0x")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-d", "dev", NULL));
	EXPECT_NE(NULL, strstr(out, "\ncaps_names info,arena,mr,")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "-d", "-p", "dev", NULL));
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\n    \"caps_names\": [\n        \"info\",")) TH_LOG("%s", out);

	unlink(weird);
	ASSERT_EQ(0, symlink("/dev/dmaplane", weird));
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "dev", "show", weird, NULL))
		TH_LOG("%s", out);
	unlink(weird);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"device\":\"/tmp/dp\\\"dev\\\\ice\\tx\"")) TH_LOG("%s", out);

	/* endpoint (alias ep), with an ID filter. */
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "endpoint", NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "{\"id\":%s,\"ep_uid\":", id);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "\"regions\":[")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "ep", "show", id, NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "{\"endpoints\":[{\"id\":")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "}]}")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "},{")) TH_LOG("one endpoint only: %s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "endpoint", "show", "4294967295", NULL));
	EXPECT_STREQ("", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "e", "s", id, NULL)) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "ep %s ep_uid 0x", id);
	EXPECT_TRUE(starts_with(out, want)) TH_LOG("%s", out);

	/* region, with an endpoint filter and -d. */
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "-d", "region", "show", "endpoint", id,
			       NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "{\"ep\":%s,\"handle\":", id);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"kind\":\"arena\"")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"access_names\":[\"local_write\"]")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-d", "region", NULL)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, " access 0x1 access_names local_write")) TH_LOG("%s", out);

	/* The first dpctl's show: both lists in one document. */
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "show", NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "{\"endpoints\":[")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "],\"regions\":[")) TH_LOG("%s", out);
	EXPECT_EQ(0, dpctl_run(out, sizeof(out), "show", "ep", NULL)) TH_LOG("%s", out);
	EXPECT_EQ(0, dpctl_run(out, sizeof(out), "show", "region", NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "region ep ")) TH_LOG("%s", out);

	/* stats: names from the module, text and JSON, pretty. */
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "stats", NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "endpoints ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\ndeliveries ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\nparams:\n  ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\n  eager_threshold 16384\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\n  av_max ")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "stats", "show", NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "{\"stats\":{\"endpoints\":")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"deliveries\":")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "},\"params\":{")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"av_max\":")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "--json", "--pretty", "stats", NULL));
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "{\n    \"stats\": {\n        \"endpoints\": ")) TH_LOG("%s", out);

	/* peer: show (alias list), filter by address, delete (alias of del). */
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "peer", "add", "10.6.6.6", "port", "9", NULL))
		TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "peer", NULL)) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out2, sizeof(out2), "-j", "peer", "list", NULL));
	EXPECT_STREQ(out, out2);
	ASSERT_EQ(0, dpctl_run(out2, sizeof(out2), "-j", "peer", "show", NULL));
	EXPECT_STREQ(out, out2);
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "{\"addr\":\"10.6.6.6\",\"port\":9,\"state\":\"")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "peer", "show", "10.6.6.6", NULL));
	EXPECT_TRUE(json_ok(out)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "{\"peers\":[{\"addr\":\"10.6.6.6\",")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "},{")) TH_LOG("one peer only: %s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "peer", "show", "10.6.6.7", NULL));
	EXPECT_STREQ("", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "p", "s", "10.6.6.6", NULL)) TH_LOG("%s", out);
	EXPECT_TRUE(starts_with(out, "peer addr 10.6.6.6 port 9 state ")) TH_LOG("%s", out);
	ASSERT_EQ(0, dpctl_run(out, sizeof(out), "-j", "peer", "delete", "10.6.6.6", NULL))
		TH_LOG("%s", out);
	EXPECT_STREQ("{}\n", out);
	EXPECT_EQ(1, dpctl_run(out, sizeof(out), "peer", "delete", "10.6.6.6", NULL));
	EXPECT_NE(NULL, strstr(out, "dpctl: peer del: No such file or directory")) TH_LOG("%s", out);

	dp_arena_destroy(arena);
	dp_close(ep);
}

/* dpctl -j monitor prints one JSON object per event. */
TEST_F(nl, dpctl_monitor_prints_events)
{
	const char *dpctl = dpctl_path();
	char *argv[] = { (char *)dpctl, "-j", "monitor", NULL };
	struct pollfd pfd;
	char out[4096] = "", *nl, *line;
	int fds[2], status, tries;
	ssize_t n = 0;
	pid_t pid;

	NEED_NL();
	if (!dpctl)
		SKIP(return, "no dpctl (set DPCTL=)");
	if (genl_ctrl_resolve_grp(self->t.sk, DMAPLANE_GENL_NAME,
				  DMAPLANE_GENL_MCGRP_EVENTS) < 0)
		SKIP(return, NO_EVENTS);
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	/*
	 * Until dpctl has joined the group, events go nowhere: retry.  It
	 * may join between an add and a del, so the first line it prints
	 * can be a peer_removed one.
	 */
	for (tries = 0; tries < 20; tries++) {
		ASSERT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_ADD, AF_INET, "10.8.8.8", 5));
		if (poll(&pfd, 1, 500) == 1)
			break;
		ASSERT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.8.8.8", -1));
	}
	ASSERT_LT(tries, 20);
	/* Read lines until the peer_added one arrives. */
	while (!strstr(out, "peer_added") && n < (ssize_t)sizeof(out) - 1 &&
	       poll(&pfd, 1, 2000) == 1) {
		ssize_t got = read(fds[0], out + n, sizeof(out) - 1 - n);

		if (got <= 0)
			break;
		n += got;
		out[n] = 0;
	}
	line = strstr(out, "{\"event\":\"peer_added\"");
	ASSERT_NE(NULL, line) TH_LOG("%s", out);
	nl = strchr(line, '\n');
	ASSERT_NE(NULL, nl);
	*nl = 0;
	EXPECT_TRUE(json_ok(line)) TH_LOG("%s", line);
	EXPECT_NE(NULL, strstr(line, "\"addr\":\"10.8.8.8\",\"port\":5")) TH_LOG("%s", line);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	close(fds[0]);
	EXPECT_EQ(0, peer_req(&self->t, DMAPLANE_CMD_PEER_DEL, AF_INET, "10.8.8.8", -1));
}

TEST_HARNESS_MAIN
