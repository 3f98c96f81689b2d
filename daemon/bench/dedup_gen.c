// SPDX-License-Identifier: GPL-2.0
/*
 * dedup-gen - data for the dedup benchmark (daemon/bench/run.sh).
 *
 *   dedup-gen ckpt PREFIX MIB STEPS [FRACTION]
 *	PREFIX.0 .. PREFIX.STEPS: checkpoints of a model, a JSON header (with
 *	the step number, so it changes every step) and float32 tensors of
 *	normally distributed weights.  From one step to the next, FRACTION
 *	(default 0.10) of the 64 KiB blocks of tensor data take an update
 *	(w += small noise); the rest is bit-identical.
 *   dedup-gen random FILE MIB SEED
 *	MIB MiB of pseudo-random bytes.
 *
 * Deterministic: the same arguments write the same bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (64u << 10)

static uint64_t rng(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static double uniform(uint64_t *s)
{
	return ((rng(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(uint64_t *s)
{
	return sqrt(-2 * log(uniform(s))) * cos(6.283185307179586 * uniform(s));
}

static int write_file(const char *path, const void *hdr, size_t hlen,
		      const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f) {
		perror(path);
		return -1;
	}
	if ((hlen && fwrite(hdr, 1, hlen, f) != hlen) || fwrite(p, 1, len, f) != len ||
	    fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

/* A safetensors-like header: 8-byte length, then JSON naming the tensors. */
static size_t header(char *buf, size_t size, int step, size_t nfloat)
{
	size_t per = nfloat / 8, n;
	int i;

	n = (size_t)snprintf(buf + 8, size - 8, "{\"__metadata__\":{\"step\":\"%d\","
			     "\"optimizer\":\"sgd\"}", step);
	for (i = 0; i < 8; i++)
		n += (size_t)snprintf(buf + 8 + n, size - 8 - n,
				      ",\"layers.%d.weight\":{\"dtype\":\"F32\","
				      "\"shape\":[%zu],\"data_offsets\":[%zu,%zu]}",
				      i, per, i * per * 4, (i + 1) * per * 4);
	n += (size_t)snprintf(buf + 8 + n, size - 8 - n, "}");
	while ((n + 8) % 64)		/* pad to 64 bytes, as safetensors aligns */
		buf[8 + n++] = ' ';
	for (i = 0; i < 8; i++)
		buf[i] = (char)((uint64_t)n >> (8 * i));
	return n + 8;
}

static int ckpt(const char *prefix, size_t mib, int steps, double frac)
{
	size_t len = mib << 20, nfloat = len / 4, nblk = len / BLOCK, b, i;
	float *w = malloc(len);
	uint64_t s = 0x1234567;
	char path[4096], hdr[4096];
	int step;

	if (!w)
		return -1;
	for (i = 0; i < nfloat; i++)
		w[i] = (float)(0.02 * gauss(&s));
	for (step = 0; step <= steps; step++) {
		size_t changed = 0;

		if (step) {
			for (b = 0; b < nblk; b++) {
				float *p = w + b * (BLOCK / 4);

				if (uniform(&s) >= frac)
					continue;
				for (i = 0; i < BLOCK / 4; i++)
					p[i] += (float)(1e-4 * gauss(&s));
				changed++;
			}
		}
		snprintf(path, sizeof(path), "%s.%d", prefix, step);
		if (write_file(path, hdr, header(hdr, sizeof(hdr), step, nfloat), w, len))
			return -1;
		fprintf(stderr, "%s: %zu of %zu blocks of 64 KiB changed\n", path,
			changed, nblk);
	}
	free(w);
	return 0;
}

static int random_file(const char *path, size_t mib, uint64_t seed)
{
	size_t len = mib << 20, i;
	uint64_t *p = malloc(len), s = seed * 0x9e3779b97f4a7c15ULL + 1;
	int ret;

	if (!p)
		return -1;
	for (i = 0; i < len / 8; i++)
		p[i] = rng(&s);
	ret = write_file(path, NULL, 0, p, len);
	free(p);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "ckpt"))
		return ckpt(argv[2], strtoul(argv[3], NULL, 0), atoi(argv[4]),
			    argc > 5 ? atof(argv[5]) : 0.10) ? 1 : 0;
	if (argc == 5 && !strcmp(argv[1], "random"))
		return random_file(argv[2], strtoul(argv[3], NULL, 0),
				   strtoull(argv[4], NULL, 0)) ? 1 : 0;
	fprintf(stderr, "usage: %s ckpt PREFIX MIB STEPS [FRACTION]\n"
		"       %s random FILE MIB SEED\n", argv[0], argv[0]);
	return 2;
}
