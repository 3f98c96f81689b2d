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
#include <stdio.h>
#include <unistd.h>

#include <jansson.h>

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

/*
 * cred_json - @cred as the mesh names a requester to a peer daemon:
 * {"admin": true} for an administrator of this node, else {"uid", "gid",
 * "groups"} (peer.c: the access model).
 */
json_t *cred_json(const struct dpd_cred *cred)
{
	json_t *o, *groups;
	unsigned int i;

	if (cred_admin(cred))
		return json_pack("{s:b}", "admin", 1);
	groups = json_array();
	if (!groups)
		return NULL;
	for (i = 0; i < cred->ngroups && i < DPD_MAX_GROUPS; i++)
		json_array_append_new(groups, json_integer(cred->groups[i]));
	o = json_pack("{s:I, s:I, s:o}", "uid", (json_int_t)cred->uid,
		      "gid", (json_int_t)cred->gid, "groups", groups);
	return o;
}

/*
 * cred_from_json - the requester a peer daemon names (cred_json()'s form)
 * into @cred.  "admin" is the only way to be an administrator: uid 0 or
 * this daemon's uid named by a peer become nobody's (-2).  Returns 0 or
 * -EINVAL with @msg saying why.
 */
int cred_from_json(json_t *o, struct dpd_cred *cred, char *msg, size_t msglen)
{
	const char *key;
	json_t *v, *g;
	size_t i;

	memset(cred, 0, sizeof(*cred));
	if (!json_is_object(o)) {
		snprintf(msg, msglen, "requester: {\"admin\": true} or {\"uid\", \"gid\", \"groups\"}");
		return -EINVAL;
	}
	cred->uid = cred->gid = (uid_t)-2;
	json_object_foreach(o, key, v) {
		if (!strcmp(key, "admin") && json_is_boolean(v)) {
			cred->token = json_is_true(v);
		} else if ((!strcmp(key, "uid") || !strcmp(key, "gid")) && json_is_integer(v) &&
			   json_integer_value(v) >= 0 && json_integer_value(v) < UINT32_MAX) {
			if (key[0] == 'u')
				cred->uid = (uid_t)json_integer_value(v);
			else
				cred->gid = (gid_t)json_integer_value(v);
		} else if (!strcmp(key, "groups") && json_is_array(v) &&
			   json_array_size(v) <= DPD_MAX_GROUPS) {
			json_array_foreach(v, i, g) {
				if (!json_is_integer(g) || json_integer_value(g) < 0 ||
				    json_integer_value(g) >= UINT32_MAX) {
					snprintf(msg, msglen, "requester: groups: numeric gids");
					return -EINVAL;
				}
				cred->groups[cred->ngroups++] = (gid_t)json_integer_value(g);
			}
		} else {
			snprintf(msg, msglen, "requester: bad or unknown key \"%.64s\"", key);
			return -EINVAL;
		}
	}
	if (!cred->token && (cred->uid == 0 || cred->uid == getuid()))
		cred->uid = (uid_t)-2;
	return 0;
}
