// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane and dma-buf: arena slices exported as dma-bufs that GPU and NIC
 * drivers attach to, and foreign dma-bufs imported as regions.
 *
 * Exporter: one const dma_buf_ops; every attachment gets its own
 * sg_table of the slice (as the system heap does), DMA-mapped for the
 * importer's device on map_dma_buf.  The dma-buf holds a reference to the
 * arena, so the memory outlives ARENA_DESTROY while it is shared.
 *
 * Importer: a dynamic attachment to our misc device, whose move_notify
 * invalidates the region (as umem_dmabuf.c does); CPU copies go through
 * dma_buf_vmap() and begin/end_cpu_access.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/iosys-map.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>

#include "dmaplane.h"

MODULE_IMPORT_NS(DMAPLANE_NS(DMA_BUF));

/**
 * struct dmaplane_dmabuf - an exported arena slice
 * @arena: the arena; holds a reference to it
 * @first: first page of the slice in the arena
 * @npages: pages in the slice
 * @lock: protects @attachments
 * @attachments: &struct dmaplane_dmabuf_attachment of the importers
 */
struct dmaplane_dmabuf {
	struct dmaplane_arena *arena;
	unsigned long first;
	unsigned long npages;
	struct mutex lock;		/* protects attachments */
	struct list_head attachments;
};

/**
 * struct dmaplane_dmabuf_attachment - one importer's view of the slice
 * @dev: the importer's device
 * @sgt: the slice's pages; DMA addresses valid while @mapped
 * @mapped: map_dma_buf done and not yet undone
 * @node: entry in &dmaplane_dmabuf.attachments
 */
struct dmaplane_dmabuf_attachment {
	struct device *dev;
	struct sg_table sgt;
	bool mapped;
	struct list_head node;
};

static int dmaplane_dmabuf_attach(struct dma_buf *dmabuf,
				  struct dma_buf_attachment *attach)
{
	struct dmaplane_dmabuf *buf = dmabuf->priv;
	struct dmaplane_dmabuf_attachment *a;
	int ret;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	ret = dmaplane_arena_sg_table(buf->arena, (u64)buf->first << PAGE_SHIFT,
				      (u64)buf->npages << PAGE_SHIFT, &a->sgt);
	if (ret) {
		kfree(a);
		return ret;
	}
	a->dev = attach->dev;
	attach->priv = a;

	mutex_lock(&buf->lock);
	list_add(&a->node, &buf->attachments);
	mutex_unlock(&buf->lock);
	return 0;
}

static void dmaplane_dmabuf_detach(struct dma_buf *dmabuf,
				   struct dma_buf_attachment *attach)
{
	struct dmaplane_dmabuf *buf = dmabuf->priv;
	struct dmaplane_dmabuf_attachment *a = attach->priv;

	mutex_lock(&buf->lock);
	list_del(&a->node);
	mutex_unlock(&buf->lock);
	sg_free_table(&a->sgt);
	kfree(a);
}

static struct sg_table *dmaplane_dmabuf_map(struct dma_buf_attachment *attach,
					    enum dma_data_direction dir)
{
	struct dmaplane_dmabuf *buf = attach->dmabuf->priv;
	struct dmaplane_dmabuf_attachment *a = attach->priv;
	int ret;

	ret = dma_map_sgtable(attach->dev, &a->sgt, dir, 0);
	if (ret)
		return ERR_PTR(ret);
	mutex_lock(&buf->lock);
	a->mapped = true;
	mutex_unlock(&buf->lock);
	return &a->sgt;
}

static void dmaplane_dmabuf_unmap(struct dma_buf_attachment *attach,
				  struct sg_table *sgt, enum dma_data_direction dir)
{
	struct dmaplane_dmabuf *buf = attach->dmabuf->priv;
	struct dmaplane_dmabuf_attachment *a = attach->priv;

	mutex_lock(&buf->lock);
	a->mapped = false;
	mutex_unlock(&buf->lock);
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
}

/* Sync every mapped attachment for the CPU or back for the devices. */
static void dmaplane_dmabuf_sync(struct dma_buf *dmabuf,
				 enum dma_data_direction dir, bool for_cpu)
{
	struct dmaplane_dmabuf *buf = dmabuf->priv;
	struct dmaplane_dmabuf_attachment *a;

	mutex_lock(&buf->lock);
	list_for_each_entry(a, &buf->attachments, node) {
		if (!a->mapped)
			continue;
		if (for_cpu)
			dma_sync_sgtable_for_cpu(a->dev, &a->sgt, dir);
		else
			dma_sync_sgtable_for_device(a->dev, &a->sgt, dir);
	}
	mutex_unlock(&buf->lock);
}

static int dmaplane_dmabuf_begin_cpu(struct dma_buf *dmabuf,
				     enum dma_data_direction dir)
{
	dmaplane_dmabuf_sync(dmabuf, dir, true);
	return 0;
}

static int dmaplane_dmabuf_end_cpu(struct dma_buf *dmabuf,
				   enum dma_data_direction dir)
{
	dmaplane_dmabuf_sync(dmabuf, dir, false);
	return 0;
}

/*
 * The slice may start anywhere in the arena, so its 2 MiB pages are not
 * necessarily PMD-aligned in the mapping: map base pages by pfn.  The
 * mapping keeps the dma-buf file, hence the arena, alive.
 */
static vm_fault_t dmaplane_dmabuf_vm_fault(struct vm_fault *vmf)
{
	struct dmaplane_dmabuf *buf = vmf->vma->vm_private_data;

	if (vmf->pgoff >= buf->npages)
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vmf->vma, vmf->address,
			      page_to_pfn(buf->arena->pages[buf->first + vmf->pgoff]));
}

static const struct vm_operations_struct dmaplane_dmabuf_vm_ops = {
	.fault = dmaplane_dmabuf_vm_fault,
};

static int dmaplane_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	/* dma_buf_mmap_internal() checked the range against the size. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = dmabuf->priv;
	vma->vm_ops = &dmaplane_dmabuf_vm_ops;
	return 0;
}

static int dmaplane_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct dmaplane_dmabuf *buf = dmabuf->priv;
	void *vaddr;

	vaddr = vmap(buf->arena->pages + buf->first, buf->npages, VM_MAP, PAGE_KERNEL);
	if (!vaddr)
		return -ENOMEM;
	iosys_map_set_vaddr(map, vaddr);
	return 0;
}

static void dmaplane_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	vunmap(map->vaddr);
	iosys_map_clear(map);
}

static void dmaplane_dmabuf_release(struct dma_buf *dmabuf)
{
	struct dmaplane_dmabuf *buf = dmabuf->priv;

	dmaplane_region_put(&buf->arena->region);
	mutex_destroy(&buf->lock);
	kfree(buf);
	dmaplane_stat_dec(dmabufs);
}

static const struct dma_buf_ops dmaplane_dmabuf_ops = {
	.attach = dmaplane_dmabuf_attach,
	.detach = dmaplane_dmabuf_detach,
	.map_dma_buf = dmaplane_dmabuf_map,
	.unmap_dma_buf = dmaplane_dmabuf_unmap,
	.begin_cpu_access = dmaplane_dmabuf_begin_cpu,
	.end_cpu_access = dmaplane_dmabuf_end_cpu,
	.mmap = dmaplane_dmabuf_mmap,
	.vmap = dmaplane_dmabuf_vmap,
	.vunmap = dmaplane_dmabuf_vunmap,
	.release = dmaplane_dmabuf_release,
};

/**
 * dmaplane_dmabuf_export() - export a slice of an arena as a dma-buf
 * @ep: endpoint owning the arena
 * @args: the request (handle, offset, len, flags), already copied in
 *
 * Return: the dma-buf, whose one reference the caller owns (install it
 * in an fd or dma_buf_put() it); ERR_PTR(-EINVAL) for a bad request,
 * -ENOENT (no such arena), -ERANGE (slice beyond the arena), -ENOMEM.
 */
struct dma_buf *dmaplane_dmabuf_export(struct dmaplane_ep *ep,
				       const struct dmaplane_dmabuf_export *args)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct dmaplane_dmabuf *buf;
	struct dmaplane_region *r;
	struct dma_buf *dmabuf;
	u64 end;
	int ret;

	if (args->flags & ~DMAPLANE_DMABUF_FLAGS || args->pad ||
	    memchr_inv(args->reserved, 0, sizeof(args->reserved)))
		return ERR_PTR(-EINVAL);
	if (!args->len || !PAGE_ALIGNED(args->offset) || !PAGE_ALIGNED(args->len))
		return ERR_PTR(-EINVAL);

	r = dmaplane_region_get(ep, args->handle, DMAPLANE_REGION_ARENA);
	if (IS_ERR(r))
		return ERR_CAST(r);
	if (check_add_overflow(args->offset, args->len, &end) || end > r->len) {
		ret = -ERANGE;
		goto err_put_arena;
	}

	buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf) {
		ret = -ENOMEM;
		goto err_put_arena;
	}
	buf->arena = to_dmaplane_arena(r);
	buf->first = args->offset >> PAGE_SHIFT;
	buf->npages = args->len >> PAGE_SHIFT;
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);

	exp_info.ops = &dmaplane_dmabuf_ops;
	exp_info.size = args->len;
	exp_info.flags = O_RDWR;
	exp_info.priv = buf;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto err_free_buf;
	}
	/* From here on the dma-buf owns buf and the arena reference. */
	dmaplane_stat_inc(dmabufs);
	return dmabuf;

err_free_buf:
	mutex_destroy(&buf->lock);
	kfree(buf);
err_put_arena:
	dmaplane_region_put(r);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_dmabuf_export);

int dmaplane_ioctl_dmabuf_export(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_dmabuf_export args;
	struct dma_buf *dmabuf;
	int fd, ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;

	dmabuf = dmaplane_dmabuf_export(ep, &args);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	/*
	 * dma_buf_fd() would install the fd before the copy to user space
	 * could fail; reserve it, and install it only once nothing can.
	 */
	fd = get_unused_fd_flags(args.flags & DMAPLANE_DMABUF_NO_CLOEXEC ? 0 : O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_put_dmabuf;
	}
	args.fd = fd;
	if (copy_to_user(uarg, &args, sizeof(args))) {
		ret = -EFAULT;
		goto err_put_fd;
	}
	fd_install(fd, dmabuf->file);
	return 0;

err_put_fd:
	put_unused_fd(fd);
err_put_dmabuf:
	dma_buf_put(dmabuf);
	return ret;
}

/**
 * struct dmaplane_import - a foreign dma-buf slice registered as a region
 * @region: the region; first member (see region.c)
 * @dmabuf: the dma-buf; holds a reference
 * @attach: dynamic attachment to the dmaplane device
 * @offset: start of the slice in @dmabuf
 * @lock: protects @map and @vmapped
 * @map: kernel mapping of the whole dma-buf, made at the first copy
 * @vmapped: @map is valid
 */
struct dmaplane_import {
	struct dmaplane_region region;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	u64 offset;
	struct mutex lock;		/* protects map and vmapped */
	struct iosys_map map;
	bool vmapped;
};

static_assert(offsetof(struct dmaplane_import, region) == 0);

static struct dmaplane_import *to_import(struct dmaplane_region *r)
{
	return container_of(r, struct dmaplane_import, region);
}

/* The exporter moves the buffer: our view of it is gone for good. */
static void dmaplane_import_move_notify(struct dma_buf_attachment *attach)
{
	struct dmaplane_import *imp = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	dmaplane_region_invalidate(&imp->region);
}

static const struct dma_buf_attach_ops dmaplane_import_attach_ops = {
	.allow_peer2peer = false,
	DMAPLANE_DMA_BUF_INVALIDATE_OP(dmaplane_import_move_notify),
};

/*
 * The importer's CPU view of byte @off: the dma-buf vmapped once (until
 * release), the access begun in the copy's direction.
 */
static int dmaplane_import_vmap(struct dmaplane_region *r, u64 off, bool to_region,
				void **vaddr)
{
	enum dma_data_direction dir = to_region ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	struct dmaplane_import *imp = to_import(r);
	int ret;

	mutex_lock(&imp->lock);
	if (!imp->vmapped) {
		ret = dma_buf_vmap_unlocked(imp->dmabuf, &imp->map);
		if (ret) {
			mutex_unlock(&imp->lock);
			return ret;
		}
		imp->vmapped = true;
	}
	mutex_unlock(&imp->lock);
	/* I/O memory would need memcpy_toio(); not supported yet. */
	if (imp->map.is_iomem)
		return -EFAULT;
	ret = dma_buf_begin_cpu_access(imp->dmabuf, dir);
	if (ret)
		return ret;
	*vaddr = imp->map.vaddr + imp->offset + off;
	return 0;
}

static void dmaplane_import_vunmap(struct dmaplane_region *r, bool to_region)
{
	dma_buf_end_cpu_access(to_import(r)->dmabuf,
			       to_region ? DMA_TO_DEVICE : DMA_FROM_DEVICE);
}

static int dmaplane_import_copy(struct dmaplane_region *r, u64 off,
				struct iov_iter *iter, bool to_region)
{
	size_t n = iov_iter_count(iter);
	void *vaddr;
	int ret;

	ret = dmaplane_import_vmap(r, off, to_region, &vaddr);
	if (ret)
		return ret;
	if (to_region)
		ret = copy_from_iter(vaddr, n, iter) == n ? 0 : -EFAULT;
	else
		ret = copy_to_iter(vaddr, n, iter) == n ? 0 : -EFAULT;
	dmaplane_import_vunmap(r, to_region);
	return ret;
}

static void dmaplane_import_release(struct dmaplane_region *r)
{
	struct dmaplane_import *imp = to_import(r);

	if (imp->vmapped)
		dma_buf_vunmap_unlocked(imp->dmabuf, &imp->map);
	dma_buf_detach(imp->dmabuf, imp->attach);
	dma_buf_put(imp->dmabuf);
	mutex_destroy(&imp->lock);
	dmaplane_stat_dec(imports);
}

static const struct dmaplane_region_ops dmaplane_import_region_ops = {
	.copy = dmaplane_import_copy,
	.vmap = dmaplane_import_vmap,
	.vunmap = dmaplane_import_vunmap,
	.release = dmaplane_import_release,
};

/**
 * dmaplane_import_dmabuf() - register a slice of a dma-buf as a region
 * @ep: endpoint
 * @dmabuf: the dma-buf; the region takes its own reference
 * @args: the request (access, offset, len, flags), already copied in;
 *	handle, lkey and rkey are filled in on success
 *
 * Return: 0, -EINVAL for a bad request, -ERANGE (slice beyond the
 * dma-buf), -EACCES (write access to a dma-buf exported read-only),
 * -ENOMEM, or the error of the exporter's attach.
 */
int dmaplane_import_dmabuf(struct dmaplane_ep *ep, struct dma_buf *dmabuf,
			   struct dmaplane_mr_import_dmabuf *args)
{
	struct dmaplane_import *imp;
	u64 end;
	int ret;

	if (args->flags || args->pad || args->access & ~DMAPLANE_ACCESS_ALL ||
	    memchr_inv(args->reserved, 0, sizeof(args->reserved)))
		return -EINVAL;
	if (!args->len || !PAGE_ALIGNED(args->offset) || !PAGE_ALIGNED(args->len))
		return -EINVAL;
	if (check_add_overflow(args->offset, args->len, &end) || end > dmabuf->size)
		return -ERANGE;
	/* Whoever exported it read-only did not let us write it. */
	if (dmaplane_access_writes(args->access) &&
	    !(dmabuf->file->f_mode & FMODE_WRITE))
		return -EACCES;

	imp = kzalloc(sizeof(*imp), GFP_KERNEL_ACCOUNT);
	if (!imp)
		return -ENOMEM;
	get_dma_buf(dmabuf);
	imp->dmabuf = dmabuf;
	imp->offset = args->offset;
	mutex_init(&imp->lock);

	imp->attach = dma_buf_dynamic_attach(dmabuf, dmaplane_misc.this_device,
					     &dmaplane_import_attach_ops, imp);
	if (IS_ERR(imp->attach)) {
		ret = PTR_ERR(imp->attach);
		goto err_free_import;
	}

	dmaplane_region_init(&imp->region, &dmaplane_import_region_ops,
			     DMAPLANE_REGION_DMABUF, args->access, args->len);
	dmaplane_stat_inc(imports);
	ret = dmaplane_region_publish(ep, &imp->region);
	if (ret) {
		/* Whole now: the release undoes everything. */
		dmaplane_region_put(&imp->region);
		return ret;
	}

	args->handle = imp->region.handle;
	args->lkey = imp->region.handle;
	args->rkey = imp->region.rkey;
	return 0;

err_free_import:
	mutex_destroy(&imp->lock);
	dma_buf_put(dmabuf);
	kfree(imp);
	return ret;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_import_dmabuf);

int dmaplane_ioctl_mr_import_dmabuf(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_mr_import_dmabuf args;
	struct dmaplane_region *r;
	struct dma_buf *dmabuf;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	/* Bad fds first (-EBADF, -EINVAL for a file that is no dma-buf). */
	dmabuf = dma_buf_get(args.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	ret = dmaplane_import_dmabuf(ep, dmabuf, &args);
	dma_buf_put(dmabuf);
	if (ret)
		return ret;

	if (copy_to_user(uarg, &args, sizeof(args))) {
		r = dmaplane_region_unpublish(ep, args.handle, DMAPLANE_REGION_DMABUF);
		if (!IS_ERR(r))
			dmaplane_region_put(r);
		return -EFAULT;
	}
	return 0;
}
