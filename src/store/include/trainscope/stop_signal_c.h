/* C interface to the stop signal (trainscope/stop_signal.h, the store module), for callers that
 * cannot use C++ (ctypes, other languages). docs/formats/stop_signal.md.
 *
 * Thread safety: every function may be called from any thread; a handle may be shared by threads
 * and must be closed once, after its last use. No function throws or aborts. */
#ifndef TRAINSCOPE_STOP_SIGNAL_C_H_
#define TRAINSCOPE_STOP_SIGNAL_C_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C names: trainscope_ prefix, snake_case. NOLINTBEGIN(readability-identifier-naming) */

typedef struct trainscope_stop_signal trainscope_stop_signal;

/* Opens a watcher for `trial_dir` (paths resolved once). NULL when trial_dir is NULL or memory
 * runs out. */
trainscope_stop_signal* trainscope_stop_signal_open(const char* trial_dir);
/* 1 when a stop was requested, else 0 (also for NULL). One access(2) call. */
int trainscope_stop_signal_check(const trainscope_stop_signal* signal);
void trainscope_stop_signal_close(trainscope_stop_signal* signal);

/* One-shot forms (resolve the paths at each call). */
int trainscope_stop_requested(const char* trial_dir);
/* Writes the reason as a NUL-terminated JSON object (docs/formats/stop_signal.md) into buf when
 * it fits. Returns the JSON's length without the NUL (call again with a larger buffer if it is
 * >= buf_len), or -1 when no stop was requested. buf may be NULL when buf_len is 0. */
long trainscope_stop_reason(const char* trial_dir, char* buf, size_t buf_len);
/* Raises a stop as a person would ("source": "user"), with `explanation` (may be NULL).
 * Returns 0 on success, -1 on failure. */
int trainscope_request_stop(const char* trial_dir, const char* explanation);

/* NOLINTEND(readability-identifier-naming) */

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TRAINSCOPE_STOP_SIGNAL_C_H_
