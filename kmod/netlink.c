// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane generic netlink family "dmaplane": statistics, introspection of
 * endpoints and regions, the peer table and events.
 *
 * Every request attribute is checked against dmaplane_nl_policy with
 * strict validation (unknown attributes, wrong types and lengths fail
 * with -EINVAL).  Users without CAP_NET_ADMIN see only the endpoints
 * (and regions) opened with their own effective uid; only CAP_NET_ADMIN
 * may add or remove peers.  Remote keys and auth keys are never sent.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "dmaplane.h"

/*
 * The peer table: every peer node an administrator added.  The mutex
 * protects the list and every peer on it; peers are freed at module exit.
 */
static LIST_HEAD(dmaplane_peers);
static DEFINE_MUTEX(dmaplane_peers_lock);
/* Module unload flushes the peers: no PEER_ADD after; under the lock above. */
static bool dmaplane_peers_closed;

/* Set once the family is registered; events are dropped before. */
static bool dmaplane_nl_ready;

enum dmaplane_nl_mcgrp {
	DMAPLANE_NL_MCGRP_EVENTS,
};

/*
 * Events name other users' endpoints and regions and the peer nodes: only
 * CAP_NET_ADMIN may join the group.  A kernel that cannot require that of
 * a multicast group (before 6.7 and 6.1.y) gets no "events" group, and no
 * events are sent.
 */
#ifdef DMAPLANE_HAVE_GENL_MCAST_CAP_NET_ADMIN
static const struct genl_multicast_group dmaplane_nl_mcgrps[] = {
	[DMAPLANE_NL_MCGRP_EVENTS] = {
		.name = DMAPLANE_GENL_MCGRP_EVENTS,
		.flags = GENL_MCAST_CAP_NET_ADMIN,
	},
};

#define DMAPLANE_NL_EVENTS	true
#else
#define DMAPLANE_NL_EVENTS	false
#endif

/* A peer address is a struct in_addr or a struct in6_addr: -EINVAL else. */
static int nl_validate_peer_addr(const struct nlattr *attr,
				 struct netlink_ext_ack *extack)
{
	if (nla_len(attr) == sizeof(struct in_addr) ||
	    nla_len(attr) == sizeof(struct in6_addr))
		return 0;
	NL_SET_ERR_MSG_ATTR(extack, attr, "address must be 4 or 16 bytes");
	return -EINVAL;
}

/*
 * Only the attributes a request may carry have a type here; strict
 * validation rejects every other one (NLA_UNSPEC) with -EINVAL.
 */
static const struct nla_policy dmaplane_nl_policy[DMAPLANE_ATTR_MAX + 1] = {
	[DMAPLANE_ATTR_PEER_FAMILY] = { .type = NLA_U16 },
	[DMAPLANE_ATTR_PEER_ADDR] = NLA_POLICY_VALIDATE_FN(NLA_BINARY, nl_validate_peer_addr),
	[DMAPLANE_ATTR_PEER_PORT] = { .type = NLA_U16 },
};

static struct genl_family dmaplane_nl_family;

static void *nl_dump_hdr(struct sk_buff *skb, struct netlink_callback *cb, u8 cmd)
{
	return genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			   &dmaplane_nl_family, NLM_F_MULTI, cmd);
}

/* ---- GET_STATS ---------------------------------------------------------- */

/*
 * The numbered attribute of each counter that had one before the counters
 * were named (%DMAPLANE_ATTR_STAT_*); 0: none.  Frozen: counters added
 * later are reported by name only.
 */
static const u16 dmaplane_nl_stat_attrs[DMAPLANE_NUM_STATS] = {
	[DMAPLANE_STAT_ENDPOINTS] = DMAPLANE_ATTR_STAT_ENDPOINTS,
	[DMAPLANE_STAT_REGIONS] = DMAPLANE_ATTR_STAT_REGIONS,
	[DMAPLANE_STAT_ARENAS] = DMAPLANE_ATTR_STAT_ARENAS,
	[DMAPLANE_STAT_ARENA_PAGES] = DMAPLANE_ATTR_STAT_ARENA_PAGES,
	[DMAPLANE_STAT_USER_MRS] = DMAPLANE_ATTR_STAT_USER_MRS,
	[DMAPLANE_STAT_PINNED_PAGES] = DMAPLANE_ATTR_STAT_PINNED_PAGES,
	[DMAPLANE_STAT_CHARGED_PAGES] = DMAPLANE_ATTR_STAT_CHARGED_PAGES,
	[DMAPLANE_STAT_DMABUFS] = DMAPLANE_ATTR_STAT_DMABUFS,
	[DMAPLANE_STAT_IMPORTS] = DMAPLANE_ATTR_STAT_IMPORTS,
	[DMAPLANE_STAT_INVALIDATIONS] = DMAPLANE_ATTR_STAT_INVALIDATIONS,
	[DMAPLANE_STAT_POSTED_RECVS] = DMAPLANE_ATTR_STAT_POSTED_RECVS,
	[DMAPLANE_STAT_UNEXP_MSGS] = DMAPLANE_ATTR_STAT_UNEXP_MSGS,
	[DMAPLANE_STAT_XFER_PAGES] = DMAPLANE_ATTR_STAT_XFER_PAGES,
};

/* Parameters that also have a numbered attribute: frozen as the above. */
static const struct {
	const char *name;
	int attr;
} dmaplane_nl_params[] = {
	{ "eager_threshold", DMAPLANE_ATTR_PARAM_EAGER_THRESHOLD },
	{ "unexp_budget", DMAPLANE_ATTR_PARAM_UNEXP_BUDGET },
	{ "unexp_max", DMAPLANE_ATTR_PARAM_UNEXP_MAX },
	{ "max_pinned_mb", DMAPLANE_ATTR_PARAM_MAX_PINNED_MB },
	{ "mr_cache_max_entries", DMAPLANE_ATTR_PARAM_MR_CACHE_MAX_ENTRIES },
	{ "port", DMAPLANE_ATTR_PARAM_PORT },
};

/* One %DMAPLANE_ATTR_STAT_ENTRY: a name and its value. */
static int nl_put_entry(struct sk_buff *skb, const char *name, u64 val)
{
	struct nlattr *entry;

	entry = nla_nest_start(skb, DMAPLANE_ATTR_STAT_ENTRY);
	if (!entry)
		return -EMSGSIZE;
	if (nla_put_string(skb, DMAPLANE_ATTR_STAT_ENTRY_NAME, name) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_STAT_ENTRY_VALUE, val,
			      DMAPLANE_ATTR_PAD)) {
		nla_nest_cancel(skb, entry);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, entry);
	return 0;
}

/*
 * A counter as netlink reports it (u64): a sum of the CPUs' shares taken
 * while messages flow may be briefly below zero (a receive posted on one
 * CPU, taken on another between the two reads), which is 0 here.
 * debugfs prints the signed sum.
 */
static u64 nl_stat(enum dmaplane_stat stat)
{
	return max(dmaplane_stat_read(stat), 0L);
}

/*
 * Every counter: by number where it has one, and in the named list; each
 * summed once, so that both lists give the same values.
 */
static int nl_put_counters(struct sk_buff *skb)
{
	u64 val[DMAPLANE_NUM_STATS];
	struct nlattr *nest;
	unsigned int i;
	int ret;

	for (i = 0; i < DMAPLANE_NUM_STATS; i++)
		val[i] = nl_stat(i);
	for (i = 0; i < DMAPLANE_NUM_STATS; i++) {
		if (!dmaplane_nl_stat_attrs[i])
			continue;
		ret = nla_put_u64_64bit(skb, dmaplane_nl_stat_attrs[i], val[i],
					DMAPLANE_ATTR_PAD);
		if (ret)
			return ret;
	}

	nest = nla_nest_start(skb, DMAPLANE_ATTR_STAT_COUNTERS);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < DMAPLANE_NUM_STATS; i++) {
		ret = nl_put_entry(skb, dmaplane_stat_names[i], val[i]);
		if (ret)
			return ret;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * The parameters live in the files that use them; read them through the
 * module's parameter table, under the parameter lock, so that this file
 * does not need their variables.  Every integer parameter goes into
 * %DMAPLANE_ATTR_PARAMS by its name; the older ones also by number.
 */
#ifdef MODULE
/* The value of an integer module parameter; false for other kinds. */
static bool nl_param_value(const struct kernel_param *kp, u64 *val)
{
	if (kp->ops == &param_ops_uint)
		*val = *(unsigned int *)kp->arg;
	else if (kp->ops == &param_ops_ulong)
		*val = *(unsigned long *)kp->arg;
	else if (kp->ops == &param_ops_ushort)
		*val = *(unsigned short *)kp->arg;
	else
		return false;
	return true;
}

/* The numbered attribute of a parameter that has one. */
static int nl_put_param_attr(struct sk_buff *skb, const char *name, u64 val)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(dmaplane_nl_params); i++)
		if (!strcmp(name, dmaplane_nl_params[i].name))
			return nla_put_u64_64bit(skb, dmaplane_nl_params[i].attr,
						 val, DMAPLANE_ATTR_PAD);
	return 0;
}

static int nl_put_params_locked(struct sk_buff *skb, struct module *mod)
{
	struct nlattr *nest;
	unsigned int i;
	u64 val;
	int ret;

	for (i = 0; i < mod->num_kp; i++) {
		if (!nl_param_value(&mod->kp[i], &val))
			continue;
		ret = nl_put_param_attr(skb, mod->kp[i].name, val);
		if (ret)
			return ret;
	}

	nest = nla_nest_start(skb, DMAPLANE_ATTR_PARAMS);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < mod->num_kp; i++) {
		if (!nl_param_value(&mod->kp[i], &val))
			continue;
		ret = nl_put_entry(skb, mod->kp[i].name, val);
		if (ret)
			return ret;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int nl_put_params(struct sk_buff *skb)
{
	int ret;

	kernel_param_lock(THIS_MODULE);
	ret = nl_put_params_locked(skb, THIS_MODULE);
	kernel_param_unlock(THIS_MODULE);
	return ret;
}
#else
static int nl_put_params(struct sk_buff *skb)
{
	return 0;
}
#endif

static int dmaplane_nl_get_stats(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg;
	void *hdr;
	int ret;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &dmaplane_nl_family, 0,
				DMAPLANE_CMD_GET_STATS);
	if (!hdr) {
		ret = -EMSGSIZE;
		goto err_free_msg;
	}
	ret = nl_put_counters(msg);
	if (ret)
		goto err_free_msg;
	ret = nl_put_params(msg);
	if (ret)
		goto err_free_msg;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

err_free_msg:
	nlmsg_free(msg);
	return ret;
}

/* ---- GET_ENDPOINT and GET_REGION dumps ---------------------------------- */

/**
 * struct dmaplane_nl_dump - state of one pass of an endpoint or region dump
 * @skb: message being filled
 * @cb: the dump
 * @all: the requester has CAP_NET_ADMIN and sees every endpoint
 * @uid: the requester's effective uid
 * @ep_id: endpoint being dumped, where the next pass resumes
 * @handle: region handle the next pass resumes at (region dump)
 */
struct dmaplane_nl_dump {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	bool all;
	kuid_t uid;
	u32 ep_id;
	u32 handle;
};

static void nl_dump_init(struct dmaplane_nl_dump *d, struct sk_buff *skb,
			 struct netlink_callback *cb)
{
	struct sock *sk = NETLINK_CB(cb->skb).sk;
	const struct file *file = sk->sk_socket ? sk->sk_socket->file : NULL;

	d->skb = skb;
	d->cb = cb;
	d->all = netlink_capable(cb->skb, CAP_NET_ADMIN);
	/* The credentials the socket was opened with, as for the capability. */
	d->uid = file ? file->f_cred->euid : sock_net_uid(sock_net(sk), sk);
	d->ep_id = cb->args[0];
	d->handle = cb->args[1];
}

static bool nl_ep_visible(const struct dmaplane_nl_dump *d, const struct dmaplane_ep *ep)
{
	return d->all || uid_eq(ep->uid, d->uid);
}

/* Called under the lock of the endpoint table: must not sleep. */
static int nl_fill_ep(struct dmaplane_ep *ep, void *arg)
{
	struct dmaplane_nl_dump *d = arg;
	struct dmaplane_region *r;
	unsigned long handle;
	u32 nr_regions = 0;
	void *hdr;

	d->ep_id = ep->id;
	if (!nl_ep_visible(d, ep))
		return 0;

	xa_lock(&ep->regions);
	xa_for_each(&ep->regions, handle, r)
		nr_regions++;
	xa_unlock(&ep->regions);

	hdr = nl_dump_hdr(d->skb, d->cb, DMAPLANE_CMD_GET_ENDPOINT);
	if (!hdr)
		return -EMSGSIZE;
	/* The matcher's counts are read without match_lock: a snapshot. */
	if (nla_put_u32(d->skb, DMAPLANE_ATTR_EP_ID, ep->id) ||
	    nla_put_u64_64bit(d->skb, DMAPLANE_ATTR_EP_UID, ep->ep_uid, DMAPLANE_ATTR_PAD) ||
	    nla_put_u32(d->skb, DMAPLANE_ATTR_EP_USER,
			from_kuid_munged(&init_user_ns, ep->uid)) ||
	    nla_put_u32(d->skb, DMAPLANE_ATTR_EP_NR_REGIONS, nr_regions) ||
	    nla_put_u32(d->skb, DMAPLANE_ATTR_EP_POSTED_RECVS,
			READ_ONCE(ep->matcher.nr_recvs)) ||
	    nla_put_u32(d->skb, DMAPLANE_ATTR_EP_UNEXP_MSGS, READ_ONCE(ep->unexp_msgs))) {
		genlmsg_cancel(d->skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(d->skb, hdr);
	return 0;
}

static int nl_dump_end(struct dmaplane_nl_dump *d, int ret, bool next_ep)
{
	struct netlink_callback *cb = d->cb;

	if (ret == -EMSGSIZE) {
		/* Resume at the entry that did not fit. */
		cb->args[0] = d->ep_id;
		cb->args[1] = d->handle;
		return d->skb->len ? d->skb->len : -EMSGSIZE;
	}
	if (ret)
		return ret;
	/* Done: a further pass starts past every id. */
	cb->args[0] = U32_MAX;
	cb->args[1] = 0;
	return next_ep ? d->skb->len : 0;
}

/* A dump that walks the endpoints, @fill adding each one's entries. */
static int nl_dump_eps(struct sk_buff *skb, struct netlink_callback *cb,
		       int (*fill)(struct dmaplane_ep *ep, void *arg))
{
	struct dmaplane_nl_dump d;
	u32 pos;
	int ret;

	if (cb->args[0] == U32_MAX)
		return 0;
	nl_dump_init(&d, skb, cb);
	pos = d.ep_id;
	ret = dmaplane_ep_for_each(&pos, fill, &d);
	return nl_dump_end(&d, ret, true);
}

static int dmaplane_nl_dump_ep(struct sk_buff *skb, struct netlink_callback *cb)
{
	return nl_dump_eps(skb, cb, nl_fill_ep);
}

static u8 nl_region_kind(enum dmaplane_region_kind kind)
{
	switch (kind) {
	case DMAPLANE_REGION_ARENA:
		return DMAPLANE_NL_REGION_ARENA;
	case DMAPLANE_REGION_USER:
		return DMAPLANE_NL_REGION_USER;
	case DMAPLANE_REGION_DMABUF:
		return DMAPLANE_NL_REGION_DMABUF;
	}
	return U8_MAX;
}

static int nl_put_region(struct sk_buff *skb, const struct dmaplane_region *r)
{
	if (nla_put_u32(skb, DMAPLANE_ATTR_EP_ID, r->owner_id) ||
	    nla_put_u32(skb, DMAPLANE_ATTR_REGION_HANDLE, r->handle) ||
	    nla_put_u8(skb, DMAPLANE_ATTR_REGION_KIND, nl_region_kind(r->kind)))
		return -EMSGSIZE;
	return 0;
}

/* Called under the lock of the endpoint table: must not sleep. */
static int nl_fill_regions(struct dmaplane_ep *ep, void *arg)
{
	struct dmaplane_nl_dump *d = arg;
	struct dmaplane_region *r;
	unsigned long handle;
	int ret = 0;

	if (d->ep_id != ep->id) {
		d->ep_id = ep->id;
		d->handle = 0;
	}
	if (!nl_ep_visible(d, ep))
		return 0;

	xa_lock(&ep->regions);
	xa_for_each_start(&ep->regions, handle, r, d->handle) {
		void *hdr;

		d->handle = handle;
		hdr = nl_dump_hdr(d->skb, d->cb, DMAPLANE_CMD_GET_REGION);
		if (!hdr) {
			ret = -EMSGSIZE;
			break;
		}
		if (nl_put_region(d->skb, r) ||
		    nla_put_u64_64bit(d->skb, DMAPLANE_ATTR_REGION_LEN, r->len,
				      DMAPLANE_ATTR_PAD) ||
		    nla_put_u32(d->skb, DMAPLANE_ATTR_REGION_ACCESS, r->access) ||
		    nla_put_u8(d->skb, DMAPLANE_ATTR_REGION_STATE,
			       READ_ONCE(r->invalid) ? DMAPLANE_NL_REGION_INVALID :
						       DMAPLANE_NL_REGION_VALID)) {
			genlmsg_cancel(d->skb, hdr);
			ret = -EMSGSIZE;
			break;
		}
		genlmsg_end(d->skb, hdr);
	}
	xa_unlock(&ep->regions);
	if (!ret)
		d->handle = U32_MAX;	/* this endpoint is done */
	return ret;
}

static int dmaplane_nl_dump_region(struct sk_buff *skb, struct netlink_callback *cb)
{
	return nl_dump_eps(skb, cb, nl_fill_regions);
}

/* ---- Peers -------------------------------------------------------------- */

static int nl_put_peer_addr(struct sk_buff *skb, u16 family,
			    const struct in6_addr *addr, u16 port)
{
	int alen = family == AF_INET ? sizeof(struct in_addr) : sizeof(struct in6_addr);

	if (nla_put_u16(skb, DMAPLANE_ATTR_PEER_FAMILY, family) ||
	    nla_put(skb, DMAPLANE_ATTR_PEER_ADDR, alen, addr) ||
	    nla_put_u16(skb, DMAPLANE_ATTR_PEER_PORT, port))
		return -EMSGSIZE;
	return 0;
}

static int nl_put_peer(struct sk_buff *skb, const struct dmaplane_peer *p)
{
	struct dmaplane_peer_info pi;

	dmaplane_ib_peer_info(p->ib, &pi);
	if (nl_put_peer_addr(skb, p->family, &p->addr, p->port) ||
	    nla_put_u8(skb, DMAPLANE_ATTR_PEER_STATE, pi.state) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_PEER_NODE_ID, pi.node_id, DMAPLANE_ATTR_PAD) ||
	    nla_put_u32(skb, DMAPLANE_ATTR_PEER_SLOT, pi.slot) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_PEER_TX_MSGS, pi.tx_msgs, DMAPLANE_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_PEER_RX_MSGS, pi.rx_msgs, DMAPLANE_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_PEER_TX_BYTES, pi.tx_bytes, DMAPLANE_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_PEER_RX_BYTES, pi.rx_bytes, DMAPLANE_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_PEER_DROPS, pi.drops, DMAPLANE_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, DMAPLANE_ATTR_PEER_MEM_BYTES, pi.mem_bytes, DMAPLANE_ATTR_PAD))
		return -EMSGSIZE;
	return 0;
}

/* Is anybody listening to events (and can there be)? */
static bool nl_events_wanted(void)
{
	return DMAPLANE_NL_EVENTS && READ_ONCE(dmaplane_nl_ready) &&
	       genl_has_listeners(&dmaplane_nl_family, &init_net,
				  DMAPLANE_NL_MCGRP_EVENTS);
}

static void nl_notify_peer(const struct dmaplane_peer *p, u8 cmd)
{
	struct sk_buff *msg;
	void *hdr;

	if (!nl_events_wanted())
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &dmaplane_nl_family, 0, cmd);
	if (!hdr || nl_put_peer(msg, p)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast(&dmaplane_nl_family, msg, 0, DMAPLANE_NL_MCGRP_EVENTS, GFP_KERNEL);
}

/* Parse the address attributes of PEER_ADD and PEER_DEL into @p. */
static int nl_parse_peer(struct genl_info *info, struct dmaplane_peer *p)
{
	struct nlattr **attrs = info->attrs;
	int alen;

	if (GENL_REQ_ATTR_CHECK(info, DMAPLANE_ATTR_PEER_FAMILY) ||
	    GENL_REQ_ATTR_CHECK(info, DMAPLANE_ATTR_PEER_ADDR))
		return -EINVAL;
	p->family = nla_get_u16(attrs[DMAPLANE_ATTR_PEER_FAMILY]);
	if (p->family == AF_INET) {
		alen = sizeof(struct in_addr);
	} else if (p->family == AF_INET6) {
		alen = sizeof(struct in6_addr);
	} else {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[DMAPLANE_ATTR_PEER_FAMILY],
				    "family must be AF_INET or AF_INET6");
		return -EINVAL;
	}
	if (nla_len(attrs[DMAPLANE_ATTR_PEER_ADDR]) != alen) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[DMAPLANE_ATTR_PEER_ADDR],
				    "address length does not match the family");
		return -EINVAL;
	}
	memset(&p->addr, 0, sizeof(p->addr));
	nla_memcpy(&p->addr, attrs[DMAPLANE_ATTR_PEER_ADDR], alen);
	p->port = attrs[DMAPLANE_ATTR_PEER_PORT] ?
		  nla_get_u16(attrs[DMAPLANE_ATTR_PEER_PORT]) : 0;
	return 0;
}

/* Under dmaplane_peers_lock.  A peer is known by its address alone. */
static struct dmaplane_peer *nl_find_peer(const struct dmaplane_peer *key)
{
	struct dmaplane_peer *p;

	lockdep_assert_held(&dmaplane_peers_lock);
	list_for_each_entry(p, &dmaplane_peers, node)
		if (p->family == key->family &&
		    !memcmp(&p->addr, &key->addr, sizeof(p->addr)))
			return p;
	return NULL;
}

static int dmaplane_nl_peer_add(struct sk_buff *skb, struct genl_info *info)
{
	struct dmaplane_peer *p;
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = nl_parse_peer(info, p);
	if (ret)
		goto err_free_peer;

	mutex_lock(&dmaplane_peers_lock);
	if (dmaplane_peers_closed) {
		/* The module is going away (the family still answers). */
		mutex_unlock(&dmaplane_peers_lock);
		ret = -ESHUTDOWN;
		goto err_free_peer;
	}
	if (nl_find_peer(p)) {
		mutex_unlock(&dmaplane_peers_lock);
		NL_SET_ERR_MSG(info->extack, "peer exists");
		ret = -EEXIST;
		goto err_free_peer;
	}
	list_add_tail(&p->node, &dmaplane_peers);
	nl_notify_peer(p, DMAPLANE_CMD_EVENT_PEER_ADDED);
	/* The transport connects in the background (state "connecting"). */
	p->ib = dmaplane_ib_peer_add(p);
	mutex_unlock(&dmaplane_peers_lock);
	return 0;

err_free_peer:
	kfree(p);
	return ret;
}

static int dmaplane_nl_peer_del(struct sk_buff *skb, struct genl_info *info)
{
	struct dmaplane_peer key, *p;
	int ret;

	ret = nl_parse_peer(info, &key);
	if (ret)
		return ret;

	mutex_lock(&dmaplane_peers_lock);
	p = nl_find_peer(&key);
	if (!p) {
		mutex_unlock(&dmaplane_peers_lock);
		NL_SET_ERR_MSG(info->extack, "no such peer");
		return -ENOENT;
	}
	list_del(&p->node);
	nl_notify_peer(p, DMAPLANE_CMD_EVENT_PEER_REMOVED);
	mutex_unlock(&dmaplane_peers_lock);
	/* Disconnects and fails what was pending: not under our lock. */
	dmaplane_ib_peer_del(p->ib);
	kfree(p);
	return 0;
}

static int dmaplane_nl_dump_peer(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct dmaplane_peer *p;
	long idx = 0;

	mutex_lock(&dmaplane_peers_lock);
	list_for_each_entry(p, &dmaplane_peers, node) {
		void *hdr;

		if (idx++ < cb->args[0])
			continue;
		hdr = nl_dump_hdr(skb, cb, DMAPLANE_CMD_GET_PEER);
		if (!hdr)
			goto full;
		if (nl_put_peer(skb, p)) {
			genlmsg_cancel(skb, hdr);
			goto full;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
full:
	mutex_unlock(&dmaplane_peers_lock);
	return skb->len;
}

/* ---- Events ------------------------------------------------------------- */

/**
 * dmaplane_nl_notify_region_invalidated() - tell the "events" group that a
 *	region's memory went away
 * @r: the region
 *
 * Safe in atomic context (MMU-notifier callbacks under a spinlock): it
 * allocates with GFP_ATOMIC and never sleeps.  Cheap when nobody listens.
 */
void dmaplane_nl_notify_region_invalidated(const struct dmaplane_region *r)
{
	struct sk_buff *msg;
	void *hdr;

	if (!nl_events_wanted())
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_ATOMIC);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &dmaplane_nl_family, 0,
			  DMAPLANE_CMD_EVENT_REGION_INVALIDATED);
	if (!hdr || nl_put_region(msg, r)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast(&dmaplane_nl_family, msg, 0, DMAPLANE_NL_MCGRP_EVENTS, GFP_ATOMIC);
}

/**
 * dmaplane_nl_notify_peer_state() - tell the "events" group that a peer's
 *	connection came up or went down
 * @family: AF_INET or AF_INET6
 * @addr: the peer's address
 * @port: its port
 * @node_id: its node_id
 * @slot: its node slot
 * @up: came up (else went down)
 */
void dmaplane_nl_notify_peer_state(u16 family, const struct in6_addr *addr,
				   u16 port, u64 node_id, u32 slot, bool up)
{
	struct sk_buff *msg;
	void *hdr;

	if (!nl_events_wanted())
		return;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return;
	hdr = genlmsg_put(msg, 0, 0, &dmaplane_nl_family, 0,
			  up ? DMAPLANE_CMD_EVENT_PEER_UP : DMAPLANE_CMD_EVENT_PEER_DOWN);
	if (!hdr || nl_put_peer_addr(msg, family, addr, port) ||
	    nla_put_u8(msg, DMAPLANE_ATTR_PEER_STATE,
		       up ? DMAPLANE_NL_PEER_UP : DMAPLANE_NL_PEER_DOWN) ||
	    nla_put_u64_64bit(msg, DMAPLANE_ATTR_PEER_NODE_ID, node_id, DMAPLANE_ATTR_PAD) ||
	    nla_put_u32(msg, DMAPLANE_ATTR_PEER_SLOT, slot)) {
		nlmsg_free(msg);
		return;
	}
	genlmsg_end(msg, hdr);
	genlmsg_multicast(&dmaplane_nl_family, msg, 0, DMAPLANE_NL_MCGRP_EVENTS, GFP_KERNEL);
}

/**
 * dmaplane_nl_peers_flush() - module unload: remove every peer, which
 *	disconnects it, and refuse new ones (-ESHUTDOWN)
 */
void dmaplane_nl_peers_flush(void)
{
	struct dmaplane_peer *p;

	mutex_lock(&dmaplane_peers_lock);
	dmaplane_peers_closed = true;
	mutex_unlock(&dmaplane_peers_lock);
	for (;;) {
		mutex_lock(&dmaplane_peers_lock);
		p = list_first_entry_or_null(&dmaplane_peers, struct dmaplane_peer, node);
		if (p)
			list_del(&p->node);
		mutex_unlock(&dmaplane_peers_lock);
		if (!p)
			break;
		dmaplane_ib_peer_del(p->ib);
		kfree(p);
	}
}

/* ---- The family ------------------------------------------------------- */

static const struct genl_small_ops dmaplane_nl_ops[] = {
	{
		.cmd = DMAPLANE_CMD_GET_STATS,
		.doit = dmaplane_nl_get_stats,
	},
	{
		.cmd = DMAPLANE_CMD_GET_ENDPOINT,
		.dumpit = dmaplane_nl_dump_ep,
	},
	{
		.cmd = DMAPLANE_CMD_GET_REGION,
		.dumpit = dmaplane_nl_dump_region,
	},
	{
		.cmd = DMAPLANE_CMD_PEER_ADD,
		.doit = dmaplane_nl_peer_add,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = DMAPLANE_CMD_PEER_DEL,
		.doit = dmaplane_nl_peer_del,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = DMAPLANE_CMD_GET_PEER,
		.dumpit = dmaplane_nl_dump_peer,
	},
};

static struct genl_family dmaplane_nl_family = {
	.name = DMAPLANE_GENL_NAME,
	.version = DMAPLANE_GENL_VERSION,
	.maxattr = DMAPLANE_ATTR_MAX,
	.policy = dmaplane_nl_policy,
	.module = THIS_MODULE,
	.small_ops = dmaplane_nl_ops,
	.n_small_ops = ARRAY_SIZE(dmaplane_nl_ops),
	.resv_start_op = __DMAPLANE_CMD_MAX,
#ifdef DMAPLANE_HAVE_GENL_MCAST_CAP_NET_ADMIN
	.mcgrps = dmaplane_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(dmaplane_nl_mcgrps),
#endif
};

/** dmaplane_nl_init() - register the generic netlink family */
int dmaplane_nl_init(void)
{
	int ret;

	ret = genl_register_family(&dmaplane_nl_family);
	if (ret) {
		pr_err("cannot register generic netlink family: %d\n", ret);
		return ret;
	}
	WRITE_ONCE(dmaplane_nl_ready, true);
	return 0;
}

/** dmaplane_nl_exit() - unregister the family and free the peer table */
void dmaplane_nl_exit(void)
{
	struct dmaplane_peer *p, *tmp;

	WRITE_ONCE(dmaplane_nl_ready, false);
	genl_unregister_family(&dmaplane_nl_family);
	/* No request runs any more: the table is ours. */
	list_for_each_entry_safe(p, tmp, &dmaplane_peers, node) {
		list_del(&p->node);
		kfree(p);
	}
}
