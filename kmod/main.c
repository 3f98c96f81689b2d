// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane: module init/exit, the /dev/dmaplane misc device and its file
 * operations.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/compat.h>
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "dmaplane.h"

DEFINE_PER_CPU(struct dmaplane_stats, dmaplane_stats);

/**
 * dmaplane_stat_read() - a counter's value: its CPUs' shares summed
 * @stat: which
 *
 * Return: the count, exact when nothing changed it during the sum.
 */
long dmaplane_stat_read(enum dmaplane_stat stat)
{
	long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu(dmaplane_stats, cpu).counters[stat]);
	return sum;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_stat_read);

/* The names debugfs and netlink give the counters, one per enum value. */
const char * const dmaplane_stat_names[] = {
	[DMAPLANE_STAT_ENDPOINTS] = "endpoints",
	[DMAPLANE_STAT_REGIONS] = "regions",
	[DMAPLANE_STAT_ARENAS] = "arenas",
	[DMAPLANE_STAT_ARENA_PAGES] = "arena_pages",
	[DMAPLANE_STAT_USER_MRS] = "user_mrs",
	[DMAPLANE_STAT_PINNED_PAGES] = "pinned_pages",
	[DMAPLANE_STAT_CHARGED_PAGES] = "charged_pages",
	[DMAPLANE_STAT_DMABUFS] = "dmabufs",
	[DMAPLANE_STAT_IMPORTS] = "imports",
	[DMAPLANE_STAT_INVALIDATIONS] = "invalidations",
	[DMAPLANE_STAT_POSTED_RECVS] = "posted_recvs",
	[DMAPLANE_STAT_UNEXP_MSGS] = "unexp_msgs",
	[DMAPLANE_STAT_DELIVERIES] = "deliveries",
	[DMAPLANE_STAT_XFER_PAGES] = "xfer_pages",
	[DMAPLANE_STAT_COPIES_CACHED] = "copies_cached",
	[DMAPLANE_STAT_COPIES_PINNED] = "copies_pinned",
	[DMAPLANE_STAT_RECV_PINS] = "recv_pins",
	[DMAPLANE_STAT_COPIES_SPLIT] = "copies_split",
	[DMAPLANE_STAT_COPIES_SPLIT_REDONE] = "copies_split_redone",
	[DMAPLANE_STAT_COPIES_SPLIT_CACHED] = "copies_split_cached",
	[DMAPLANE_STAT_COPIES_SPLIT_PEER] = "copies_split_peer",
	[DMAPLANE_STAT_MSG_REGS] = "msg_regs",
	[DMAPLANE_STAT_MSG_REG_HITS] = "msg_reg_hits",
	[DMAPLANE_STAT_RECV_INLINE] = "recv_inline",
};

static struct dentry *dmaplane_debugfs;

static int dmaplane_open(struct inode *inode, struct file *file)
{
	struct dmaplane_ep *ep;

	ep = dmaplane_ep_create();
	if (IS_ERR(ep))
		return PTR_ERR(ep);

	file->private_data = ep;
	return 0;
}

static int dmaplane_release(struct inode *inode, struct file *file)
{
	dmaplane_ep_destroy(file->private_data);
	return 0;
}

static long dmaplane_ioctl_get_info(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_info info;
	int ret;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;

	ret = dmaplane_info_fill(ep, &info);
	if (ret)
		return ret;

	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long dmaplane_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct dmaplane_ep *ep = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case DMAPLANE_IOCTL_GET_INFO:
		return dmaplane_ioctl_get_info(ep, uarg);
	case DMAPLANE_IOCTL_EP_SETUP:
		return dmaplane_ioctl_ep_setup(ep, uarg);
	case DMAPLANE_IOCTL_GETNAME:
		return dmaplane_ioctl_getname(ep, uarg);
	case DMAPLANE_IOCTL_AV_INSERT:
		return dmaplane_ioctl_av_insert(ep, uarg);
	case DMAPLANE_IOCTL_AV_REMOVE:
		return dmaplane_ioctl_av_remove(ep, uarg);
	case DMAPLANE_IOCTL_SUBMIT:
		return dmaplane_ioctl_submit(ep, uarg);
	case DMAPLANE_IOCTL_PROBE:
		return dmaplane_ioctl_probe(ep, uarg);
	case DMAPLANE_IOCTL_CANCEL:
		return dmaplane_ioctl_cancel(ep, uarg);
	case DMAPLANE_IOCTL_ARENA_CREATE:
		return dmaplane_ioctl_arena_create(ep, uarg);
	case DMAPLANE_IOCTL_ARENA_DESTROY:
		return dmaplane_ioctl_arena_destroy(ep, uarg);
	case DMAPLANE_IOCTL_DMABUF_EXPORT:
		return dmaplane_ioctl_dmabuf_export(ep, uarg);
	case DMAPLANE_IOCTL_MR_IMPORT_DMABUF:
		return dmaplane_ioctl_mr_import_dmabuf(ep, uarg);
	case DMAPLANE_IOCTL_MR_REG:
		return dmaplane_ioctl_mr_reg(ep, uarg);
	case DMAPLANE_IOCTL_MR_DEREG:
		return dmaplane_ioctl_mr_dereg(ep, uarg);
	case DMAPLANE_IOCTL_MR_QUERY:
		return dmaplane_ioctl_mr_query(ep, uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * IORING_OP_URING_CMD on an endpoint: the batch of DMAPLANE_IOCTL_SUBMIT
 * without a system call of its own.  It runs synchronously wherever
 * io_uring issues it (the submitter's io_uring_enter(), its SQPOLL thread,
 * an io-wq worker, e.g. with IOSQE_ASYNC).  IO_URING_F_NONBLOCK does not
 * make it punt: the batch sleeps only as the ioctl does (faults on the
 * caller's memory, the copy of a matched message), never waiting for a
 * peer.  Its result (the count accepted, or -errno, -EAGAIN when the
 * first operation finds no room) becomes the CQE's res through
 * io_uring_cmd_done() before -EIOCBQUEUED is returned, as ublk does:
 * 6.1's io_uring takes a positive return from a handler for a failure
 * inline (links broken) and loses it in an io-wq worker (no CQE at all).
 * Refusals before the batch are plain negative returns.
 */
static int dmaplane_uring_cmd(struct io_uring_cmd *ioucmd,
			      unsigned int issue_flags)
{
	const struct dmaplane_uring_submit *area = dmaplane_uring_cmd_area(ioucmd);
	struct dmaplane_ep *ep = ioucmd->file->private_data;
	u64 ops;
	u32 nr;
	u16 op_size, flags;

	static_assert(sizeof(*area) == 16);
	if (ioucmd->cmd_op != DMAPLANE_URING_CMD_SUBMIT)
		return -EOPNOTSUPP;
	/* No registered buffers: the operations name their own. */
	if (ioucmd->flags & IORING_URING_CMD_FIXED)
		return -EINVAL;
	/* The area may be the SQE that user space still writes: read it once. */
	ops = READ_ONCE(area->ops);
	nr = READ_ONCE(area->nr);
	op_size = READ_ONCE(area->op_size);
	flags = READ_ONCE(area->flags);
	if (flags)
		return -EINVAL;
	dmaplane_uring_cmd_done(ioucmd, dmaplane_submit(ep, ops, nr, op_size),
				issue_flags);
	return -EIOCBQUEUED;
}

static int dmaplane_mmap_file(struct file *file, struct vm_area_struct *vma)
{
	struct dmaplane_ep *ep = file->private_data;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct dmaplane_cq *cq;

	if (off == DMAPLANE_CQ_RING_OFFSET || off == DMAPLANE_CQ_HEAD_OFFSET) {
		cq = dmaplane_ep_cq(ep);
		return cq ? dmaplane_cq_mmap(cq, vma) : -EINVAL;
	}
	return dmaplane_mmap(ep, vma);
}

static __poll_t dmaplane_poll(struct file *file, poll_table *wait)
{
	struct dmaplane_ep *ep = file->private_data;
	struct dmaplane_cq *cq = dmaplane_ep_cq(ep);

	dmaplane_ep_note_cpu(ep);
	poll_wait(file, &ep->wq, wait);
	/* Pairs with wq_has_sleeper() in cqe_post() (msg.c). */
	smp_mb();
	return cq && dmaplane_cq_pending(cq) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations dmaplane_fops = {
	.owner = THIS_MODULE,
	.open = dmaplane_open,
	.release = dmaplane_release,
	.unlocked_ioctl = dmaplane_ioctl,
	.uring_cmd = dmaplane_uring_cmd,
	.mmap = dmaplane_mmap_file,
	.poll = dmaplane_poll,
	.compat_ioctl = compat_ptr_ioctl,
	/* 2 MiB-aligned addresses let arenas be mapped with PMDs. */
	.get_unmapped_area = thp_get_unmapped_area,
	.llseek = noop_llseek,
};

/* Also the device that imported dma-bufs are attached to (dmabuf.c). */
struct miscdevice dmaplane_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = DMAPLANE_DEVICE_NAME,
	.fops = &dmaplane_fops,
	.mode = 0666,
};

/*
 * Every named field of struct dmaplane_stats must be the counter its enum
 * value indexes, and the struct must hold nothing else.
 */
#define DMAPLANE_STAT_CHECK(field, stat)				\
	BUILD_BUG_ON(offsetof(struct dmaplane_stats, field) !=		\
		     offsetof(struct dmaplane_stats, counters[stat]))

static int dmaplane_stats_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	DMAPLANE_STAT_CHECK(endpoints, DMAPLANE_STAT_ENDPOINTS);
	DMAPLANE_STAT_CHECK(regions, DMAPLANE_STAT_REGIONS);
	DMAPLANE_STAT_CHECK(arenas, DMAPLANE_STAT_ARENAS);
	DMAPLANE_STAT_CHECK(arena_pages, DMAPLANE_STAT_ARENA_PAGES);
	DMAPLANE_STAT_CHECK(user_mrs, DMAPLANE_STAT_USER_MRS);
	DMAPLANE_STAT_CHECK(pinned_pages, DMAPLANE_STAT_PINNED_PAGES);
	DMAPLANE_STAT_CHECK(charged_pages, DMAPLANE_STAT_CHARGED_PAGES);
	DMAPLANE_STAT_CHECK(dmabufs, DMAPLANE_STAT_DMABUFS);
	DMAPLANE_STAT_CHECK(imports, DMAPLANE_STAT_IMPORTS);
	DMAPLANE_STAT_CHECK(invalidations, DMAPLANE_STAT_INVALIDATIONS);
	DMAPLANE_STAT_CHECK(posted_recvs, DMAPLANE_STAT_POSTED_RECVS);
	DMAPLANE_STAT_CHECK(unexp_msgs, DMAPLANE_STAT_UNEXP_MSGS);
	DMAPLANE_STAT_CHECK(deliveries, DMAPLANE_STAT_DELIVERIES);
	DMAPLANE_STAT_CHECK(xfer_pages, DMAPLANE_STAT_XFER_PAGES);
	DMAPLANE_STAT_CHECK(copies_cached, DMAPLANE_STAT_COPIES_CACHED);
	DMAPLANE_STAT_CHECK(copies_pinned, DMAPLANE_STAT_COPIES_PINNED);
	DMAPLANE_STAT_CHECK(recv_pins, DMAPLANE_STAT_RECV_PINS);
	DMAPLANE_STAT_CHECK(copies_split, DMAPLANE_STAT_COPIES_SPLIT);
	DMAPLANE_STAT_CHECK(copies_split_redone, DMAPLANE_STAT_COPIES_SPLIT_REDONE);
	DMAPLANE_STAT_CHECK(copies_split_cached, DMAPLANE_STAT_COPIES_SPLIT_CACHED);
	DMAPLANE_STAT_CHECK(copies_split_peer, DMAPLANE_STAT_COPIES_SPLIT_PEER);
	DMAPLANE_STAT_CHECK(msg_regs, DMAPLANE_STAT_MSG_REGS);
	DMAPLANE_STAT_CHECK(msg_reg_hits, DMAPLANE_STAT_MSG_REG_HITS);
	DMAPLANE_STAT_CHECK(recv_inline, DMAPLANE_STAT_RECV_INLINE);
	BUILD_BUG_ON(sizeof(struct dmaplane_stats) !=
		     sizeof(long) * DMAPLANE_NUM_STATS);
	BUILD_BUG_ON(ARRAY_SIZE(dmaplane_stat_names) != DMAPLANE_NUM_STATS);

	for (i = 0; i < DMAPLANE_NUM_STATS; i++)
		seq_printf(m, "%s %ld\n", dmaplane_stat_names[i],
			   dmaplane_stat_read(i));
	return 0;
}

DEFINE_SHOW_ATTRIBUTE(dmaplane_stats);
DEFINE_SHOW_ATTRIBUTE(dmaplane_ib_conns);

static int __init dmaplane_init(void)
{
	int ret;

	/* The transport announces it to peers: choose it first. */
	dmaplane_node_id = get_random_u64();

	ret = dmaplane_msg_init();
	if (ret)
		return ret;

	ret = dmaplane_mr_init();
	if (ret)
		goto err_msg_exit;

	ret = dmaplane_nl_init();
	if (ret)
		goto err_mr_exit;

	ret = dmaplane_ib_init();
	if (ret)
		goto err_nl_exit;

	ret = misc_register(&dmaplane_misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", DMAPLANE_DEVICE_NAME, ret);
		goto err_ib_exit;
	}
	/* Imported dma-bufs are mapped for this device; any address will do. */
	ret = dma_coerce_mask_and_coherent(dmaplane_misc.this_device, DMA_BIT_MASK(64));
	if (ret) {
		pr_err("cannot set the DMA mask: %d\n", ret);
		misc_deregister(&dmaplane_misc);
		goto err_ib_exit;
	}

	/* debugfs is optional: failures are not fatal by design. */
	dmaplane_debugfs = debugfs_create_dir(DMAPLANE_DRV_NAME, NULL);
	debugfs_create_file("stats", 0444, dmaplane_debugfs, NULL,
			    &dmaplane_stats_fops);
	debugfs_create_file("conns", 0400, dmaplane_debugfs, NULL,
			    &dmaplane_ib_conns_fops);

	pr_info("loaded, ABI version %d\n", DMAPLANE_ABI_VERSION);
	return 0;

err_ib_exit:
	dmaplane_ib_exit();
err_nl_exit:
	dmaplane_nl_exit();
err_mr_exit:
	dmaplane_mr_exit();
err_msg_exit:
	dmaplane_msg_exit();
	return ret;
}

static void __exit dmaplane_exit(void)
{
	debugfs_remove(dmaplane_debugfs);
	misc_deregister(&dmaplane_misc);
	/* Deliveries still running may pull from peers: before the transport. */
	dmaplane_msg_exit();
	/* Peers first: their connections complete what is pending. */
	dmaplane_nl_peers_flush();
	dmaplane_ib_exit();
	dmaplane_ep_exit();
	dmaplane_mr_exit();
	/* Regions are freed after a grace period (region.c): wait for them. */
	rcu_barrier();
	/* Last: regions released above may still have sent events. */
	dmaplane_nl_exit();
}

module_init(dmaplane_init);
module_exit(dmaplane_exit);

MODULE_DESCRIPTION("dmaplane: tag-matched messaging, memory registration and dma-buf arenas");
MODULE_AUTHOR("The dmaplane developers");
MODULE_LICENSE("GPL");
