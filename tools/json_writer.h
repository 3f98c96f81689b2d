/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small streaming JSON writer for dpctl, in the manner of iproute2's
 * lib/json_writer.c: objects and arrays nest, commas and (with pretty)
 * indentation are placed by the writer, strings are escaped.
 */
#ifndef DP_JSON_WRITER_H
#define DP_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct json_writer;

struct json_writer *jsonw_new(FILE *f, bool pretty);
/* Ends the document with a newline and frees the writer. */
void jsonw_destroy(struct json_writer **self);

void jsonw_start_object(struct json_writer *self);
void jsonw_end_object(struct json_writer *self);
void jsonw_start_array(struct json_writer *self);
void jsonw_end_array(struct json_writer *self);

/* The name of the next value in an object. */
void jsonw_name(struct json_writer *self, const char *name);

void jsonw_string(struct json_writer *self, const char *value);
void jsonw_u64(struct json_writer *self, uint64_t value);
void jsonw_bool(struct json_writer *self, bool value);
void jsonw_null(struct json_writer *self);

/* name + value in one call. */
void jsonw_string_field(struct json_writer *self, const char *name, const char *value);
void jsonw_u64_field(struct json_writer *self, const char *name, uint64_t value);
void jsonw_bool_field(struct json_writer *self, const char *name, bool value);

/* Write @s as a JSON string (quotes included) to @f. */
void jsonw_escape(FILE *f, const char *s);

#endif /* DP_JSON_WRITER_H */
