// SPDX-License-Identifier: GPL-2.0
/*
 * A writer of pprof profiles (profile.proto, gzipped): the protobuf
 * encoding of the fields perf writes, the gzip stream and the string
 * table.
 */

#include "pprof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <internal/lib.h>

#include "linux/compiler.h"
#include "linux/err.h"
#include "linux/zalloc.h"
#include "util/hashmap.h"
#include "util/util.h"

/* Wire types */
enum {
	PB_VARINT	= 0,
	PB_LEN		= 2,
};

static void pb_reserve(struct pb_buf *b, size_t more)
{
	size_t size;
	u8 *data;

	if (b->err || b->len + more <= b->size)
		return;
	size = b->size ? b->size : 256;
	while (size < b->len + more)
		size *= 2;
	data = realloc(b->data, size);
	if (!data) {
		b->err = true;
		return;
	}
	b->data = data;
	b->size = size;
}

static size_t pb_varint_len(u64 v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void pb_varint(struct pb_buf *b, u64 v)
{
	pb_reserve(b, 10);
	if (b->err)
		return;
	while (v >= 0x80) {
		b->data[b->len++] = (v & 0x7f) | 0x80;
		v >>= 7;
	}
	b->data[b->len++] = v;
}

static void pb_key(struct pb_buf *b, int field, int wire)
{
	pb_varint(b, (u64)field << 3 | wire);
}

void pb_u64(struct pb_buf *b, int field, u64 v)
{
	if (!v)
		return;
	pb_key(b, field, PB_VARINT);
	pb_varint(b, v);
}

void pb_bytes(struct pb_buf *b, int field, const void *data, size_t len)
{
	pb_key(b, field, PB_LEN);
	pb_varint(b, len);
	pb_reserve(b, len);
	if (b->err)
		return;
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

void pb_packed(struct pb_buf *b, int field, const u64 *v, size_t n)
{
	size_t i, len = 0;

	if (!n)
		return;
	for (i = 0; i < n; i++)
		len += pb_varint_len(v[i]);
	pb_key(b, field, PB_LEN);
	pb_varint(b, len);
	for (i = 0; i < n; i++)
		pb_varint(b, v[i]);
}

/* Compresses @len bytes of @data into the output file */
static int pprof_writer__deflate(struct pprof_writer *w, const void *data, size_t len,
				 int flush)
{
	ssize_t n;
	int ret;

	w->zs.next_in = (Bytef *)data;
	w->zs.avail_in = len;
	do {
		w->zs.next_out = w->out;
		w->zs.avail_out = sizeof(w->out);
		ret = deflate(&w->zs, flush);
		if (ret == Z_STREAM_ERROR)
			return -EINVAL;
		n = sizeof(w->out) - w->zs.avail_out;
		if (n && writen(w->fd, w->out, n) != n)
			return -errno;
		w->out_size += n;
	} while (w->zs.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
	return 0;
}

int pprof_writer__write_field(struct pprof_writer *w, int field, struct pb_buf *msg)
{
	struct pb_buf head = { .len = 0 };
	int ret;

	pb_key(&head, field, PB_LEN);
	pb_varint(&head, msg->len);
	if (head.err || msg->err) {
		free(head.data);
		return -ENOMEM;
	}
	ret = pprof_writer__deflate(w, head.data, head.len, Z_NO_FLUSH);
	free(head.data);
	if (!ret)
		ret = pprof_writer__deflate(w, msg->data, msg->len, Z_NO_FLUSH);
	msg->len = 0;
	return ret;
}

int pprof_writer__finish(struct pprof_writer *w, struct pb_buf *top)
{
	size_t i;

	for (i = 0; i < w->nr_strings; i++)
		pb_bytes(top, PROFILE_STRING_TABLE, w->strings[i], strlen(w->strings[i]));
	if (top->err || w->err)
		return -ENOMEM;
	return pprof_writer__deflate(w, top->data, top->len, Z_FINISH);
}

static size_t str_hash_fn(long key, void *ctx __maybe_unused)
{
	return str_hash((const char *)key);
}

static bool str_equal_fn(long key1, long key2, void *ctx __maybe_unused)
{
	return !strcmp((const char *)key1, (const char *)key2);
}

u64 pprof_writer__string(struct pprof_writer *w, const char *s)
{
	char **strings;
	long id;
	char *dup;

	if (!s || !*s)
		return 0;
	if (hashmap__find(w->string_ids, s, &id))
		return id;
	strings = realloc(w->strings, (w->nr_strings + 1) * sizeof(*strings));
	dup = strdup(s);
	if (!strings || !dup) {
		if (strings)
			w->strings = strings;
		free(dup);
		w->err = true;
		return 0;
	}
	w->strings = strings;
	id = w->nr_strings;
	if (hashmap__add(w->string_ids, dup, id)) {
		free(dup);
		w->err = true;
		return 0;
	}
	w->strings[w->nr_strings++] = dup;
	return id;
}

int pprof_writer__init(struct pprof_writer *w, int fd)
{
	w->fd = fd;
	w->string_ids = hashmap__new(str_hash_fn, str_equal_fn, NULL);
	if (IS_ERR(w->string_ids)) {
		w->string_ids = NULL;
		return -ENOMEM;
	}
	/* String 0 is "" */
	w->strings = calloc(1, sizeof(*w->strings));
	if (!w->strings)
		return -ENOMEM;
	w->strings[0] = strdup("");
	if (!w->strings[0])
		return -ENOMEM;
	w->nr_strings = 1;
	/* windowBits 15 + 16: a gzip header and trailer */
	if (deflateInit2(&w->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	w->zs_ready = true;
	return 0;
}

void pprof_writer__exit(struct pprof_writer *w)
{
	size_t i;

	if (w->zs_ready)
		deflateEnd(&w->zs);
	w->zs_ready = false;
	hashmap__free(w->string_ids);
	w->string_ids = NULL;
	for (i = 0; i < w->nr_strings; i++)
		free(w->strings[i]);
	zfree(&w->strings);
	w->nr_strings = 0;
}
