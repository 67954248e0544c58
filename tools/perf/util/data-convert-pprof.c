// SPDX-License-Identifier: GPL-2.0
/*
 * pprof export: a gzipped profile.proto message (the format of Go's pprof
 * and of the profiling backends that take it).
 *
 * Every frame is a location in a mapping.  A mapping is a perf map: its
 * start, end and page offset, the file's name and build-ID, so a backend
 * finds the file offset of an address as address - memory_start +
 * file_offset and symbolises it by build-ID (the files of a
 * --buildid-offset recording come from its build-ID offset records, which
 * the session joins with the samples).  Function names are perf's, where
 * perf could symbolise.  Samples with the same stack, pid and comm add up.
 */

#include "data-convert.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linux/compiler.h"
#include "linux/err.h"
#include "linux/string.h"
#include "linux/zalloc.h"
#include "util/build-id.h"
#include "util/callchain.h"
#include "util/debug.h"
#include "util/dso.h"
#include "util/env.h"
#include "util/event.h"
#include "util/evlist.h"
#include "util/evsel.h"
#include "util/hashmap.h"
#include "util/machine.h"
#include "util/map.h"
#include "util/pprof.h"
#include "util/session.h"
#include "util/symbol.h"
#include "util/thread.h"
#include "util/tool.h"
#include "util/util.h"

struct pprof_mapping {
	u64		id;
	u64		start;
	u64		end;
	u64		pgoff;
	struct dso	*dso;
	/* Its locations without a function name */
	u64		nr_unnamed;
};

struct pprof_location {
	u64	id;
	u64	mapping_id;
	u64	address;
	u64	function_id;
};

struct pprof_function {
	u64		id;
	struct dso	*dso;
	struct symbol	*sym;
	u64		name;
};

struct pprof_sample {
	u64	pid;
	u64	comm;
	u32	nr;
	u64	*values;
	u64	ids[];
};

struct convert_pprof {
	struct perf_tool	tool;
	struct perf_session	*session;
	struct pprof_writer	w;
	struct hashmap		*mappings;
	struct hashmap		*locations;
	struct hashmap		*functions;
	struct hashmap		*samples;
	u64			nr_mappings;
	u64			nr_locations;
	u64			nr_functions;
	/* The label keys */
	u64			str_pid;
	u64			str_comm;
	/* Values per sample: the count, then the period of each event */
	int			nr_values;
	u64			*evsel_samples;
	/* The stack of the sample being converted */
	u64			*stack;
	u32			stack_size;
	int			max_stack;
	u64			first_time;
	u64			last_time;
	u64			nr_samples;
	u64			nr_unresolved;
	/* Set once an allocation failed */
	bool			err;
};

/* The index of @s in the profile's string table; 0 on error */
static u64 pprof__string(struct convert_pprof *c, const char *s)
{
	return pprof_writer__string(&c->w, s);
}

static size_t mapping_hash(long key, void *ctx __maybe_unused)
{
	const struct pprof_mapping *m = (const struct pprof_mapping *)key;

	return (m->start * 31 + m->end) * 31 + m->pgoff + (uintptr_t)m->dso;
}

static bool mapping_equal(long key1, long key2, void *ctx __maybe_unused)
{
	const struct pprof_mapping *a = (const struct pprof_mapping *)key1;
	const struct pprof_mapping *b = (const struct pprof_mapping *)key2;

	return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
	       a->dso == b->dso;
}

static size_t location_hash(long key, void *ctx __maybe_unused)
{
	const struct pprof_location *l = (const struct pprof_location *)key;

	return l->mapping_id * 31 + l->address;
}

static bool location_equal(long key1, long key2, void *ctx __maybe_unused)
{
	const struct pprof_location *a = (const struct pprof_location *)key1;
	const struct pprof_location *b = (const struct pprof_location *)key2;

	return a->mapping_id == b->mapping_id && a->address == b->address;
}

static size_t function_hash(long key, void *ctx __maybe_unused)
{
	const struct pprof_function *f = (const struct pprof_function *)key;

	return (uintptr_t)f->dso * 31 + (uintptr_t)f->sym;
}

static bool function_equal(long key1, long key2, void *ctx __maybe_unused)
{
	const struct pprof_function *a = (const struct pprof_function *)key1;
	const struct pprof_function *b = (const struct pprof_function *)key2;

	return a->dso == b->dso && a->sym == b->sym;
}

static size_t sample_hash(long key, void *ctx __maybe_unused)
{
	const struct pprof_sample *s = (const struct pprof_sample *)key;
	size_t h = s->pid * 31 + s->comm;
	u32 i;

	for (i = 0; i < s->nr; i++)
		h = h * 31 + s->ids[i];
	return h;
}

static bool sample_equal(long key1, long key2, void *ctx __maybe_unused)
{
	const struct pprof_sample *a = (const struct pprof_sample *)key1;
	const struct pprof_sample *b = (const struct pprof_sample *)key2;

	return a->pid == b->pid && a->comm == b->comm && a->nr == b->nr &&
	       !memcmp(a->ids, b->ids, a->nr * sizeof(a->ids[0]));
}

/* The mapping of @map, added if new; 0 on error */
static struct pprof_mapping *pprof__mapping(struct convert_pprof *c, struct map *map)
{
	struct pprof_mapping key = {
		.start	= map__start(map),
		.end	= map__end(map),
		.pgoff	= map__pgoff(map),
		.dso	= map__dso(map),
	};
	struct pprof_mapping *m;

	if (hashmap__find(c->mappings, &key, &m))
		return m;
	m = memdup(&key, sizeof(key));
	if (!m) {
		c->err = true;
		return NULL;
	}
	/* Functions point into the DSO: it stays while the profile does */
	m->dso = dso__get(key.dso);
	m->id = ++c->nr_mappings;
	if (hashmap__add(c->mappings, m, m)) {
		dso__put(m->dso);
		free(m);
		c->err = true;
		return NULL;
	}
	return m;
}

static u64 pprof__function(struct convert_pprof *c, struct dso *dso, struct symbol *sym)
{
	struct pprof_function key = { .dso = dso, .sym = sym, };
	struct pprof_function *f;

	if (hashmap__find(c->functions, &key, &f))
		return f->id;
	f = memdup(&key, sizeof(key));
	if (!f) {
		c->err = true;
		return 0;
	}
	f->name = pprof__string(c, sym->name);
	f->id = ++c->nr_functions;
	if (hashmap__add(c->functions, f, f)) {
		free(f);
		c->err = true;
		return 0;
	}
	return f->id;
}

/* The location of @ip in @ms, added if new; 0 on error */
static u64 pprof__location(struct convert_pprof *c, u64 ip, struct map_symbol *ms)
{
	struct pprof_location key = { .address = ip, };
	struct pprof_mapping *m = NULL;
	struct pprof_location *l;

	if (ms->map) {
		m = pprof__mapping(c, ms->map);
		if (!m)
			return 0;
		key.mapping_id = m->id;
	}
	if (hashmap__find(c->locations, &key, &l))
		return l->id;
	l = memdup(&key, sizeof(key));
	if (!l) {
		c->err = true;
		return 0;
	}
	if (m && ms->sym)
		l->function_id = pprof__function(c, m->dso, ms->sym);
	else if (m)
		m->nr_unnamed++;
	l->id = ++c->nr_locations;
	if (hashmap__add(c->locations, l, l)) {
		free(l);
		c->err = true;
		return 0;
	}
	return l->id;
}

static int pprof__push(struct convert_pprof *c, u32 *nr, u64 ip, struct map_symbol *ms)
{
	u64 id = pprof__location(c, ip, ms);

	if (!id)
		return -ENOMEM;
	if (*nr == c->stack_size) {
		u32 size = c->stack_size ? c->stack_size * 2 : 128;
		u64 *stack = realloc(c->stack, size * sizeof(*stack));

		if (!stack)
			return -ENOMEM;
		c->stack = stack;
		c->stack_size = size;
	}
	c->stack[(*nr)++] = id;
	return 0;
}

static int pprof__add_sample(struct convert_pprof *c, struct evsel *evsel,
			     struct perf_sample *sample, struct thread *thread, u32 nr)
{
	struct pprof_sample *key, *s;
	int ret = -ENOMEM;

	key = malloc(sizeof(*key) + nr * sizeof(key->ids[0]));
	if (!key)
		return -ENOMEM;
	key->pid = thread__pid(thread) >= 0 ? thread__pid(thread) : 0;
	key->comm = pprof__string(c, thread__comm_str(thread));
	key->nr = nr;
	memcpy(key->ids, c->stack, nr * sizeof(key->ids[0]));
	if (hashmap__find(c->samples, key, &s)) {
		free(key);
	} else {
		key->values = calloc(c->nr_values, sizeof(u64));
		if (!key->values || hashmap__add(c->samples, key, key)) {
			free(key->values);
			free(key);
			return ret;
		}
		s = key;
	}
	s->values[0]++;
	s->values[1 + evsel->core.idx] += sample->period;
	c->evsel_samples[evsel->core.idx]++;
	return 0;
}

static int process_sample_event(const struct perf_tool *tool,
				union perf_event *event __maybe_unused,
				struct perf_sample *sample,
				struct machine *machine)
{
	struct convert_pprof *c = container_of(tool, struct convert_pprof, tool);
	struct evsel *evsel = sample->evsel;
	struct callchain_cursor *cursor = get_tls_callchain_cursor();
	struct callchain_cursor_node *node;
	struct addr_location al;
	u32 nr = 0;
	int ret = 0;

	if (evsel->core.idx >= c->nr_values - 1)
		return 0;

	addr_location__init(&al);
	if (machine__resolve(machine, &al, sample) < 0) {
		c->nr_unresolved++;
		goto out;
	}

	if (sample->callchain && cursor &&
	    !thread__resolve_callchain(al.thread, cursor, sample, NULL, NULL, c->max_stack)) {
		callchain_cursor_commit(cursor);
		while ((node = callchain_cursor_current(cursor)) != NULL) {
			ret = pprof__push(c, &nr, node->ip, &node->ms);
			if (ret)
				goto out;
			callchain_cursor_advance(cursor);
		}
	}
	/* No call chain, or no frame of it: the sampled address alone */
	if (!nr) {
		struct map_symbol ms = { .map = al.map, .sym = al.sym, };

		ret = pprof__push(c, &nr, sample->ip, &ms);
		if (ret)
			goto out;
	}

	ret = pprof__add_sample(c, evsel, sample, al.thread, nr);
	if (ret)
		goto out;

	if (!c->nr_samples++ || sample->time < c->first_time)
		c->first_time = sample->time;
	if (sample->time > c->last_time)
		c->last_time = sample->time;
out:
	addr_location__exit(&al);
	return ret;
}

static void pprof__value_type(struct pb_buf *b, int field, u64 type, u64 unit)
{
	struct pb_buf vt = { .len = 0 };

	pb_u64(&vt, VALUE_TYPE_TYPE, type);
	pb_u64(&vt, VALUE_TYPE_UNIT, unit);
	if (vt.err)
		b->err = true;
	else
		pb_bytes(b, field, vt.data, vt.len);
	free(vt.data);
}

/* The period of the software clocks is in nanoseconds */
static const char *pprof__unit(struct evsel *evsel)
{
	if (evsel->core.attr.type == PERF_TYPE_SOFTWARE &&
	    (evsel->core.attr.config == PERF_COUNT_SW_CPU_CLOCK ||
	     evsel->core.attr.config == PERF_COUNT_SW_TASK_CLOCK))
		return "nanoseconds";
	return "count";
}

/*
 * The sample types: the count, then the period of each event with samples
 * (@slots: which of a sample's values each is); the period of the last
 * one, which pprof shows by default
 */
static void pprof__write_sample_types(struct convert_pprof *c, struct pb_buf *b, int *slots,
				      int *nr_slots)
{
	struct evsel *evsel, *last = NULL;

	slots[0] = 0;
	*nr_slots = 1;
	pprof__value_type(b, PROFILE_SAMPLE_TYPE, pprof__string(c, "samples"),
			  pprof__string(c, "count"));
	evlist__for_each_entry(c->session->evlist, evsel) {
		if (evsel->core.idx >= c->nr_values - 1 || !c->evsel_samples[evsel->core.idx])
			continue;
		slots[(*nr_slots)++] = 1 + evsel->core.idx;
		pprof__value_type(b, PROFILE_SAMPLE_TYPE, pprof__string(c, evsel__name(evsel)),
				  pprof__string(c, pprof__unit(evsel)));
		last = evsel;
	}
	if (!last)
		return;
	pprof__value_type(b, PROFILE_PERIOD_TYPE, pprof__string(c, evsel__name(last)),
			  pprof__string(c, pprof__unit(last)));
	if (!last->core.attr.freq)
		pb_u64(b, PROFILE_PERIOD, last->core.attr.sample_period);
}

static int mapping_cmp(const void *a, const void *b)
{
	const struct pprof_mapping *ma = *(const struct pprof_mapping * const *)a;
	const struct pprof_mapping *mb = *(const struct pprof_mapping * const *)b;
	bool ka = dso__kernel(ma->dso) != DSO_SPACE__USER;
	bool kb = dso__kernel(mb->dso) != DSO_SPACE__USER;

	if (ka != kb)
		return ka ? 1 : -1;
	return ma->id < mb->id ? -1 : ma->id > mb->id;
}

/*
 * Writes the profile into the gzip stream: samples, mappings, locations
 * and functions one by one as they are encoded (protobuf takes the fields
 * of a message in any order), then the fields of the top level gathered
 * in @top, and the string table, which they all add to, last.
 */
static int pprof__write(struct convert_pprof *c)
{
	struct pb_buf msg = { .len = 0 }, sub = { .len = 0 }, top = { .len = 0 };
	struct pprof_mapping **mappings = NULL;
	struct hashmap_entry *cur;
	u64 *values = NULL;
	int *slots = NULL;
	int nr_slots = 0;
	size_t bkt, i;
	int ret = -ENOMEM;
	int j;

	c->str_pid = pprof__string(c, "pid");
	c->str_comm = pprof__string(c, "comm");
	slots = calloc(c->nr_values, sizeof(*slots));
	values = calloc(c->nr_values, sizeof(*values));
	if (!slots || !values)
		goto out;

	pprof__write_sample_types(c, &top, slots, &nr_slots);

	hashmap__for_each_entry(c->samples, cur, bkt) {
		struct pprof_sample *s = cur->pvalue;

		for (j = 0; j < nr_slots; j++)
			values[j] = s->values[slots[j]];
		pb_packed(&msg, SAMPLE_LOCATION_ID, s->ids, s->nr);
		pb_packed(&msg, SAMPLE_VALUE, values, nr_slots);
		pb_u64(&sub, LABEL_KEY, c->str_pid);
		pb_u64(&sub, LABEL_NUM, s->pid);
		pb_bytes(&msg, SAMPLE_LABEL, sub.data, sub.len);
		sub.len = 0;
		if (s->comm) {
			pb_u64(&sub, LABEL_KEY, c->str_comm);
			pb_u64(&sub, LABEL_STR, s->comm);
			pb_bytes(&msg, SAMPLE_LABEL, sub.data, sub.len);
			sub.len = 0;
		}
		ret = pprof_writer__write_field(&c->w, PROFILE_SAMPLE, &msg);
		if (ret)
			goto out;
	}

	/* Mappings in the order met, the user's first: pprof takes the first for the program */
	mappings = calloc(c->nr_mappings, sizeof(*mappings));
	if (!mappings)
		goto out;
	hashmap__for_each_entry(c->mappings, cur, bkt) {
		struct pprof_mapping *m = cur->pvalue;

		mappings[m->id - 1] = m;
	}
	qsort(mappings, c->nr_mappings, sizeof(*mappings), mapping_cmp);
	for (i = 0; i < c->nr_mappings; i++) {
		struct pprof_mapping *m = mappings[i];
		char bid[SBUILD_ID_SIZE];

		pb_u64(&msg, MAPPING_ID, m->id);
		pb_u64(&msg, MAPPING_MEMORY_START, m->start);
		pb_u64(&msg, MAPPING_MEMORY_LIMIT, m->end);
		pb_u64(&msg, MAPPING_FILE_OFFSET, m->pgoff);
		pb_u64(&msg, MAPPING_FILENAME, pprof__string(c, dso__long_name(m->dso)));
		if (dso__has_build_id(m->dso) &&
		    build_id__snprintf(dso__bid(m->dso), bid, sizeof(bid)) > 0)
			pb_u64(&msg, MAPPING_BUILD_ID, pprof__string(c, bid));
		pb_u64(&msg, MAPPING_HAS_FUNCTIONS, m->nr_unnamed == 0);
		ret = pprof_writer__write_field(&c->w, PROFILE_MAPPING, &msg);
		if (ret)
			goto out;
	}

	hashmap__for_each_entry(c->locations, cur, bkt) {
		struct pprof_location *l = cur->pvalue;

		pb_u64(&msg, LOCATION_ID, l->id);
		pb_u64(&msg, LOCATION_MAPPING_ID, l->mapping_id);
		pb_u64(&msg, LOCATION_ADDRESS, l->address);
		if (l->function_id) {
			pb_u64(&sub, LINE_FUNCTION_ID, l->function_id);
			pb_bytes(&msg, LOCATION_LINE, sub.data, sub.len);
			sub.len = 0;
		}
		ret = pprof_writer__write_field(&c->w, PROFILE_LOCATION, &msg);
		if (ret)
			goto out;
	}

	hashmap__for_each_entry(c->functions, cur, bkt) {
		struct pprof_function *f = cur->pvalue;

		pb_u64(&msg, FUNCTION_ID, f->id);
		pb_u64(&msg, FUNCTION_NAME, f->name);
		pb_u64(&msg, FUNCTION_SYSTEM_NAME, f->name);
		ret = pprof_writer__write_field(&c->w, PROFILE_FUNCTION, &msg);
		if (ret)
			goto out;
	}

	if (c->nr_samples) {
		struct perf_env *env = perf_session__env(c->session);
		u64 time = c->first_time;
		struct stat st;

		/* Wall-clock time: from the clock data, else the file's time */
		if (env->clock.enabled)
			time = env->clock.tod_ns + (c->first_time - env->clock.clockid_ns);
		else if (!fstat(perf_data__fd(c->session->data), &st))
			time = st.st_mtime * 1000000000ULL - (c->last_time - c->first_time);
		pb_u64(&top, PROFILE_TIME_NANOS, time);
		pb_u64(&top, PROFILE_DURATION_NANOS, c->last_time - c->first_time);
	}
	pb_u64(&top, PROFILE_COMMENT, pprof__string(c, "perf data convert --to-pprof"));

	ret = -ENOMEM;
	if (msg.err || sub.err || c->err)
		goto out;
	ret = pprof_writer__finish(&c->w, &top);
out:
	free(top.data);
	free(msg.data);
	free(sub.data);
	free(mappings);
	free(values);
	free(slots);
	return ret;
}

static void pprof__exit(struct convert_pprof *c)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (!IS_ERR_OR_NULL(c->samples)) {
		hashmap__for_each_entry(c->samples, cur, bkt) {
			struct pprof_sample *s = cur->pvalue;

			free(s->values);
			free(s);
		}
		hashmap__free(c->samples);
	}
	if (!IS_ERR_OR_NULL(c->locations)) {
		hashmap__for_each_entry(c->locations, cur, bkt)
			free(cur->pvalue);
		hashmap__free(c->locations);
	}
	if (!IS_ERR_OR_NULL(c->functions)) {
		hashmap__for_each_entry(c->functions, cur, bkt)
			free(cur->pvalue);
		hashmap__free(c->functions);
	}
	if (!IS_ERR_OR_NULL(c->mappings)) {
		hashmap__for_each_entry(c->mappings, cur, bkt) {
			struct pprof_mapping *m = cur->pvalue;

			dso__put(m->dso);
			free(m);
		}
		hashmap__free(c->mappings);
	}
	pprof_writer__exit(&c->w);
	free(c->stack);
	free(c->evsel_samples);
}

static int pprof__init(struct convert_pprof *c)
{
	c->mappings = hashmap__new(mapping_hash, mapping_equal, NULL);
	c->locations = hashmap__new(location_hash, location_equal, NULL);
	c->functions = hashmap__new(function_hash, function_equal, NULL);
	c->samples = hashmap__new(sample_hash, sample_equal, NULL);
	if (IS_ERR(c->mappings) || IS_ERR(c->locations) || IS_ERR(c->functions) ||
	    IS_ERR(c->samples))
		return -ENOMEM;
	return 0;
}

int bt_convert__perf2pprof(const char *path, const char *output_name,
			   struct perf_data_convert_opts *opts)
{
	struct perf_session *session;
	struct convert_pprof c = {};
	struct perf_data data = {
		.mode = PERF_DATA_MODE_READ,
		.path = path,
		.force = opts->force,
	};
	int fd = -1, ret = -1;

	perf_tool__init(&c.tool, /*ordered_events=*/true);
	c.tool.sample         = process_sample_event;
	c.tool.mmap           = perf_event__process_mmap;
	c.tool.mmap2          = perf_event__process_mmap2;
	c.tool.comm           = perf_event__process_comm;
	c.tool.namespaces     = perf_event__process_namespaces;
	c.tool.cgroup         = perf_event__process_cgroup;
	c.tool.exit           = perf_event__process_exit;
	c.tool.fork           = perf_event__process_fork;
	c.tool.lost           = perf_event__process_lost;
	c.tool.build_id       = perf_event__process_build_id;
	c.tool.id_index       = perf_event__process_id_index;
	c.tool.event_update   = perf_event__process_event_update;
	c.tool.ordering_requires_timestamps = true;

	if (opts->all) {
		pr_err("--all is currently unsupported for pprof output.\n");
		return -1;
	}
	if (opts->tod) {
		pr_err("--tod is currently unsupported for pprof output.\n");
		return -1;
	}

	/* One location per address: no inlined frames */
	symbol_conf.inline_name = false;
	c.max_stack = sysctl__max_stack();

	if (pprof__init(&c)) {
		pr_err("Not enough memory.\n");
		goto out;
	}

	fd = open(output_name, O_CREAT | O_WRONLY | (opts->force ? O_TRUNC : O_EXCL), 0666);
	if (fd == -1) {
		if (errno == EEXIST)
			pr_err("Output file exists. Use --force to overwrite it.\n");
		else
			pr_err("Error opening output file!\n");
		goto out;
	}

	if (pprof_writer__init(&c.w, fd)) {
		pr_err("Cannot start the gzip stream.\n");
		goto out;
	}

	session = perf_session__new(&data, &c.tool);
	if (IS_ERR(session)) {
		pr_err("Error creating perf session!\n");
		goto out;
	}
	c.session = session;
	/* The sample values are sized from the attrs, read before any event */
	if (perf_data__is_pipe(&data)) {
		pr_err("pprof output needs a perf.data file, not a pipe.\n");
		goto out_session;
	}

	if (symbol__init(perf_session__env(session)) < 0) {
		pr_err("Symbol init error!\n");
		goto out_session;
	}

	callchain_param_setup(evlist__combined_sample_type(session->evlist),
			      perf_session__e_machine(session, /*e_flags=*/NULL));
	/* profile.proto: the leaf first, whatever call-graph.order says */
	callchain_param.order = ORDER_CALLEE;

	c.nr_values = 1 + evlist__nr_entries(session->evlist);
	c.evsel_samples = calloc(evlist__nr_entries(session->evlist), sizeof(u64));
	if (!c.evsel_samples) {
		pr_err("Not enough memory.\n");
		goto out_session;
	}

	ret = perf_session__process_events(session);
	if (ret) {
		pr_err("Error processing '%s'.\n", data.path);
		goto out_session;
	}

	ret = pprof__write(&c);
	if (ret) {
		pr_err("Error writing '%s': %s\n", output_name, strerror(-ret));
		goto out_session;
	}

	fprintf(stderr, "[ perf data convert: Converted '%s' into pprof data '%s' ]\n",
		data.path, output_name);
	fprintf(stderr,
		"[ perf data convert: Converted and wrote %.3f MB (%" PRIu64 " samples, %"
		PRIu64 " mappings, %" PRIu64 " locations, %" PRIu64 " functions) ]\n",
		c.w.out_size / 1024.0 / 1024.0, c.nr_samples, c.nr_mappings, c.nr_locations,
		c.nr_functions);
	if (c.nr_unresolved)
		pr_warning("%" PRIu64 " samples of no known thread were left out.\n",
			   c.nr_unresolved);

out_session:
	perf_session__delete(session);
out:
	if (fd >= 0 && close(fd) && !ret) {
		pr_err("Error writing '%s': %s\n", output_name, strerror(errno));
		ret = -1;
	}
	/* No half-written profile left for a backend to take */
	if (ret && fd >= 0)
		unlink(output_name);
	pprof__exit(&c);
	return ret;
}
