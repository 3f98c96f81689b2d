// SPDX-License-Identifier: GPL-2.0
/*
 * A small streaming JSON writer (see json_writer.h).  The writer keeps,
 * per open object or array, whether a value was written yet (for the
 * commas) and, for pretty output, the depth (for the indentation).
 * Misuse (a value without a name in an object, nesting deeper than
 * JSONW_MAX_DEPTH) is a bug in the caller and aborts.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "json_writer.h"

#define JSONW_MAX_DEPTH 16

struct json_writer {
	FILE *f;
	bool pretty;
	int depth;
	bool named;			/* jsonw_name() came before the value */
	bool first[JSONW_MAX_DEPTH];	/* nothing written at this depth yet */
	bool object[JSONW_MAX_DEPTH];	/* the container at this depth is an object */
};

struct json_writer *jsonw_new(FILE *f, bool pretty)
{
	struct json_writer *self = calloc(1, sizeof(*self));

	if (!self)
		return NULL;
	self->f = f;
	self->pretty = pretty;
	self->first[0] = true;
	return self;
}

void jsonw_destroy(struct json_writer **self)
{
	if (!*self)
		return;
	if ((*self)->depth)
		abort();
	fputc('\n', (*self)->f);
	free(*self);
	*self = NULL;
}

static void jsonw_indent(struct json_writer *self)
{
	if (!self->pretty)
		return;
	fputc('\n', self->f);
	for (int i = 0; i < self->depth; i++)
		fputs("    ", self->f);
}

/* Before a name (in an object) or a value (in an array or at the top). */
static void jsonw_sep(struct json_writer *self)
{
	if (!self->first[self->depth])
		fputc(',', self->f);
	if (self->depth)
		jsonw_indent(self);
	self->first[self->depth] = false;
}

/* Before any value. */
static void jsonw_value(struct json_writer *self)
{
	if (self->object[self->depth]) {
		if (!self->named)
			abort();
		self->named = false;
		return;
	}
	jsonw_sep(self);
}

void jsonw_escape(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

void jsonw_name(struct json_writer *self, const char *name)
{
	if (!self->object[self->depth] || self->named)
		abort();
	jsonw_sep(self);
	jsonw_escape(self->f, name);
	fputs(self->pretty ? ": " : ":", self->f);
	self->named = true;
}

static void jsonw_open(struct json_writer *self, char c, bool object)
{
	jsonw_value(self);
	if (self->depth + 1 >= JSONW_MAX_DEPTH)
		abort();
	fputc(c, self->f);
	self->depth++;
	self->first[self->depth] = true;
	self->object[self->depth] = object;
}

static void jsonw_close(struct json_writer *self, char c, bool object)
{
	if (!self->depth || self->object[self->depth] != object || self->named)
		abort();
	self->depth--;
	if (!self->first[self->depth + 1])
		jsonw_indent(self);
	fputc(c, self->f);
}

void jsonw_start_object(struct json_writer *self)
{
	jsonw_open(self, '{', true);
}

void jsonw_end_object(struct json_writer *self)
{
	jsonw_close(self, '}', true);
}

void jsonw_start_array(struct json_writer *self)
{
	jsonw_open(self, '[', false);
}

void jsonw_end_array(struct json_writer *self)
{
	jsonw_close(self, ']', false);
}

void jsonw_string(struct json_writer *self, const char *value)
{
	jsonw_value(self);
	jsonw_escape(self->f, value);
}

void jsonw_u64(struct json_writer *self, uint64_t value)
{
	jsonw_value(self);
	fprintf(self->f, "%" PRIu64, value);
}

void jsonw_bool(struct json_writer *self, bool value)
{
	jsonw_value(self);
	fputs(value ? "true" : "false", self->f);
}

void jsonw_null(struct json_writer *self)
{
	jsonw_value(self);
	fputs("null", self->f);
}

void jsonw_string_field(struct json_writer *self, const char *name, const char *value)
{
	jsonw_name(self, name);
	jsonw_string(self, value);
}

void jsonw_u64_field(struct json_writer *self, const char *name, uint64_t value)
{
	jsonw_name(self, name);
	jsonw_u64(self, value);
}

void jsonw_bool_field(struct json_writer *self, const char *name, bool value)
{
	jsonw_name(self, name);
	jsonw_bool(self, value);
}
