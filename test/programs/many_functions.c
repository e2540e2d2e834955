// A program with many hot lines (--granularity auto's second phase: test
// TwoPhase* in integration_test.cpp): each round calls 64 small functions,
// each with its own loop on its own line, and one function, `bottleneck`,
// that takes about half of the round. One thread; progress point "round".
// `-s SECONDS` runs for that long instead of a count of rounds: the two-phase
// test needs a number of experiments, which take wall-clock time however fast
// the machine is.
//
//     many_functions [-n ROUNDS | -s SECONDS]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <coz.h>

static volatile unsigned sink;
enum { SMALL = 2000, BIG = 64 * SMALL };

__attribute__((noinline)) static void f00(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 3u; }
__attribute__((noinline)) static void f01(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 4u; }
__attribute__((noinline)) static void f02(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 5u; }
__attribute__((noinline)) static void f03(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 6u; }
__attribute__((noinline)) static void f04(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 7u; }
__attribute__((noinline)) static void f05(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 8u; }
__attribute__((noinline)) static void f06(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 9u; }
__attribute__((noinline)) static void f07(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 10u; }
__attribute__((noinline)) static void f08(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 11u; }
__attribute__((noinline)) static void f09(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 12u; }
__attribute__((noinline)) static void f10(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 13u; }
__attribute__((noinline)) static void f11(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 14u; }
__attribute__((noinline)) static void f12(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 15u; }
__attribute__((noinline)) static void f13(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 16u; }
__attribute__((noinline)) static void f14(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 17u; }
__attribute__((noinline)) static void f15(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 18u; }
__attribute__((noinline)) static void f16(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 19u; }
__attribute__((noinline)) static void f17(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 20u; }
__attribute__((noinline)) static void f18(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 21u; }
__attribute__((noinline)) static void f19(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 22u; }
__attribute__((noinline)) static void f20(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 23u; }
__attribute__((noinline)) static void f21(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 24u; }
__attribute__((noinline)) static void f22(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 25u; }
__attribute__((noinline)) static void f23(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 26u; }
__attribute__((noinline)) static void f24(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 27u; }
__attribute__((noinline)) static void f25(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 28u; }
__attribute__((noinline)) static void f26(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 29u; }
__attribute__((noinline)) static void f27(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 30u; }
__attribute__((noinline)) static void f28(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 31u; }
__attribute__((noinline)) static void f29(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 32u; }
__attribute__((noinline)) static void f30(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 33u; }
__attribute__((noinline)) static void f31(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 34u; }
__attribute__((noinline)) static void f32(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 35u; }
__attribute__((noinline)) static void f33(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 36u; }
__attribute__((noinline)) static void f34(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 37u; }
__attribute__((noinline)) static void f35(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 38u; }
__attribute__((noinline)) static void f36(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 39u; }
__attribute__((noinline)) static void f37(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 40u; }
__attribute__((noinline)) static void f38(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 41u; }
__attribute__((noinline)) static void f39(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 42u; }
__attribute__((noinline)) static void f40(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 43u; }
__attribute__((noinline)) static void f41(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 44u; }
__attribute__((noinline)) static void f42(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 45u; }
__attribute__((noinline)) static void f43(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 46u; }
__attribute__((noinline)) static void f44(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 47u; }
__attribute__((noinline)) static void f45(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 48u; }
__attribute__((noinline)) static void f46(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 49u; }
__attribute__((noinline)) static void f47(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 50u; }
__attribute__((noinline)) static void f48(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 51u; }
__attribute__((noinline)) static void f49(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 52u; }
__attribute__((noinline)) static void f50(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 53u; }
__attribute__((noinline)) static void f51(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 54u; }
__attribute__((noinline)) static void f52(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 55u; }
__attribute__((noinline)) static void f53(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 56u; }
__attribute__((noinline)) static void f54(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 57u; }
__attribute__((noinline)) static void f55(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 58u; }
__attribute__((noinline)) static void f56(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 59u; }
__attribute__((noinline)) static void f57(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 60u; }
__attribute__((noinline)) static void f58(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 61u; }
__attribute__((noinline)) static void f59(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 62u; }
__attribute__((noinline)) static void f60(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 63u; }
__attribute__((noinline)) static void f61(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 64u; }
__attribute__((noinline)) static void f62(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 65u; }
__attribute__((noinline)) static void f63(void) { for (unsigned i = 0; i < SMALL; ++i) sink += i * 66u; }

__attribute__((noinline)) static void bottleneck(void) {
  for (unsigned i = 0; i < BIG; ++i) sink += i ^ (i >> 3);  // @line:bottleneck
}

static void (*const small[])(void) = {
    f00, f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11, f12, f13, f14, f15, f16, f17, f18,
    f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36, f37,
    f38, f39, f40, f41, f42, f43, f44, f45, f46, f47, f48, f49, f50, f51, f52, f53, f54, f55, f56,
    f57, f58, f59, f60, f61, f62, f63};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  unsigned long rounds = 2000;
  double seconds = 0;
  if (argc == 3 && strcmp(argv[1], "-n") == 0) rounds = strtoul(argv[2], NULL, 10);
  else if (argc == 3 && strcmp(argv[1], "-s") == 0) seconds = strtod(argv[2], NULL);
  else if (argc != 1) {
    fprintf(stderr, "usage: many_functions [-n ROUNDS | -s SECONDS]\n");
    return 2;
  }
  const double deadline = now_s() + seconds;
  unsigned long r = 0;
  for (; seconds > 0 ? now_s() < deadline : r < rounds; ++r) {
    for (unsigned f = 0; f < sizeof small / sizeof small[0]; ++f) small[f]();
    bottleneck();
    COZ_PROGRESS_NAMED("round");
  }
  printf("%lu rounds\n", r);
  return 0;
}
