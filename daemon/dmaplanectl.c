// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplanectl - a tiny client of dmaplaned's attach socket, for scripts
 * and tests (the REST API is plain HTTP: use curl).
 *
 *   dmaplanectl [-a SOCK] attach NAME              size of the arena
 *   dmaplanectl [-a SOCK] fill NAME SEED           attach, write a pattern
 *   dmaplanectl [-a SOCK] verify NAME SEED         attach, compare it
 *   dmaplanectl [-a SOCK] twomaps NAME SEED        attach twice, write
 *                                                  through one mapping,
 *                                                  compare through the other
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client.h"

static const char *sock = "/run/dmaplaned/attach.sock";

/* xorshift64*: the byte pattern of SEED, 8 bytes at a time */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void *map(const char *name, uint64_t *size)
{
	int status = 0, fd = dpd_attach(sock, name, size, &status);
	void *p;

	if (fd < 0) {
		fprintf(stderr, "dmaplanectl: attach %s: %s (status %d)\n", name,
			strerror(-fd), status);
		exit(fd == -EACCES ? 3 : fd == -ENOENT ? 4 : 1);
	}
	p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("dmaplanectl: mmap");
		exit(1);
	}
	return p;
}

/* splitmix64: distinct seeds give distinct, non-zero xorshift states */
static uint64_t first(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z ? z : 1;
}

static void fill(uint64_t *p, uint64_t size, uint64_t seed)
{
	uint64_t s = first(seed), i;

	for (i = 0; i < size / 8; i++)
		p[i] = next(&s);
}

static int verify(const uint64_t *p, uint64_t size, uint64_t seed)
{
	uint64_t s = first(seed), i;

	for (i = 0; i < size / 8; i++) {
		if (p[i] != next(&s)) {
			fprintf(stderr, "dmaplanectl: mismatch at byte %llu\n",
				(unsigned long long)i * 8);
			return 1;
		}
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: dmaplanectl [-a ATTACH-SOCKET] attach|fill|verify|twomaps NAME [SEED]\n"
		"  attach NAME        attach, print the arena's size\n"
		"  fill NAME SEED     write SEED's pseudo-random pattern into the arena\n"
		"  verify NAME SEED   compare the arena with SEED's pattern (exit 1 if not)\n"
		"  twomaps NAME SEED  attach twice: write through one mapping, compare\n"
		"                     through the other\n"
		"exit status: 0 ok, 1 error or mismatch, 2 usage, 3 refused, 4 no such arena\n");
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t size, size2, seed = 0;
	const char *cmd, *name;
	void *p, *q;
	int ret = 0;

	if (argc > 2 && !strcmp(argv[1], "-a")) {
		sock = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 3)
		return usage();
	cmd = argv[1];
	name = argv[2];
	if (argc > 3)
		seed = strtoull(argv[3], NULL, 0);
	else if (strcmp(cmd, "attach"))
		return usage();
	p = map(name, &size);
	if (!strcmp(cmd, "attach")) {
		printf("%llu\n", (unsigned long long)size);
	} else if (!strcmp(cmd, "fill")) {
		fill(p, size, seed);
	} else if (!strcmp(cmd, "verify")) {
		ret = verify(p, size, seed);
	} else if (!strcmp(cmd, "twomaps")) {
		q = map(name, &size2);
		if (q == p || size2 != size) {
			fprintf(stderr, "dmaplanectl: second mapping wrong\n");
			return 1;
		}
		fill(p, size, seed);
		ret = verify(q, size, seed);
		munmap(q, size2);
	} else {
		return usage();
	}
	munmap(p, size);
	return ret;
}
