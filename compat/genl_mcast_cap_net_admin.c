// SPDX-License-Identifier: GPL-2.0
/*
 * 6.7 (and 6.1.y stable): a generic netlink multicast group can require
 * CAP_NET_ADMIN of the sockets that join it (GENL_MCAST_CAP_NET_ADMIN).
 * Before, any user may join any group.
 */
#include <net/genetlink.h>

const struct genl_multicast_group dmaplane_probe[] = {
	{ .name = "probe", .flags = GENL_MCAST_CAP_NET_ADMIN },
};
