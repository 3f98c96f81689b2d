// SPDX-License-Identifier: GPL-2.0
/*
 * dpctl: administer dmaplane.
 *
 *   dpctl info      ABI version and capabilities of the loaded module
 *
 * The generic netlink commands (show, peer, stats) arrive with the
 * control plane.
 */
#include <stdio.h>
#include <string.h>

#include <dmaplane.h>

static int usage(FILE *f)
{
	fprintf(f, "usage: dpctl [-d DEVICE] info\n");
	return f == stderr ? 2 : 0;
}

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
	printf("abi_version %u\ncaps 0x%llx\npage_size %u\n",
	       info.abi_version, (unsigned long long)info.caps, info.page_size);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int i = 1;

	if (i + 1 < argc && !strcmp(argv[i], "-d")) {
		dev = argv[i + 1];
		i += 2;
	}
	if (i >= argc)
		return usage(stderr);
	if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
		return usage(stdout);
	if (!strcmp(argv[i], "info") && i + 1 == argc)
		return cmd_info(dev);
	return usage(stderr);
}
