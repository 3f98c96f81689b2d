// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplaned's configuration: a JSON file read with jansson.  Unknown keys
 * are errors, so a typo never silently falls back to a default.
 * daemon/dmaplaned.conf.example lists every key.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "dmaplaned.h"

void config_defaults(struct dpd_config *cfg)
{
	char host[256];

	memset(cfg, 0, sizeof(*cfg));
	if (gethostname(host, sizeof(host)) != 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	cfg->node_name = strdup(host);
	cfg->socket_path = strdup(DPD_DEFAULT_SOCKET);
	cfg->attach_path = strdup(DPD_DEFAULT_ATTACH);
	cfg->socket_mode = 0666;
	cfg->device = strdup("/dev/dmaplane");
	cfg->tcp_port = 7070;
	cfg->max_total_bytes = 1ULL << 30;
	cfg->max_arenas = 64;
	cfg->max_moves_per_uid = 16;
	cfg->max_arenas_per_uid = 8;
	cfg->max_bytes_per_uid = 256ULL << 20;
	cfg->max_connections_per_uid = 16;
	cfg->max_streams_per_uid = 4;
	cfg->create_group = -1;
}

void config_free(struct dpd_config *cfg)
{
	free(cfg->node_name);
	free(cfg->socket_path);
	free(cfg->attach_path);
	free(cfg->device);
	free(cfg->tcp_address);
	free(cfg->token_file);
	free(cfg->dpctl);
	if (cfg->token) {
		explicit_bzero(cfg->token, strlen(cfg->token));
		free(cfg->token);
	}
	free(cfg->arenas);
	if (cfg->peers)
		explicit_bzero(cfg->peers, cfg->n_peers * sizeof(*cfg->peers));
	free(cfg->peers);
	memset(cfg, 0, sizeof(*cfg));
}

/* Names of arenas and peers: [A-Za-z0-9._-], 1 to 63, not starting with '.'. */
bool name_valid(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > DPD_NAME_MAX || name[0] == '.')
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

/* "4096", "64K", "2M", "1G" (binary units); 0 and overflow are -EINVAL. */
int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': mul = 1ULL << 10; end++; break;
	case 'M': case 'm': mul = 1ULL << 20; end++; break;
	case 'G': case 'g': mul = 1ULL << 30; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end != '\0' || v == 0 || v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

/* An octal mode string such as "0640"; at most 0777. */
int parse_mode(const char *s, unsigned int *out)
{
	unsigned long v;
	char *end;

	if (!s || !*s || strlen(s) > 4)
		return -EINVAL;
	for (end = (char *)s; *end; end++)
		if (*end < '0' || *end > '7')
			return -EINVAL;
	v = strtoul(s, &end, 8);
	if (v > 0777)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

/* A size given as a JSON integer or a string with a unit. */
static int json_size(json_t *v, uint64_t *out)
{
	if (json_is_integer(v)) {
		if (json_integer_value(v) <= 0)
			return -EINVAL;
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v))
		return parse_size(json_string_value(v), out);
	return -EINVAL;
}

static int json_id(json_t *v, unsigned int *out)
{
	json_int_t i;

	if (!json_is_integer(v))
		return -EINVAL;
	i = json_integer_value(v);
	if (i < 0 || i >= (json_int_t)UINT_MAX)
		return -EINVAL;
	*out = (unsigned int)i;
	return 0;
}

static int set_str(char **dst, json_t *v)
{
	char *s;

	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) > PATH_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return -EINVAL;
	s = strdup(json_string_value(v));
	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -EINVAL; } while (0)

/*
 * arena_spec_from_json - an arena description as in the config file and
 * in POST /v1/arenas: name, size, and optional owner, group, mode,
 * huge_only.  Fields not given keep what @spec holds.
 */
int arena_spec_from_json(json_t *o, struct dpd_arena_spec *spec,
			 char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	unsigned int id;

	if (!json_is_object(o))
		ERR("an arena is a JSON object");
	json_object_foreach(o, key, v) {
		if (!strcmp(key, "name")) {
			if (!json_is_string(v) ||
			    json_string_length(v) != strlen(json_string_value(v)) ||
			    !name_valid(json_string_value(v)))
				ERR("name: 1 to %d of [A-Za-z0-9._-], not starting with '.'",
				    DPD_NAME_MAX);
			strcpy(spec->name, json_string_value(v));
		} else if (!strcmp(key, "size")) {
			if (json_size(v, &spec->size) || spec->size % 4096)
				ERR("size: a positive multiple of 4096 (integer, or a string such as \"64M\")");
		} else if (!strcmp(key, "owner")) {
			if (json_id(v, &id))
				ERR("owner: a numeric uid");
			spec->owner = id;
		} else if (!strcmp(key, "group")) {
			if (json_id(v, &id))
				ERR("group: a numeric gid");
			spec->group = id;
		} else if (!strcmp(key, "mode")) {
			if (!json_is_string(v) ||
			    parse_mode(json_string_value(v), &spec->mode))
				ERR("mode: an octal string such as \"0640\"");
		} else if (!strcmp(key, "huge_only")) {
			if (!json_is_boolean(v))
				ERR("huge_only: true or false");
			spec->huge_only = json_is_true(v);
		} else {
			ERR("unknown arena key \"%.64s\"", key);
		}
	}
	if (!spec->name[0])
		ERR("an arena needs a name");
	if (!spec->size)
		ERR("arena %s needs a size", spec->name);
	return 0;
}

static int load_arenas(struct dpd_config *cfg, json_t *a, char *err, size_t errlen)
{
	size_t i, j;
	json_t *v;
	int ret;

	if (!json_is_array(a))
		ERR("arenas: a list of objects");
	cfg->arenas = calloc(json_array_size(a) + 1, sizeof(*cfg->arenas));
	if (!cfg->arenas)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		struct dpd_arena_spec *s = &cfg->arenas[i];

		s->owner = 0;
		s->group = 0;
		s->mode = 0600;
		ret = arena_spec_from_json(v, s, err, errlen);
		if (ret)
			return ret;
		for (j = 0; j < i; j++)
			if (!strcmp(cfg->arenas[j].name, s->name))
				ERR("arena %s given twice", s->name);
		cfg->n_arenas++;
	}
	return 0;
}

static int load_peers(struct dpd_config *cfg, json_t *a, char *err, size_t errlen)
{
	const char *key;
	size_t i;
	json_t *v, *f;

	if (!json_is_array(a))
		ERR("peers: a list of objects");
	cfg->peers = calloc(json_array_size(a) + 1, sizeof(*cfg->peers));
	if (!cfg->peers)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		struct dpd_peer *p = &cfg->peers[i];

		if (!json_is_object(v))
			ERR("a peer is an object {\"name\": ..., \"address\": ...}");
		json_object_foreach(v, key, f) {
			const char *s = json_string_value(f);
			size_t max = strcmp(key, "token_file") ? DPD_NAME_MAX : DPD_PATH_MAX;

			if (!s || strlen(s) != json_string_length(f) || strlen(s) > max || !*s)
				ERR("peer %s: a string of 1 to %zu characters", key, max);
			if (!strcmp(key, "token_file"))
				strcpy(p->token_file, s);
			else if (!strcmp(key, "name") && name_valid(s))
				strcpy(p->name, s);
			else if (!strcmp(key, "address"))
				strcpy(p->address, s);
			else if (!strcmp(key, "fabric_address"))
				strcpy(p->fabric_address, s);
			else
				ERR("peer: unknown key or bad name \"%.64s\"", key);
		}
		if (!p->name[0] || !p->address[0])
			ERR("a peer needs a name and an address");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(cfg->peers[j].name, p->name))
				ERR("peer %s given twice", p->name);
		cfg->n_peers++;
	}
	return 0;
}

/*
 * config_load - read @path into @cfg (which holds the defaults).
 * Returns 0, -ENOENT (no such file), -EINVAL (with @err saying why).
 */
int config_load(struct dpd_config *cfg, const char *path, char *err, size_t errlen)
{
	json_error_t jerr;
	const char *key;
	json_t *root, *v;
	unsigned int id;
	int ret = 0;

	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (access(path, R_OK) != 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return ret;
		}
		snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line,
			 jerr.column, jerr.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "%s: the configuration is a JSON object", path);
		ret = -EINVAL;
		goto out;
	}
	json_object_foreach(root, key, v) {
		if (!strcmp(key, "node_name"))
			ret = set_str(&cfg->node_name, v);
		else if (!strcmp(key, "socket"))
			ret = set_str(&cfg->socket_path, v);
		else if (!strcmp(key, "attach_socket"))
			ret = set_str(&cfg->attach_path, v);
		else if (!strcmp(key, "socket_mode"))
			ret = json_is_string(v) ?
				parse_mode(json_string_value(v), &cfg->socket_mode) :
				-EINVAL;
		else if (!strcmp(key, "device"))
			ret = set_str(&cfg->device, v);
		else if (!strcmp(key, "tcp_address"))
			ret = set_str(&cfg->tcp_address, v);
		else if (!strcmp(key, "tcp_port"))
			ret = json_id(v, &cfg->tcp_port) ?:
				(cfg->tcp_port == 0 || cfg->tcp_port > 65535 ?
				 -EINVAL : 0);
		else if (!strcmp(key, "token_file"))
			ret = set_str(&cfg->token_file, v);
		else if (!strcmp(key, "dpctl"))
			ret = set_str(&cfg->dpctl, v);
		else if (!strcmp(key, "max_total_bytes"))
			ret = json_size(v, &cfg->max_total_bytes);
		else if (!strcmp(key, "max_arenas"))
			ret = json_id(v, &cfg->max_arenas);
		else if (!strcmp(key, "max_moves_per_uid"))
			ret = json_id(v, &cfg->max_moves_per_uid);
		else if (!strcmp(key, "max_arenas_per_uid"))
			ret = json_id(v, &cfg->max_arenas_per_uid);
		else if (!strcmp(key, "max_bytes_per_uid"))	/* 0: no limit */
			ret = json_is_integer(v) && !json_integer_value(v) ?
				(cfg->max_bytes_per_uid = 0, 0) :
				json_size(v, &cfg->max_bytes_per_uid);
		else if (!strcmp(key, "max_connections_per_uid"))
			ret = json_id(v, &cfg->max_connections_per_uid);
		else if (!strcmp(key, "max_streams_per_uid"))
			ret = json_id(v, &cfg->max_streams_per_uid);
		else if (!strcmp(key, "create_group"))
			ret = json_id(v, &id) ?: (cfg->create_group = id, 0);
		else if (!strcmp(key, "arenas"))
			ret = load_arenas(cfg, v, err, errlen);
		else if (!strcmp(key, "peers"))
			ret = load_peers(cfg, v, err, errlen);
		else {
			snprintf(err, errlen, "%s: unknown key \"%.64s\"", path, key);
			ret = -EINVAL;
			goto out;
		}
		if (ret) {
			if (strcmp(key, "arenas") && strcmp(key, "peers"))
				snprintf(err, errlen, "%s: bad value for \"%s\"", path, key);
			goto out;
		}
	}
	if (!name_valid(cfg->node_name)) {
		snprintf(err, errlen, "%s: node_name: 1 to %d of [A-Za-z0-9._-]",
			 path, DPD_NAME_MAX);
		ret = -EINVAL;
	} else if (cfg->tcp_address && !cfg->token_file) {
		snprintf(err, errlen, "%s: tcp_address needs a token_file", path);
		ret = -EINVAL;
	} else if (!cfg->token_file) {
		for (size_t i = 0; i < cfg->n_peers && !ret; i++)
			if (!cfg->peers[i].token_file[0]) {
				snprintf(err, errlen, "%s: peer %s needs a token_file of its own or the mesh's",
					 path, cfg->peers[i].name);
				ret = -EINVAL;
			}
	}
out:
	json_decref(root);
	return ret;
}

/*
 * read_token - the token in @path's first line (at least 16 printable
 * characters; the file not accessible to group or others) into @buf.
 */
static int read_token(const char *path, char *buf, size_t buflen, char *err,
		      size_t errlen)
{
	char line[512];
	struct stat st;
	size_t n;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fileno(f), &st) || (st.st_mode & 0077)) {
		snprintf(err, errlen, "%s: the token file must not be accessible to group or others (chmod 0600)",
			 path);
		fclose(f);
		return -EPERM;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	n = strcspn(line, "\r\n");
	line[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isgraph((unsigned char)line[i]))
			n = 0;
	if (n < 16 || n >= buflen) {
		snprintf(err, errlen, "%s: the token is one line of 16 to %zu printable characters",
			 path, buflen - 1);
		explicit_bzero(line, sizeof(line));
		return -EINVAL;
	}
	memcpy(buf, line, n + 1);
	explicit_bzero(line, sizeof(line));
	return 0;
}

/*
 * config_read_token - read the API token (first line of token_file, at
 * least 16 characters, printable; the file must not be readable by
 * others) and each peer's own token (its token_file, the same rules).
 */
int config_read_token(struct dpd_config *cfg, char *err, size_t errlen)
{
	char buf[DPD_TOKEN_MAX + 1];
	size_t i;
	int ret;

	for (i = 0; i < cfg->n_peers; i++) {
		if (!cfg->peers[i].token_file[0])
			continue;
		ret = read_token(cfg->peers[i].token_file, cfg->peers[i].token,
				 sizeof(cfg->peers[i].token), err, errlen);
		if (ret)
			return ret;
	}
	if (!cfg->token_file)
		return 0;
	ret = read_token(cfg->token_file, buf, sizeof(buf), err, errlen);
	if (ret)
		return ret;
	cfg->token = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return cfg->token ? 0 : -ENOMEM;
}
