// SPDX-License-Identifier: GPL-2.0
/*
 * Who is asking, and may they: credentials of a UNIX socket's peer
 * (SO_PEERCRED, SO_PEERGROUPS) and file-like permission bits on arenas.
 *
 * An arena has an owner uid, a group gid and a mode (0640 ...).  As for
 * files, the owner's bits apply to its owner, the group's bits to members
 * of the group (primary or supplementary), the others' to the rest.
 * r: see the arena (list, get, stats, its events); w: attach it (the
 * dma-buf mapping is read-write, so attaching needs w and r).  Root, the
 * daemon's own uid and TCP clients with the API token may do everything.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dmaplaned.h"

int cred_from_socket(int fd, struct dpd_cred *cred)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	gid_t groups[DPD_MAX_GROUPS];

	memset(cred, 0, sizeof(*cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0)
		return -errno;
	if (len != sizeof(uc))
		return -EPROTO;
	cred->uid = uc.uid;
	cred->gid = uc.gid;
	/* More groups than DPD_MAX_GROUPS: only the primary group counts. */
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0 &&
	    len <= sizeof(groups)) {
		cred->ngroups = len / sizeof(gid_t);
		memcpy(cred->groups, groups, cred->ngroups * sizeof(gid_t));
	}
	return 0;
}

bool cred_admin(const struct dpd_cred *cred)
{
	return cred->token || cred->uid == 0 || cred->uid == getuid();
}

bool cred_in_group(const struct dpd_cred *cred, gid_t gid)
{
	unsigned int i;

	if (cred->gid == gid)
		return true;
	for (i = 0; i < cred->ngroups && i < DPD_MAX_GROUPS; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

/* cred_may - may @cred do @perm (DPD_PERM_* bits) to an object? */
bool cred_may(const struct dpd_cred *cred, uid_t owner, gid_t group,
	      unsigned int mode, unsigned int perm)
{
	unsigned int bits;

	if (cred_admin(cred))
		return true;
	if (cred->uid == owner)
		bits = (mode >> 6) & 7;
	else if (cred_in_group(cred, group))
		bits = (mode >> 3) & 7;
	else
		bits = mode & 7;
	return (bits & perm) == perm;
}
