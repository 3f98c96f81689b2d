// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane endpoints: allocation, identifiers, and the GET_INFO report.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/export.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/rhashtable.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "dmaplane.h"

/*
 * Identifiers of the open endpoints.  The xarray's own spinlock protects
 * it; ids are handed out cyclically so a reopened endpoint gets a new one.
 * An entry does not hold a reference: it is erased before the file's
 * reference is dropped, so an endpoint found under the xa lock is alive.
 * Endpoints are freed after a grace period (ep_free()): a look-up under
 * RCU alone may find one whose last reference is gone, and takes a
 * reference only while the count is not zero.
 */
static DEFINE_XARRAY_ALLOC1(dmaplane_ep_ids);
static u32 dmaplane_ep_next_id;	/* cursor of xa_alloc_cyclic(), under the xa lock */
static atomic_t dmaplane_ep_gen;	/* high half of ep_uid */

/* Random identity of this node, chosen at module load. */
u64 dmaplane_node_id;

static unsigned int eager_threshold = 16384;
module_param(eager_threshold, uint, 0644);
MODULE_PARM_DESC(eager_threshold,
		 "Messages up to this many bytes are copied into the kernel when unexpected");

/**
 * struct dmaplane_av_rev - the receiver's address handle of a source
 * @node: in &dmaplane_ep.av_rev
 * @src: the source value (the key)
 * @handle: a handle of &dmaplane_ep.av with @src: the first inserted, and
 *	when that one is removed the lowest-numbered one left (written
 *	under av_lock, read under RCU)
 * @count: handles of &dmaplane_ep.av with @src, under av_lock
 * @rcu: freed after a grace period
 */
struct dmaplane_av_rev {
	struct rhash_head node;
	u64 src;
	u32 handle;
	u32 count;
	struct rcu_head rcu;
};

static const struct rhashtable_params av_rev_params = {
	.key_len = sizeof(u64),
	.key_offset = offsetof(struct dmaplane_av_rev, src),
	.head_offset = offsetof(struct dmaplane_av_rev, node),
	.automatic_shrinking = true,
};

static void av_rev_free(void *ptr, void *arg)
{
	kfree(ptr);
}

/**
 * dmaplane_ep_create() - allocate an endpoint for the current task
 *
 * Return: the endpoint, or an ERR_PTR() (-ENOMEM, -EBUSY when every id is
 * in use).
 */
struct dmaplane_ep *dmaplane_ep_create(void)
{
	struct dmaplane_ep *ep;
	int ret;

	ep = kzalloc(sizeof(*ep), GFP_KERNEL_ACCOUNT);
	if (!ep)
		return ERR_PTR(-ENOMEM);

	kref_init(&ep->ref);
	ep->uid = current_euid();
	ep->cpu = -1;
	xa_init_flags(&ep->regions, XA_FLAGS_ALLOC1);
	xa_init_flags(&ep->av, XA_FLAGS_ALLOC);
	xa_init_flags(&ep->claims, XA_FLAGS_ALLOC1);
	mutex_init(&ep->av_lock);
	ret = rhashtable_init(&ep->av_rev, &av_rev_params);
	if (ret)
		goto err_free_ep;
	mutex_init(&ep->setup_lock);
	mutex_init(&ep->match_lock);
	ret = dmaplane_matcher_init(&ep->matcher, &ep->match_lock);
	if (ret)
		goto err_destroy_av_rev;
	dmaplane_ep_deliver_init(ep);
	init_waitqueue_head(&ep->wq);
	/* KUnit calls this from a kernel thread, which has no mm. */
	ep->mm = current->mm;
	if (ep->mm)
		mmgrab(ep->mm);

	ret = xa_alloc_cyclic(&dmaplane_ep_ids, &ep->id, NULL, xa_limit_31b,
			      &dmaplane_ep_next_id, GFP_KERNEL);
	if (ret < 0)
		goto err_drop_mm;
	/*
	 * ep_uid < 2^DMAPLANE_SRC_NODE_SHIFT: a 15-bit generation above the
	 * 31-bit id, leaving room for the node slot in source values (which
	 * address vectors store with xa_mk_value()).
	 */
	ep->ep_uid = ((u64)((u32)atomic_inc_return(&dmaplane_ep_gen) & 0x7fff) << 32) |
		     ep->id;
	xa_store(&dmaplane_ep_ids, ep->id, ep, GFP_KERNEL);

	dmaplane_stat_inc(endpoints);
	return ep;

err_drop_mm:
	if (ep->mm)
		mmdrop(ep->mm);
	dmaplane_matcher_destroy(&ep->matcher);
err_destroy_av_rev:
	rhashtable_destroy(&ep->av_rev);
err_free_ep:
	kfree(ep);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_ep_create);

static void ep_free(struct kref *ref)
{
	struct dmaplane_ep *ep = container_of(ref, struct dmaplane_ep, ref);

	dmaplane_cq_destroy(ep->cq);
	/* Drained by dmaplane_ep_drain_messages(): only the tables are left. */
	dmaplane_matcher_destroy(&ep->matcher);
	dmaplane_ep_recv_cache_free(ep);
	rhashtable_free_and_destroy(&ep->av_rev, av_rev_free, NULL);
	xa_destroy(&ep->av);
	xa_destroy(&ep->claims);
	xa_destroy(&ep->regions);
	if (ep->mm)
		mmdrop(ep->mm);
	mutex_destroy(&ep->match_lock);
	mutex_destroy(&ep->setup_lock);
	kfree_rcu(ep, rcu);
	dmaplane_stat_dec(endpoints);
}

/** dmaplane_ep_put() - drop a reference to an endpoint */
void dmaplane_ep_put(struct dmaplane_ep *ep)
{
	kref_put(&ep->ref, ep_free);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_ep_put);

/**
 * dmaplane_ep_for_each() - call @fn for every open endpoint, by id
 * @pos: in: the first id to visit; out: the id of the endpoint @fn
 *	stopped at (unchanged when there is none)
 * @fn: called under the spinlock of the endpoint table, so it must not
 *	sleep; the endpoint stays alive while it runs.  A non-zero return
 *	stops the walk.
 * @arg: passed to @fn
 *
 * Return: 0, or what @fn returned to stop the walk.
 */
int dmaplane_ep_for_each(u32 *pos, int (*fn)(struct dmaplane_ep *ep, void *arg),
			 void *arg)
{
	struct dmaplane_ep *ep;
	unsigned long id;
	int ret = 0;

	xa_lock(&dmaplane_ep_ids);
	xa_for_each_start(&dmaplane_ep_ids, id, ep, *pos) {
		ret = fn(ep, arg);
		if (ret) {
			*pos = id;
			break;
		}
	}
	xa_unlock(&dmaplane_ep_ids);
	return ret;
}

/**
 * dmaplane_ep_destroy() - the file is released: tear the endpoint down
 * @ep: endpoint from dmaplane_ep_create()
 *
 * Stops new lookups, withdraws its rendezvous messages queued at other
 * nodes, fails what peers queued here, releases regions, and
 * frees the completion ring's pages, and drops the file's reference;
 * messages this endpoint sent that are still queued at peers keep the
 * (small) structure until they are consumed.
 */
void dmaplane_ep_destroy(struct dmaplane_ep *ep)
{
	xa_erase(&dmaplane_ep_ids, ep->id);
	dmaplane_ib_ep_closed(ep);
	dmaplane_ep_drain_messages(ep);
	/* Its messages still queued elsewhere must not keep the ring. */
	dmaplane_cq_release(ep->cq);
	dmaplane_ep_release_regions(ep);
	dmaplane_mr_cache_put(ep->mr_cache);
	ep->mr_cache = NULL;
	dmaplane_ep_put(ep);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_ep_destroy);

/*
 * The open endpoint named @ep_uid, unreferenced: under the xa_lock of
 * dmaplane_ep_ids or RCU.  Its id indexes the table; the rest of the
 * ep_uid tells a later endpoint with the same id from it.
 */
static struct dmaplane_ep *ep_lookup_uid(u64 ep_uid)
{
	struct dmaplane_ep *ep;

	if (ep_uid >> 63)
		return NULL;
	ep = xa_load(&dmaplane_ep_ids, (u32)ep_uid);
	return ep && ep->ep_uid == ep_uid ? ep : NULL;
}

/**
 * dmaplane_ep_get_by_uid() - find an open endpoint of this node
 * @ep_uid: &dmaplane_name.ep_uid
 *
 * Return: a referenced endpoint, or NULL (closed, or never existed).
 */
struct dmaplane_ep *dmaplane_ep_get_by_uid(u64 ep_uid)
{
	struct dmaplane_ep *ep;

	/*
	 * Every send looks its receiver up: under RCU, not the table's
	 * spinlock, which all senders of the node would share.
	 */
	rcu_read_lock();
	ep = ep_lookup_uid(ep_uid);
	if (ep && !kref_get_unless_zero(&ep->ref))
		ep = NULL;
	rcu_read_unlock();
	return ep;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_ep_get_by_uid);

/**
 * dmaplane_ep_uid_in_mm() - is a source an open endpoint of this node in an mm?
 * @src: a source (&dmaplane_cqe.src); one of another node is not
 * @mm: address space
 *
 * Return: whether an endpoint with that ep_uid is open in @mm now.
 */
bool dmaplane_ep_uid_in_mm(u64 src, const struct mm_struct *mm)
{
	struct dmaplane_ep *ep;
	bool same;

	if (src >> DMAPLANE_SRC_NODE_SHIFT)
		return false;
	/* Endpoints are freed after a grace period (ep_free()). */
	rcu_read_lock();
	ep = ep_lookup_uid(src);
	same = ep && ep->mm == mm;
	rcu_read_unlock();
	return same;
}

/**
 * dmaplane_ep_cq() - the endpoint's ring, or NULL before EP_SETUP
 * @ep: endpoint
 */
struct dmaplane_cq *dmaplane_ep_cq(struct dmaplane_ep *ep)
{
	/* Pairs with smp_store_release() in dmaplane_ioctl_ep_setup(). */
	return smp_load_acquire(&ep->cq);
}

/**
 * dmaplane_ep_same_domain() - may two endpoints exchange messages?
 * @a: one endpoint
 * @b: the other
 *
 * Endpoints with an auth key talk to endpoints with the same key; those
 * without one talk to those of the same uid without one.
 */
bool dmaplane_ep_same_domain(const struct dmaplane_ep *a, const struct dmaplane_ep *b)
{
	if (a->auth_key || b->auth_key)
		return a->auth_key == b->auth_key;
	return uid_eq(a->uid, b->uid);
}

/**
 * dmaplane_ep_domain_ok() - may an endpoint of another node talk to @ep?
 * @ep: endpoint of this node
 * @uid: the other endpoint's uid, in the initial user namespace
 * @auth_key: the other endpoint's auth key
 *
 * The rule of dmaplane_ep_same_domain(); uids are compared as numbers,
 * as the nodes of a cluster share their user database.
 */
bool dmaplane_ep_domain_ok(const struct dmaplane_ep *ep, u32 uid, u64 auth_key)
{
	if (ep->auth_key || auth_key)
		return ep->auth_key == auth_key;
	return from_kuid(&init_user_ns, ep->uid) == uid;
}

int dmaplane_ioctl_ep_setup(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_ep_setup arg;
	struct dmaplane_cq *cq;
	int ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;

	mutex_lock(&ep->setup_lock);
	if (ep->cq) {
		ret = -EBUSY;
		goto out_unlock;
	}
	cq = dmaplane_cq_create(arg.cq_entries);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto out_unlock;
	}
	arg.cq_entries = cq->nr;
	arg.ring_size = cq->ring_size;
	arg.head_size = PAGE_SIZE;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		dmaplane_cq_destroy(cq);
		ret = -EFAULT;
		goto out_unlock;
	}
	ep->auth_key = arg.auth_key;
	/* Publish the domain before the ring: lookups test the ring first. */
	smp_store_release(&ep->cq, cq);
out_unlock:
	mutex_unlock(&ep->setup_lock);
	return ret;
}

int dmaplane_ioctl_getname(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_name name = {
		.node_id = dmaplane_node_id,
		.ep_uid = ep->ep_uid,
	};

	return copy_to_user(uarg, &name, sizeof(name)) ? -EFAULT : 0;
}

static unsigned int av_max = 1U << 20;
module_param(av_max, uint, 0644);
MODULE_PARM_DESC(av_max, "Address handles one endpoint may hold");

/* A new address handle for @value (a source value); -ENOSPC beyond av_max. */
static int av_insert(struct dmaplane_ep *ep, u64 value, u32 *handle)
{
	struct dmaplane_av_rev *rev;
	int ret;

	if (atomic_inc_return(&ep->nav) > READ_ONCE(av_max)) {
		ret = -ENOSPC;
		goto err_uncount;
	}
	mutex_lock(&ep->av_lock);
	ret = xa_alloc_cyclic(&ep->av, handle, xa_mk_value(value),
			      XA_LIMIT(0, DMAPLANE_AV_ANY - 1), &ep->next_av,
			      GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto err_unlock;
	rev = rhashtable_lookup_fast(&ep->av_rev, &value, av_rev_params);
	if (rev) {
		rev->count++;
	} else {
		ret = -ENOMEM;
		rev = kzalloc(sizeof(*rev), GFP_KERNEL_ACCOUNT);
		if (!rev)
			goto err_erase;
		rev->src = value;
		rev->handle = *handle;
		rev->count = 1;
		ret = rhashtable_insert_fast(&ep->av_rev, &rev->node, av_rev_params);
		if (ret) {
			kfree(rev);
			goto err_erase;
		}
	}
	mutex_unlock(&ep->av_lock);
	return 0;

err_erase:
	xa_erase(&ep->av, *handle);
err_unlock:
	mutex_unlock(&ep->av_lock);
err_uncount:
	atomic_dec(&ep->nav);
	return ret;
}

static int av_erase(struct dmaplane_ep *ep, u32 handle)
{
	struct dmaplane_av_rev *rev;
	unsigned long idx;
	void *entry;
	u64 value;

	mutex_lock(&ep->av_lock);
	entry = xa_erase(&ep->av, handle);
	if (!entry) {
		mutex_unlock(&ep->av_lock);
		return -ENOENT;
	}
	value = xa_to_value(entry);
	rev = rhashtable_lookup_fast(&ep->av_rev, &value, av_rev_params);
	if (!WARN_ON_ONCE(!rev)) {
		if (!--rev->count) {
			rhashtable_remove_fast(&ep->av_rev, &rev->node, av_rev_params);
			kfree_rcu(rev, rcu);
		} else if (rev->handle == handle) {
			/* Another handle names @value: the oldest one left. */
			xa_for_each(&ep->av, idx, entry) {
				if (xa_to_value(entry) == value) {
					WRITE_ONCE(rev->handle, idx);
					break;
				}
			}
		}
	}
	mutex_unlock(&ep->av_lock);
	atomic_dec(&ep->nav);
	return 0;
}

/**
 * dmaplane_av_reverse() - @ep's address handle of a source
 * @ep: the receiving endpoint
 * @src: a source value (see &dmaplane_cqe.src)
 *
 * Any context; no locks taken but RCU.
 *
 * Return: a handle of @ep's address vector that names @src, or
 * %DMAPLANE_AV_ANY when none does.
 */
u32 dmaplane_av_reverse(struct dmaplane_ep *ep, u64 src)
{
	struct dmaplane_av_rev *rev;
	u32 handle = DMAPLANE_AV_ANY;

	rcu_read_lock();
	rev = rhashtable_lookup(&ep->av_rev, &src, av_rev_params);
	if (rev)
		handle = READ_ONCE(rev->handle);
	rcu_read_unlock();
	return handle;
}

int dmaplane_ioctl_av_insert(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_av_insert arg;
	struct dmaplane_ep *peer;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.handle)
		return -EINVAL;
	if (!dmaplane_ep_cq(ep))
		return -EINVAL;
	if (arg.name.ep_uid >> DMAPLANE_SRC_NODE_SHIFT)
		return -ECONNREFUSED;
	if (arg.name.node_id != dmaplane_node_id) {
		u64 src;

		ret = dmaplane_ib_resolve(ep, arg.name.node_id, arg.name.ep_uid, &src);
		if (ret)
			return ret;
		ret = av_insert(ep, src, &arg.handle);
		goto out_copy;
	}

	peer = dmaplane_ep_get_by_uid(arg.name.ep_uid);
	if (!peer)
		return -ECONNREFUSED;
	if (!dmaplane_ep_cq(peer))
		ret = -ECONNREFUSED;
	else if (!dmaplane_ep_same_domain(ep, peer))
		ret = -EACCES;
	else
		ret = av_insert(ep, arg.name.ep_uid, &arg.handle);
	dmaplane_ep_put(peer);
out_copy:
	if (ret < 0)
		return ret;

	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		av_erase(ep, arg.handle);
		return -EFAULT;
	}
	return 0;
}

int dmaplane_ioctl_av_remove(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_handle_arg arg;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved)
		return -EINVAL;
	return av_erase(ep, arg.handle);
}

/**
 * dmaplane_av_lookup() - the peer an address handle names
 * @ep: endpoint
 * @handle: address handle
 * @ep_uid: set to the peer's source value: its ep_uid, with the node slot
 *	above %DMAPLANE_SRC_NODE_SHIFT for an endpoint of another node
 *
 * Return: 0 or -ENOENT.
 */
int dmaplane_av_lookup(struct dmaplane_ep *ep, u32 handle, u64 *ep_uid)
{
	void *entry = xa_load(&ep->av, handle);

	if (!entry)
		return -ENOENT;
	*ep_uid = xa_to_value(entry);
	return 0;
}

unsigned int dmaplane_eager_threshold(void)
{
	return READ_ONCE(eager_threshold);
}

/**
 * dmaplane_info_fill() - validate and answer a GET_INFO request
 * @ep: the asking endpoint
 * @info: the request as copied from user space; filled in on success
 *
 * Return: 0, or -EINVAL when a flag, the padding or a reserved field is
 * non-zero.
 */
int dmaplane_info_fill(const struct dmaplane_ep *ep, struct dmaplane_info *info)
{
	if (info->flags || info->pad ||
	    memchr_inv(info->reserved, 0, sizeof(info->reserved)))
		return -EINVAL;

	info->abi_version = DMAPLANE_ABI_VERSION;
	info->caps = DMAPLANE_CAP_INFO | DMAPLANE_CAP_MSG | DMAPLANE_CAP_RMA |
		     DMAPLANE_CAP_ARENA | DMAPLANE_CAP_DMABUF_EXPORT |
		     DMAPLANE_CAP_DMABUF_IMPORT | DMAPLANE_CAP_MR | DMAPLANE_CAP_CQ_DATA |
		     DMAPLANE_CAP_SRC_AV | DMAPLANE_CAP_REGION_BUF | DMAPLANE_CAP_PUT_DATA |
		     (DMAPLANE_HAVE_REMOTE ? DMAPLANE_CAP_REMOTE : 0) |
		     DMAPLANE_CAP_RECV_INLINE |
		     (IS_ENABLED(CONFIG_IO_URING) ? DMAPLANE_CAP_URING_CMD : 0);
	info->endpoint_id = ep->id;
	info->page_size = PAGE_SIZE;
	return 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_info_fill);

/**
 * dmaplane_ep_exit() - module unload: every endpoint must be gone by now
 */
void dmaplane_ep_exit(void)
{
	unsigned long id = 0;

	/*
	 * Not xa_empty(): an ID allocation that failed half-way (out of
	 * memory) may leave empty nodes in the tree, which is no leak.
	 */
	WARN_ON(xa_find(&dmaplane_ep_ids, &id, ULONG_MAX, XA_PRESENT));
	xa_destroy(&dmaplane_ep_ids);
}
