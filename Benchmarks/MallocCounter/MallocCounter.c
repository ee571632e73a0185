// A malloc-counting shim for the benchmark executable.
//
// How it works: this file defines malloc, calloc, realloc, free, memalign,
// aligned_alloc and posix_memalign. A symbol defined by the executable comes
// first in the dynamic linker's search order, so every allocation in the
// process (the Swift runtime, Foundation, Dispatch, our code) lands here. Each
// function forwards to glibc's own entry points (__libc_malloc and friends),
// which avoids the dlsym(RTLD_NEXT) bootstrap problem (dlsym itself allocates).
// While counting is on, each call bumps relaxed atomic counters; while it is
// off, the cost is one relaxed load.
//
// Where it is unavailable: anything other than glibc (Darwin, musl), and
// sanitizer builds, whose runtimes interpose the allocator themselves. There
// the functions are not defined, mc_is_supported() returns 0, and the
// benchmark reports allocations as unavailable rather than as zero.

#include "MallocCounter.h"

#if defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#    define MC_SANITIZED 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define MC_SANITIZED 1
#endif

#if defined(__linux__) && defined(__GLIBC__) && !defined(MC_SANITIZED)
#define MC_ACTIVE 1

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);

static atomic_int counting;
static atomic_uint_fast64_t allocationCount;
static atomic_uint_fast64_t deallocationCount;
static atomic_int_fast64_t liveByteCount;

static inline int isCounting(void) {
    return atomic_load_explicit(&counting, memory_order_relaxed);
}

static inline void noteAllocation(void *pointer) {
    if (pointer == NULL || !isCounting()) return;
    atomic_fetch_add_explicit(&allocationCount, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&liveByteCount, (int_fast64_t)malloc_usable_size(pointer), memory_order_relaxed);
}

static inline void noteDeallocation(void *pointer) {
    if (pointer == NULL || !isCounting()) return;
    atomic_fetch_add_explicit(&deallocationCount, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&liveByteCount, (int_fast64_t)malloc_usable_size(pointer), memory_order_relaxed);
}

void *malloc(size_t size) {
    void *pointer = __libc_malloc(size);
    noteAllocation(pointer);
    return pointer;
}

void *calloc(size_t count, size_t size) {
    void *pointer = __libc_calloc(count, size);
    noteAllocation(pointer);
    return pointer;
}

void *realloc(void *pointer, size_t size) {
    noteDeallocation(pointer);
    void *result = __libc_realloc(pointer, size);
    if (result == NULL && size != 0 && pointer != NULL && isCounting()) {
        // The old block survives a failed realloc: undo the deallocation noted above.
        atomic_fetch_sub_explicit(&deallocationCount, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&liveByteCount, (int_fast64_t)malloc_usable_size(pointer), memory_order_relaxed);
        return NULL;
    }
    noteAllocation(result);
    return result;
}

void free(void *pointer) {
    noteDeallocation(pointer);
    __libc_free(pointer);
}

void *memalign(size_t alignment, size_t size) {
    void *pointer = __libc_memalign(alignment, size);
    noteAllocation(pointer);
    return pointer;
}

void *aligned_alloc(size_t alignment, size_t size) {
    void *pointer = __libc_memalign(alignment, size);
    noteAllocation(pointer);
    return pointer;
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    noteAllocation(pointer);
    *result = pointer;
    return 0;
}

int mc_is_supported(void) { return 1; }

void mc_start(void) { atomic_store_explicit(&counting, 1, memory_order_seq_cst); }

void mc_stop(void) { atomic_store_explicit(&counting, 0, memory_order_seq_cst); }

mc_counters mc_read(void) {
    mc_counters counters;
    counters.allocations = atomic_load_explicit(&allocationCount, memory_order_seq_cst);
    counters.deallocations = atomic_load_explicit(&deallocationCount, memory_order_seq_cst);
    counters.liveBytes = atomic_load_explicit(&liveByteCount, memory_order_seq_cst);
    return counters;
}

#else

int mc_is_supported(void) { return 0; }

void mc_start(void) {}

void mc_stop(void) {}

mc_counters mc_read(void) {
    mc_counters counters = {0, 0, 0};
    return counters;
}

#endif
