// SPDX-License-Identifier: MIT
/*
 * dp-demo: open two endpoints through libdmaplane and print what the
 * module reports about itself.  Grows into the send/recv/put/get demo.
 */
#include <stdio.h>
#include <string.h>

#include <dmaplane.h>

static const char *const cap_names[] = {
	"info", "arena", "mr", "dmabuf-export", "dmabuf-import", "msg",
};

static void print_caps(unsigned long long caps)
{
	unsigned int i;

	for (i = 0; i < 64; i++) {
		if (!(caps & (1ULL << i)))
			continue;
		if (i < sizeof(cap_names) / sizeof(cap_names[0]))
			printf(" %s", cap_names[i]);
		else
			printf(" bit%u", i);
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
