// minimal_sampler: the least a per-thread perf_event sampler can cost, as a
// floor for the "sampling alone" overhead. LD_PRELOAD it into a program:
// every thread (the main one, and each started by pthread_create) gets a
// task-clock event sampling IP and call chain every 1 ms into a 2-page ring,
// closed when the thread exits. No signals, no reading of the samples, no
// line map, no experiments: what remains is the kernel's cost (event setup
// and teardown, timer interrupts, writing samples) on this machine.
//
//   LD_PRELOAD=build-bench/bench/libcoz_bench_minimal_sampler.so fork_join
//
// Measured here (2 cores, Firecracker VM): fork_join +2.7% over plain,
// where `coz run --fixed-speedup 0` costs +5.2% to +6.1%.
//
// COZ_FLOOR_PERIOD_NS sets the period (default 1 ms). COZ_FLOOR_TRAPS=1
// maps no ring: each event raises SIGTRAP per sample (sigtrap=1) into an
// empty handler, the floor of the runtime's samplers without rings.
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

constexpr size_t ring_bytes = 3 * 4096;  // metadata page + 2 data pages, as the runtime maps
thread_local int t_fd = -1;
thread_local void* t_ring = nullptr;
pthread_key_t g_exit_key;

uint64_t g_period_ns = 1'000'000;
bool g_traps = false;

void start_sampling() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = g_period_ns;
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.exclude_callchain_kernel = 1;
  attr.sample_max_stack = 32;
  if (g_traps) {
    attr.sample_type = 0;
    attr.sigtrap = 1;
    attr.remove_on_exec = 1;  // the kernel requires it with sigtrap
  }
  t_fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (t_fd < 0) return;
  if (!g_traps) t_ring = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t_fd, 0);
  ioctl(t_fd, PERF_EVENT_IOC_ENABLE, 0);
  pthread_setspecific(g_exit_key, &t_fd);  // non-null: the destructor runs at thread exit
}

void stop_sampling(void*) {
  if (t_fd < 0) return;
  ioctl(t_fd, PERF_EVENT_IOC_DISABLE, 0);
  close(t_fd);
  if (t_ring && t_ring != MAP_FAILED) munmap(t_ring, ring_bytes);
  t_fd = -1;
}

struct Start {
  void* (*fn)(void*);
  void* arg;
};

void* trampoline(void* p) {
  Start start = *static_cast<Start*>(p);
  std::free(p);
  start_sampling();
  return start.fn(start.arg);
}

void on_trap(int, siginfo_t*, void*) {}

__attribute__((constructor)) void on_load() {
  if (const char* period = std::getenv("COZ_FLOOR_PERIOD_NS")) g_period_ns = std::strtoull(period, nullptr, 10);
  if (const char* traps = std::getenv("COZ_FLOOR_TRAPS")) g_traps = std::strcmp(traps, "1") == 0;
  if (g_traps) {
    struct sigaction action = {};
    action.sa_sigaction = &on_trap;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGTRAP, &action, nullptr);
  }
  pthread_key_create(&g_exit_key, &stop_sampling);
  start_sampling();
}

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto real = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  auto* start = static_cast<Start*>(std::malloc(sizeof(Start)));
  if (!start) return EAGAIN;
  *start = Start{fn, arg};
  int err = real(thread, attr, &trampoline, start);
  if (err != 0) std::free(start);
  return err;
}
