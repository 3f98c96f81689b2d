// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplaned - the dmaplane arena service: options, logging, sockets,
 * start-up and shutdown.  See usage() and README's "Arena service".
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "dmaplaned.h"

int dpd_verbose;
static bool journal;

void dpd_log(const char *level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int prio = !strcmp(level, "error") ? 3 : !strcmp(level, "warning") ? 4 : 6;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Under systemd, "<N>" gives the journal the priority. */
	if (journal)
		fprintf(stderr, "<%d>%s\n", prio, buf);
	else
		fprintf(stderr, "dmaplaned: %s: %s\n", level, buf);
}

/*
 * unix_listen - listen on a UNIX stream socket at @path with @mode.  A
 * stale socket file is replaced; one a live daemon answers on is not
 * (-EADDRINUSE).  The parent directory is created (0755) if missing.
 */
int unix_listen(const char *path, unsigned int mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	struct stat st;
	char *slash;
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			ret = -EEXIST;
			goto err;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			ret = -EADDRINUSE;
			goto err;
		}
		close(fd);
		unlink(path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(path, mode) || listen(fd, 64)) {
		ret = -errno;
		goto err;
	}
	return fd;
err:
	close(fd);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: dmaplaned [OPTION]...\n"
"The dmaplane arena service: owns named dmaplane arenas (pinned kernel\n"
"memory, /dev/dmaplane), serves a REST API (JSON over HTTP) on a UNIX\n"
"socket, and hands arenas to local programs as dma-buf file descriptors.\n"
"\n"
"  -c, --config FILE       configuration (JSON; default " DPD_DEFAULT_CONFIG
"\n"
"                          when it exists; see dmaplaned.conf.example)\n"
"  -s, --socket PATH       REST API socket (default " DPD_DEFAULT_SOCKET ")\n"
"  -a, --attach-socket PATH\n"
"                          attach socket: \"ATTACH <name>\\n\" is answered\n"
"                          with \"OK <size>\\n\" and the arena's dma-buf fd\n"
"                          (SCM_RIGHTS) (default " DPD_DEFAULT_ATTACH ")\n"
"  -d, --device PATH       dmaplane device (default /dev/dmaplane)\n"
"  -n, --node-name NAME    this node's name in the API (default: hostname)\n"
"      --no-device         run without the module: the API answers, but\n"
"                          creating and attaching arenas fail (503); for\n"
"                          testing the API layer only\n"
"      --check-config      read the configuration, report errors, exit\n"
"  -v, --verbose           log every request outcome\n"
"  -h, --help              this text\n"
"  -V, --version           the version\n"
"\n"
"Nothing listens on the network unless the configuration has tcp_address\n"
"(then every request needs \"Authorization: Bearer <token>\", the first line\n"
"of token_file).  On the UNIX socket the peer's uid/gid (SO_PEERCRED) decide:\n"
"arenas have an owner, a group and a mode like files (r: see, w: attach);\n"
"root and the daemon's uid may do everything; creating arenas needs root,\n"
"the daemon's uid or the configured create_group.\n"
"\n"
"Endpoints: GET /v1/node, GET|POST /v1/arenas, GET|DELETE /v1/arenas/NAME,\n"
"GET /v1/arenas/NAME/stats, GET /v1/arenas/NAME/xxh128?offset=N&length=N,\n"
"GET|POST /v1/moves (between an arena of this node and one of this node or\n"
"of a peer's, either way), GET|DELETE\n"
"/v1/moves/ID (DELETE cancels), GET|POST /v1/peers, GET|DELETE /v1/peers/NAME,\n"
"GET /v1/nodes, GET /v1/nodes/NAME, GET /v1/nodes/NAME/arenas, GET|DELETE\n"
"/v1/nodes/NAME/moves/ID (a move relayed to NAME), GET /v1/events\n"
"(server-sent events); between daemons: GET /v1/mesh/info, POST\n"
"/v1/mesh/grants, DELETE /v1/mesh/grants/ID, POST /v1/mesh/moves[/ID],\n"
"POST /v1/mesh/dedup[/copy].  OpenAPI: daemon/openapi.yaml.\n"
"\n"
"The mesh: the configuration's peers (name, address of the peer daemon's TCP\n"
"listener, fabric_address for the module's peer add) or POST /v1/peers.\n"
"The daemons of a mesh share one token (token_file), or each pair has one\n"
"of its own (the peer's token_file: good for that node's mesh requests\n"
"only), and heartbeat each other every 3 s; a peer that does not answer is\n"
"down (event peer.down).\n"
"SIGTERM or SIGINT: stop, destroying the daemon's arenas (programs that\n"
"attached keep their mappings until they unmap and close them).\n"
"Logs go to standard error (the journal under systemd).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "attach-socket", required_argument, NULL, 'a' },
		{ "device", required_argument, NULL, 'd' },
		{ "node-name", required_argument, NULL, 'n' },
		{ "no-device", no_argument, NULL, 'N' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *sock = NULL, *attach = NULL, *dev = NULL;
	const char *node = NULL;
	bool no_device = false, check = false;
	struct dpd_config cfg;
	char err[512] = "";
	sigset_t set;
	size_t i;
	int c, ret, sig, status = 1;

	journal = getenv("JOURNAL_STREAM") != NULL;
	while ((c = getopt_long(argc, argv, "c:s:a:d:n:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 's': sock = optarg; break;
		case 'a': attach = optarg; break;
		case 'd': dev = optarg; break;
		case 'n': node = optarg; break;
		case 'N': no_device = true; break;
		case 'C': check = true; break;
		case 'v': dpd_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("dmaplaned %s\n", DPD_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "dmaplaned: unexpected argument %s\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	config_defaults(&cfg);
	if (!cfg.node_name || !cfg.socket_path || !cfg.attach_path || !cfg.device) {
		log_err("out of memory");
		return 1;
	}
	ret = config_load(&cfg, config ? config : DPD_DEFAULT_CONFIG, err, sizeof(err));
	if (ret && !(ret == -ENOENT && !config)) {
		log_err("%s", err);
		goto out;
	}
#define OVERRIDE(field, val) do { if (val) { free(cfg.field); cfg.field = strdup(val); \
	if (!cfg.field) goto out; } } while (0)
	OVERRIDE(socket_path, sock);
	OVERRIDE(attach_path, attach);
	OVERRIDE(device, dev);
	OVERRIDE(node_name, node);
	if (!name_valid(cfg.node_name)) {
		log_err("node name: 1 to %d of [A-Za-z0-9._-]", DPD_NAME_MAX);
		goto out;
	}
	ret = config_read_token(&cfg, err, sizeof(err));
	if (ret) {
		log_err("%s", err);
		goto out;
	}
	if (check) {
		printf("configuration ok: node %s, socket %s, attach socket %s, %s, "
		       "%zu arenas, %zu peers\n", cfg.node_name, cfg.socket_path,
		       cfg.attach_path, cfg.tcp_address ? "tcp with token" : "no tcp",
		       cfg.n_arenas, cfg.n_peers);
		status = 0;
		goto out;
	}

	/* Every thread inherits this mask; main() takes the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	ret = arenas_init(no_device ? NULL : cfg.device, &cfg);
	if (ret) {
		log_err("%s: %s%s", cfg.device, strerror(-ret),
			ret == -ENOENT ? " (is the dmaplane module loaded?)" : "");
		goto out;
	}
	if (no_device)
		log_warn("running without a device (--no-device): arenas cannot be created");
	for (i = 0; i < cfg.n_arenas; i++) {
		ret = arena_create(&cfg.arenas[i], false);
		if (ret) {
			log_err("arena %s (%llu bytes): %s", cfg.arenas[i].name,
				(unsigned long long)cfg.arenas[i].size, strerror(-ret));
			goto stop;
		}
	}
	if (moves_start(&cfg) || attach_start(&cfg) || peers_start(&cfg) ||
	    http_start(&cfg))
		goto stop;
	log_info("dmaplaned %s on node %s: ready", DPD_VERSION, cfg.node_name);

	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (sig == SIGHUP) {
			log_info("SIGHUP: reloading is not supported; restart to reconfigure");
			continue;
		}
		log_info("signal %d: shutting down", sig);
		break;
	}
	status = 0;
stop:
	events_stop();
	http_stop();
	attach_stop();
	moves_stop();
	peers_stop();
	arenas_fini();
	events_free();
	if (status == 0)
		log_info("stopped");
out:
	config_free(&cfg);
	return status;
}
