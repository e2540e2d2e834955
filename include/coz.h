/*
 * coz.h: progress points for the causal profiler.
 *
 * Binary-compatible with the original Coz header: code instrumented for Coz
 * builds unchanged against this file, and code built against Coz's header
 * works with our runtime. The runtime (libcoz.so, loaded by `coz run`) exports
 *   coz_counter_t* _coz_get_counter(int type, const char* name);
 *   void _coz_pre_block(void);
 *   void _coz_post_block(int skip_delays);
 *   void _coz_catch_up(void);
 * Without the runtime, each macro resolves its symbol once (dlsym) and from
 * then on costs one well-predicted branch.
 */
#ifndef COZ_H
#define COZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__cplusplus)
extern "C" {
#endif

#define COZ_COUNTER_TYPE_THROUGHPUT 1
#define COZ_COUNTER_TYPE_BEGIN 2
#define COZ_COUNTER_TYPE_END 3

/* Weak, so that programs need not link libdl on old C libraries. A pragma,
 * not a second declaration: -Wredundant-decls -Werror builds (memcached's)
 * must compile this header. */
#pragma weak dlsym

typedef struct {
  size_t count;   /* incremented by the program, read by the profiler */
  size_t backoff; /* Coz ABI: unused by Coz; COZ_COUNTER_STRIPED from our runtime */
} coz_counter_t;

/* Our runtime's counters are striped: the coz_counter_t (which code built
 * against Coz's header increments), then a cache line per stripe, which this
 * header's macros increment instead, the stripe chosen by the CPU the
 * visiting thread runs on. One line shared by every thread moved between
 * cores at each visit: a point visited 600,000 times a second by 64 threads
 * on 2 cores took ~2% of the run's CPU time in that one increment. The
 * profiler adds the stripes up. Coz's runtime leaves `backoff` 0: its single
 * count is incremented. */
#define COZ_COUNTER_STRIPED ((size_t)0x7374726970656431ull)
#define COZ_COUNTER_STRIPES 16

typedef struct {
  size_t count;
  char pad[64 - sizeof(size_t)];
} coz_counter_stripe_t;

typedef struct {
  coz_counter_t head;
  char pad[64 - sizeof(coz_counter_t)];
  coz_counter_stripe_t stripes[COZ_COUNTER_STRIPES];
} coz_striped_counter_t;

#if defined(__x86_64__) && defined(__GNUC__)
/* glibc 2.35 and later register each thread's rseq area (struct rseq) at
 * this offset from the thread pointer, and the kernel keeps its `cpu_id`
 * (bytes 4 to 7) current. Weak, and under a name of our own (a second
 * declaration of glibc's would break -Wredundant-decls builds): without it
 * (an older C library, a static link) the address is 0. */
extern const ptrdiff_t _coz_rseq_offset __asm__("__rseq_offset") __attribute__((weak));

/* The stripe of the calling thread: that of its CPU, so that a stripe's line
 * stays in one core's cache (chosen by thread, threads that migrate between
 * cores still moved it: 64 threads on 2 cores, 0.4% of the run's CPU time in
 * the increment); where rseq is not registered (cpu_id negative), a hash of
 * the thread pointer (%fs:0, a load without a call). */
static inline size_t _coz_stripe(void) {
  uint64_t self;
  __asm__("mov %%fs:0, %0" : "=r"(self));
  if (&_coz_rseq_offset != 0) {
    int32_t cpu = __atomic_load_n((const int32_t*)(uintptr_t)(self + (uint64_t)_coz_rseq_offset + 4), __ATOMIC_RELAXED);
    if (cpu >= 0) return (size_t)cpu % COZ_COUNTER_STRIPES;
  }
  return (size_t)(((self >> 12) * 0x9e3779b97f4a7c15ull) >> 60); /* 0 to 15 */
}
#endif

/* One visit: in its stripe where the counter has them, else in the single count. */
static inline void _coz_count_visit(coz_counter_t* c) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (c->backoff == COZ_COUNTER_STRIPED) {
    /* The address as a number: a compiler that sees `c` point to a lone
     * coz_counter_t must not call the stripes out of its bounds. */
    uintptr_t at = (uintptr_t)c + offsetof(coz_striped_counter_t, stripes) + _coz_stripe() * sizeof(coz_counter_stripe_t);
    __atomic_add_fetch((size_t*)at, 1, __ATOMIC_RELAXED);
    return;
  }
#endif
  __atomic_add_fetch(&c->count, 1, __ATOMIC_RELAXED);
}

typedef coz_counter_t* (*coz_get_counter_t)(int, const char*);

/* Looks a runtime function up once per translation unit; NULL without the runtime. */
static inline void* _coz_lookup(const char* symbol) {
  void* p = 0;
  if (dlsym) p = dlsym(RTLD_DEFAULT, symbol);
  return p;
}

/* Marks "resolution not attempted yet"; never a valid counter address. */
#define COZ_COUNTER_UNRESOLVED ((coz_counter_t*)1)

static inline coz_counter_t* _coz_resolve_counter(int type, const char* name) {
  coz_get_counter_t fn;
  void* p = _coz_lookup("_coz_get_counter");
  if (!p) return 0;
  memcpy(&fn, &p, sizeof(p)); /* object pointer to function pointer, without a pedantic warning */
  return fn(type, name);
}

/* The counter starts UNRESOLVED; the first pass resolves it to a counter or to
 * NULL. Without the runtime every later pass is the single `!= 0` test. The
 * `if (1) {...}` shape (as in Coz) keeps `COZ_PROGRESS` valid with or without
 * a trailing semicolon. `action` runs with the counter in `_coz_c`. */
#define COZ_WITH_COUNTER_(type, name, action)                                           \
  if (1) {                                                                              \
    static coz_counter_t* _coz_counter = COZ_COUNTER_UNRESOLVED;                        \
    coz_counter_t* _coz_c = __atomic_load_n(&_coz_counter, __ATOMIC_RELAXED);           \
    if (__builtin_expect(_coz_c != 0, 0)) {                                             \
      if (_coz_c == COZ_COUNTER_UNRESOLVED) {                                           \
        _coz_c = _coz_resolve_counter(type, name);                                      \
        __atomic_store_n(&_coz_counter, _coz_c, __ATOMIC_RELAXED);                      \
      }                                                                                 \
      if (_coz_c) {                                                                     \
        action;                                                                         \
      }                                                                                 \
    }                                                                                   \
  }

#define COZ_INCREMENT_COUNTER(type, name) COZ_WITH_COUNTER_(type, name, _coz_count_visit(_coz_c))

#define COZ_STR2_(x) #x
#define COZ_STR_(x) COZ_STR2_(x)

/* Throughput point named "file:line". */
#define COZ_PROGRESS COZ_INCREMENT_COUNTER(COZ_COUNTER_TYPE_THROUGHPUT, __FILE__ ":" COZ_STR_(__LINE__))
/* Throughput point with a chosen name. */
#define COZ_PROGRESS_NAMED(name) COZ_INCREMENT_COUNTER(COZ_COUNTER_TYPE_THROUGHPUT, name)
/* The runtime's record of one request's begin or end (our runtime only:
 * Coz's has no `_coz_request`, and then only the visit is counted). Looked
 * up once per translation unit. */
typedef void (*coz_request_fn_t)(coz_counter_t*, int, uint64_t, int);

static inline void _coz_mark_request(coz_counter_t* c, int type, uint64_t key, int keyed) {
  static void* fp = (void*)1;
  void* p = __atomic_load_n(&fp, __ATOMIC_RELAXED);
  if (p == (void*)1) {
    p = _coz_lookup("_coz_request");
    __atomic_store_n(&fp, p, __ATOMIC_RELAXED);
  }
  if (p) {
    coz_request_fn_t f;
    memcpy(&f, &p, sizeof(p));
    f(c, type, key, keyed);
  }
}

/* A latency point's visit, and the request's own begin or end for the
 * point's latency percentiles (docs/analysis.md section 13). */
#define COZ_REQUEST_(type, name, key, keyed) \
  COZ_WITH_COUNTER_(type, name, _coz_count_visit(_coz_c); _coz_mark_request(_coz_c, type, (uint64_t)(key), keyed))

/* Latency point: a request named `name` starts / ends here. A begin and the
 * next end of the same name on the same thread are one request. */
#define COZ_BEGIN(name) COZ_REQUEST_(COZ_COUNTER_TYPE_BEGIN, name, 0, 0)
#define COZ_END(name) COZ_REQUEST_(COZ_COUNTER_TYPE_END, name, 0, 0)
/* The same for a request that moves between threads (accepted by one,
 * served by another): its begin and end are paired by `key`, any integer
 * (or pointer cast to one) that no other request of `name` in flight has. */
#define COZ_BEGIN_KEY(name, key) COZ_REQUEST_(COZ_COUNTER_TYPE_BEGIN, name, (key), 1)
#define COZ_END_KEY(name, key) COZ_REQUEST_(COZ_COUNTER_TYPE_END, name, (key), 1)

/* Custom synchronisation (for waits the runtime cannot see, e.g. a spin-wait
 * hand-off): call COZ_PRE_BLOCK before waiting, COZ_POST_BLOCK(1) after being
 * woken by another thread (0 if woken by a timeout or the outside world), and
 * COZ_CATCH_UP before waking another thread. */
typedef void (*coz_void_fn_t)(void);
typedef void (*coz_post_block_fn_t)(int);

#define COZ_CALL_RUNTIME_(symbol, fn_type, args)                \
  if (1) {                                                       \
    static void* _coz_fp = (void*)1;                             \
    void* _coz_p = __atomic_load_n(&_coz_fp, __ATOMIC_RELAXED);  \
    if (_coz_p == (void*)1) {                                    \
      _coz_p = _coz_lookup(symbol);                              \
      __atomic_store_n(&_coz_fp, _coz_p, __ATOMIC_RELAXED);      \
    }                                                            \
    if (_coz_p) {                                                \
      fn_type _coz_f;                                            \
      memcpy(&_coz_f, &_coz_p, sizeof(_coz_p));                  \
      _coz_f args;                                               \
    }                                                            \
  }

#define COZ_PRE_BLOCK() COZ_CALL_RUNTIME_("_coz_pre_block", coz_void_fn_t, ())
#define COZ_POST_BLOCK(skip) COZ_CALL_RUNTIME_("_coz_post_block", coz_post_block_fn_t, ((int)(skip)))
#define COZ_CATCH_UP() COZ_CALL_RUNTIME_("_coz_catch_up", coz_void_fn_t, ())

#if defined(__cplusplus)
}
#endif

#endif /* COZ_H */
