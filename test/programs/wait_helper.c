/* wait_helper: a library between wait_sites and pthread_cond_wait, as glib
 * or a C++ layer that is not inlined would be. Out of the default binary
 * scope (MAIN), so the runtime finds the wait's site in the program by
 * walking the stack. Built with -fno-optimize-sibling-calls and with work
 * after the call: a tail call would leave the program's return address on
 * the stack, and the wait would look direct. */
#include <pthread.h>

volatile unsigned long helper_waits;

__attribute__((visibility("default"))) int helper_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
  int err = pthread_cond_wait(cond, mutex);
  helper_waits = helper_waits + 1;
  return err;
}
