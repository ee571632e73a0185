// Counts heap allocations made by the whole process, for the benchmark executable only.
//
// The Resilience library never links this: it is a dependency of the benchmark
// target alone. See MallocCounter.c for how the counting works and where it is
// unavailable.

#ifndef RESILIENCE_BENCHMARKS_MALLOC_COUNTER_H
#define RESILIENCE_BENCHMARKS_MALLOC_COUNTER_H

#include <stdint.h>

/// A snapshot of the counters since the process started.
typedef struct {
    /// Calls that returned new memory: malloc, calloc, realloc, memalign and friends.
    uint64_t allocations;
    /// Calls to free with a non-null pointer.
    uint64_t deallocations;
    /// Usable bytes handed out minus usable bytes given back, while counting was on.
    int64_t liveBytes;
} mc_counters;

/// 1 when this build interposes the allocator (glibc, no sanitizer), else 0.
int mc_is_supported(void);

/// Starts counting. Counting is off at launch so that timing loops pay nothing.
void mc_start(void);

/// Stops counting.
void mc_stop(void);

/// The counters now.
mc_counters mc_read(void);

#endif
