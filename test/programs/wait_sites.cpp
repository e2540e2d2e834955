// wait_sites: waits of known length at marked lines, for the blocked times
// of the conventional profile (record_blocked). Main waits for a notifier
// thread that sleeps ~200 us before each notify, ROUNDS times at each line:
//   @line:direct_wait   pthread_cond_wait, called by the program itself
//   @line:std_wait      std::condition_variable::wait (libstdc++ tail-calls
//                       pthread_cond_wait: the program's return address is
//                       the wrapper's, as for a direct call)
//   @line:library_wait  helper_cond_wait in libwait_helper.so (out of scope),
//                       which calls pthread_cond_wait
// and prints the time it spent in each (its own clock) on stdout.
//
//     wait_sites [-n ROUNDS]   (default 2,000)
#include <pthread.h>
#include <time.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

#include "program_common.h"

extern "C" int helper_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex);

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void pause_200us() {
  timespec ts{0, 200'000};
  nanosleep(&ts, nullptr);
}

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
uint64_t g_posted = 0;  // under g_mutex

std::mutex g_std_mutex;
std::condition_variable g_std_cond;
uint64_t g_std_posted = 0;  // under g_std_mutex

// Waits for the `round`th post (1, 2, ...); posts counted from `first_post`.
uint64_t direct_waits(uint64_t first_post, uint64_t rounds) {
  uint64_t waited = 0;
  for (uint64_t i = first_post + 1; i <= first_post + rounds; ++i) {
    pthread_mutex_lock(&g_mutex);
    const uint64_t start = now_ns();
    while (g_posted < i) pthread_cond_wait(&g_cond, &g_mutex);  // @line:direct_wait
    waited += now_ns() - start;
    pthread_mutex_unlock(&g_mutex);
  }
  return waited;
}

uint64_t helper_waits(uint64_t first_post, uint64_t rounds) {
  uint64_t waited = 0;
  for (uint64_t i = first_post + 1; i <= first_post + rounds; ++i) {
    pthread_mutex_lock(&g_mutex);
    const uint64_t start = now_ns();
    while (g_posted < i) helper_cond_wait(&g_cond, &g_mutex);  // @line:library_wait
    waited += now_ns() - start;
    pthread_mutex_unlock(&g_mutex);
  }
  return waited;
}

uint64_t std_waits(uint64_t rounds) {
  uint64_t waited = 0;
  for (uint64_t i = 1; i <= rounds; ++i) {
    std::unique_lock lock(g_std_mutex);
    const uint64_t start = now_ns();
    while (g_std_posted < i) g_std_cond.wait(lock);  // @line:std_wait
    waited += now_ns() - start;
  }
  return waited;
}

void notify(uint64_t rounds) {
  for (uint64_t i = 0; i < 2 * rounds; ++i) {
    pause_200us();
    pthread_mutex_lock(&g_mutex);
    ++g_posted;
    pthread_cond_signal(&g_cond);
    pthread_mutex_unlock(&g_mutex);
  }
  for (uint64_t i = 0; i < rounds; ++i) {
    pause_200us();
    {
      std::lock_guard lock(g_std_mutex);
      ++g_std_posted;
    }
    g_std_cond.notify_one();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, 2'000);
  std::thread notifier(notify, args.n);
  const uint64_t direct = direct_waits(0, args.n);
  const uint64_t library = helper_waits(args.n, args.n);
  const uint64_t std_lib = std_waits(args.n);
  notifier.join();
  std::printf("rounds=%llu direct_ns=%llu library_ns=%llu std_ns=%llu\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(direct), static_cast<unsigned long long>(library),
              static_cast<unsigned long long>(std_lib));
  return args.exit_status;
}
