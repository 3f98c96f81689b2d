// SPDX-License-Identifier: GPL-2.0
/*
 * dpctl's JSON writer (tools/json_writer.c) on the host: commas, nesting,
 * pretty indentation and the escaping of every character JSON requires
 * escaped.
 */
#include <stdlib.h>
#include <string.h>

#include "../../tools/json_writer.c"

#include "kselftest_harness.h"

/* Run @fn with a writer on a memory stream; the text it wrote. */
static char *written(bool pretty, void (*fn)(struct json_writer *jw))
{
	struct json_writer *jw;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	jw = jsonw_new(f, pretty);
	if (!jw) {
		fclose(f);
		return NULL;
	}
	fn(jw);
	jsonw_destroy(&jw);
	fclose(f);
	return buf;
}

static void doc_nested(struct json_writer *jw)
{
	jsonw_start_object(jw);
	jsonw_u64_field(jw, "a", 1);
	jsonw_name(jw, "list");
	jsonw_start_array(jw);
	jsonw_u64(jw, 18446744073709551615ULL);
	jsonw_start_object(jw);
	jsonw_bool_field(jw, "t", true);
	jsonw_end_object(jw);
	jsonw_null(jw);
	jsonw_end_array(jw);
	jsonw_name(jw, "empty");
	jsonw_start_object(jw);
	jsonw_end_object(jw);
	jsonw_end_object(jw);
}

TEST(commas_and_nesting)
{
	char *s = written(false, doc_nested);

	ASSERT_NE(NULL, s);
	EXPECT_STREQ("{\"a\":1,\"list\":[18446744073709551615,{\"t\":true},null],"
		     "\"empty\":{}}\n", s);
	free(s);
}

TEST(pretty_indents)
{
	char *s = written(true, doc_nested);

	ASSERT_NE(NULL, s);
	EXPECT_STREQ("{\n    \"a\": 1,\n    \"list\": [\n        18446744073709551615,\n"
		     "        {\n            \"t\": true\n        },\n        null\n    ],\n"
		     "    \"empty\": {}\n}\n", s);
	free(s);
}

static void doc_escapes(struct json_writer *jw)
{
	jsonw_start_object(jw);
	jsonw_string_field(jw, "q\"b\\", "a\"b\\c/\b\f\n\r\t\x01\x1f\x7f é");
	jsonw_end_object(jw);
}

TEST(strings_are_escaped)
{
	char *s = written(false, doc_escapes);

	ASSERT_NE(NULL, s);
	EXPECT_STREQ("{\"q\\\"b\\\\\":\"a\\\"b\\\\c/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f é\"}\n",
		     s);
	free(s);
}

static void doc_empty_string(struct json_writer *jw)
{
	jsonw_start_array(jw);
	jsonw_string(jw, "");
	jsonw_end_array(jw);
}

TEST(empty_string)
{
	char *s = written(false, doc_empty_string);

	ASSERT_NE(NULL, s);
	EXPECT_STREQ("[\"\"]\n", s);
	free(s);
}

TEST_HARNESS_MAIN
