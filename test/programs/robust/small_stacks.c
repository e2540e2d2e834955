/* small_stacks: code that runs on small stacks and uses most of them
 * (test/integration/ownership_signals_test.cpp). Without the profiler no
 * signal arrives, so nothing but the program's own frames is ever on these
 * stacks; a signal handler that ran there would need room of its own.
 *
 * Usage: small_stacks --ucontext | --pthread | --altstack
 *
 * --ucontext: a coroutine (makecontext/swapcontext) on an 8 KiB stack with a
 *   guard page below it recurses until 1.5 KiB of the stack is left, works
 *   there for ~25 ms of CPU time, and swaps back to main; 10 rounds.
 * --pthread: a thread with a 16 KiB stack (PTHREAD_STACK_MIN) recurses
 *   until 1.5 KiB of it is left and works there for ~250 ms of CPU time.
 * --altstack: the program's own alternate signal stack. sigaltstack reads
 *   back none, then the program's; a SA_ONSTACK handler for SIGUSR1, raised
 *   10 times over ~250 ms of work, must run on it; then none again.
 *
 * Prints "small_stacks mode=M rounds=R depth=D left=L" (L: bytes of stack
 * left at the deepest frame), or for --altstack "small_stacks mode=altstack
 * before=B readback=R on_stack=N of 10 after=A", and exits 0 (--altstack:
 * when every check holds). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define COROUTINE_STACK 8192
#define LEFT_AT_DEEPEST 1536

static volatile uint64_t g_sink;
static uintptr_t g_stack_low;  /* lowest usable address of the stack in use */
static unsigned g_work_ms;
static int g_depth;
static long g_left;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void work_ms(unsigned ms) {
  uint64_t end = thread_cpu_ns() + (uint64_t)ms * 1000000u;
  uint64_t x = g_sink;
  while (thread_cpu_ns() < end) {
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;  // @line:work
  }
  g_sink = x;
}

/* Each level takes ~200 bytes of stack (the volatile buffer keeps it);
 * the deepest one works. */
__attribute__((noinline)) static uint64_t descend(int depth) {
  volatile char frame[160];
  frame[0] = (char)depth;
  uintptr_t here = (uintptr_t)&frame[0];
  if (here - g_stack_low <= LEFT_AT_DEEPEST + 256) {
    g_depth = depth;
    g_left = (long)(here - g_stack_low);
    work_ms(g_work_ms);
    return frame[0];
  }
  return descend(depth + 1) + frame[0];
}

static ucontext_t g_main_context, g_coroutine_context;

static void coroutine(void) {
  for (;;) {
    g_sink += descend(0);
    swapcontext(&g_coroutine_context, &g_main_context);
  }
}

static int run_ucontext(void) {
  long page = sysconf(_SC_PAGESIZE);
  char* region = mmap(NULL, (size_t)page + COROUTINE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return 1;
  mprotect(region, (size_t)page, PROT_NONE); /* the guard page */
  g_stack_low = (uintptr_t)region + (uintptr_t)page;
  g_work_ms = 25;
  getcontext(&g_coroutine_context);
  g_coroutine_context.uc_stack.ss_sp = region + page;
  g_coroutine_context.uc_stack.ss_size = COROUTINE_STACK;
  g_coroutine_context.uc_link = &g_main_context;
  makecontext(&g_coroutine_context, coroutine, 0);
  int rounds = 0;
  for (; rounds < 10; ++rounds) swapcontext(&g_main_context, &g_coroutine_context);
  printf("small_stacks mode=ucontext rounds=%d depth=%d left=%ld\n", rounds, g_depth, g_left);
  return 0;
}

static void* thread_main(void* unused) {
  (void)unused;
  pthread_attr_t attr;
  void* base = NULL;
  size_t size = 0;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  g_stack_low = (uintptr_t)base;
  g_work_ms = 250;
  g_sink += descend(0);
  return NULL;
}

static int run_pthread(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 16384);
  pthread_t thread;
  if (pthread_create(&thread, &attr, thread_main, NULL) != 0) return 1;
  pthread_join(thread, NULL);
  printf("small_stacks mode=pthread rounds=1 depth=%d left=%ld\n", g_depth, g_left);
  return 0;
}

#define ALT_STACK_SIZE 65536
static char* g_alt_stack;
static volatile sig_atomic_t g_on_alt_stack = 0;

static void on_usr1(int sig) {
  (void)sig;
  char here;
  uintptr_t at = (uintptr_t)&here, low = (uintptr_t)g_alt_stack;
  if (at > low && at < low + ALT_STACK_SIZE) ++g_on_alt_stack;
}

static int disabled(void) {
  stack_t current;
  return sigaltstack(NULL, &current) == 0 && (current.ss_flags & SS_DISABLE);
}

static int run_altstack(void) {
  int before = disabled();
  g_alt_stack = malloc(ALT_STACK_SIZE);
  stack_t mine = {.ss_sp = g_alt_stack, .ss_flags = 0, .ss_size = ALT_STACK_SIZE}, back;
  sigaltstack(&mine, NULL);
  int readback = sigaltstack(NULL, &back) == 0 && back.ss_sp == g_alt_stack && back.ss_size == ALT_STACK_SIZE &&
                 back.ss_flags == 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  for (int i = 0; i < 10; ++i) {
    work_ms(25);
    raise(SIGUSR1);
  }
  stack_t off = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
  sigaltstack(&off, NULL);
  int after = disabled();
  printf("small_stacks mode=altstack before=%s readback=%d on_stack=%d of 10 after=%s\n",
         before ? "disabled" : "enabled", readback, (int)g_on_alt_stack, after ? "disabled" : "enabled");
  return before && readback && g_on_alt_stack == 10 && after ? 0 : 1;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc == 2 && strcmp(argv[1], "--ucontext") == 0) return run_ucontext();
  if (argc == 2 && strcmp(argv[1], "--pthread") == 0) return run_pthread();
  if (argc == 2 && strcmp(argv[1], "--altstack") == 0) return run_altstack();
  fprintf(stderr, "usage: small_stacks --ucontext | --pthread | --altstack\n");
  return 2;
}
