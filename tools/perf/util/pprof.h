/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_PPROF_H
#define __PERF_PPROF_H

/*
 * A writer of pprof profiles: one profile.proto Profile message, gzipped
 * into a file.  The caller encodes each repeated field of the profile as
 * a message of its own and writes it out at once; the string table,
 * which all of them index, goes last.
 */

#include <stdbool.h>
#include <stddef.h>
#include <zlib.h>
#include <linux/types.h>

struct hashmap;

/* Field numbers of profile.proto's messages */
enum {
	PROFILE_SAMPLE_TYPE	= 1,
	PROFILE_SAMPLE		= 2,
	PROFILE_MAPPING		= 3,
	PROFILE_LOCATION	= 4,
	PROFILE_FUNCTION	= 5,
	PROFILE_STRING_TABLE	= 6,
	PROFILE_TIME_NANOS	= 9,
	PROFILE_DURATION_NANOS	= 10,
	PROFILE_PERIOD_TYPE	= 11,
	PROFILE_PERIOD		= 12,
	PROFILE_COMMENT		= 13,
};

enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };

enum {
	MAPPING_ID		= 1,
	MAPPING_MEMORY_START	= 2,
	MAPPING_MEMORY_LIMIT	= 3,
	MAPPING_FILE_OFFSET	= 4,
	MAPPING_FILENAME	= 5,
	MAPPING_BUILD_ID	= 6,
	MAPPING_HAS_FUNCTIONS	= 7,
};

enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3 };

/* A message being encoded; err is set once an allocation failed */
struct pb_buf {
	u8	*data;
	size_t	len;
	size_t	size;
	bool	err;
};

/* A varint field; 0 is the default, so it is left out */
void pb_u64(struct pb_buf *b, int field, u64 v);
/* A length-delimited field: bytes, a string or an encoded message */
void pb_bytes(struct pb_buf *b, int field, const void *data, size_t len);
/* A packed repeated varint field */
void pb_packed(struct pb_buf *b, int field, const u64 *v, size_t n);

struct pprof_writer {
	/* The string table: strings[i] is string i, "" is 0 */
	struct hashmap	*string_ids;
	char		**strings;
	size_t		nr_strings;
	/* Set once a string could not be added */
	bool		err;
	/* The gzip stream into fd */
	z_stream	zs;
	bool		zs_ready;
	int		fd;
	u8		out[65536];
	/* Bytes written to fd */
	u64		out_size;
};

int pprof_writer__init(struct pprof_writer *w, int fd);
void pprof_writer__exit(struct pprof_writer *w);
/* The index of @s in the string table, added if new; 0 for NULL and on error */
u64 pprof_writer__string(struct pprof_writer *w, const char *s);
/* Writes @msg as field @field of the profile and empties it */
int pprof_writer__write_field(struct pprof_writer *w, int field, struct pb_buf *msg);
/* Writes @top, the string table and the end of the gzip stream */
int pprof_writer__finish(struct pprof_writer *w, struct pb_buf *top);

#endif /* __PERF_PPROF_H */
