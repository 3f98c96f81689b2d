// SPDX-License-Identifier: MIT
/*
 * dp-demo: open two endpoints through libdmaplane and print what the
 * module reports about itself.  Grows into the send/recv/put/get demo.
 */
#include <stdio.h>
#include <string.h>

#include <dmaplane.h>

/* Every DMAPLANE_CAP_* bit of uapi/linux/dmaplane.h, by name. */
static const struct {
	unsigned long long bit;
	const char *name;
} cap_names[] = {
	{ DMAPLANE_CAP_INFO, "info" },
	{ DMAPLANE_CAP_ARENA, "arena" },
	{ DMAPLANE_CAP_MR, "mr" },
	{ DMAPLANE_CAP_DMABUF_EXPORT, "dmabuf-export" },
	{ DMAPLANE_CAP_DMABUF_IMPORT, "dmabuf-import" },
	{ DMAPLANE_CAP_MSG, "msg" },
	{ DMAPLANE_CAP_RMA, "rma" },
	{ DMAPLANE_CAP_REMOTE, "remote" },
	{ DMAPLANE_CAP_CQ_DATA, "cq-data" },
	{ DMAPLANE_CAP_SRC_AV, "src-av" },
	{ DMAPLANE_CAP_REGION_BUF, "region-buf" },
	{ DMAPLANE_CAP_PUT_DATA, "put-data" },
	{ DMAPLANE_CAP_URING_CMD, "uring-cmd" },
	{ DMAPLANE_CAP_RECV_INLINE, "recv-inline" },
};

static void print_caps(unsigned long long caps)
{
	unsigned int i, j;

	for (i = 0; i < 64; i++) {
		unsigned long long bit = 1ULL << i;

		if (!(caps & bit))
			continue;
		for (j = 0; j < sizeof(cap_names) / sizeof(cap_names[0]); j++)
			if (cap_names[j].bit == bit)
				break;
		if (j < sizeof(cap_names) / sizeof(cap_names[0]))
			printf(" %s", cap_names[j].name);
		else	/* a module newer than this program */
			printf(" unknown-bit%u", i);
	}
	printf("\n");
}

int main(void)
{
	struct dmaplane_info a, b;
	struct dp_ep *ep1, *ep2;
	int ret;

	ret = dp_open(NULL, 0, &ep1);
	if (ret) {
		fprintf(stderr, "dp-demo: cannot open %s: %s\n", DP_DEFAULT_PATH,
			strerror(-ret));
		return 1;
	}
	ret = dp_open(NULL, 0, &ep2);
	if (ret) {
		fprintf(stderr, "dp-demo: second endpoint: %s\n", strerror(-ret));
		dp_close(ep1);
		return 1;
	}

	ret = dp_info(ep1, &a);
	if (!ret)
		ret = dp_info(ep2, &b);
	if (ret) {
		fprintf(stderr, "dp-demo: GET_INFO: %s\n", strerror(-ret));
		goto out;
	}

	printf("dmaplane module: ABI version %u (library built for %u)\n",
	       a.abi_version, DMAPLANE_ABI_VERSION);
	printf("capabilities:");
	print_caps(a.caps);
	printf("page size: %u bytes\n", a.page_size);
	printf("endpoints opened: id %llu and id %llu\n",
	       (unsigned long long)a.endpoint_id,
	       (unsigned long long)b.endpoint_id);
out:
	dp_close(ep2);
	dp_close(ep1);
	return ret ? 1 : 0;
}
