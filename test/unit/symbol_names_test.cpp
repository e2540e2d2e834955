#include "symbol_names.h"

#include <gtest/gtest.h>

namespace coz {
namespace {

TEST(Demangle, CxxNames) {
  EXPECT_EQ(demangle("_Z9lib_scalell"), "lib_scale(long, long)");
  EXPECT_EQ(demangle("_ZNSt6vectorIlSaIlEEixEm"), "std::vector<long, std::allocator<long> >::operator[](unsigned long)");
}

TEST(Demangle, RustNamesLoseTheirHash) {
  EXPECT_EQ(demangle("_ZN4core3num21_$LT$impl$u20$u64$GT$12wrapping_mul17h0123456789abcdefE"),
            "core::num::<impl u64>::wrapping_mul");
  EXPECT_EQ(demangle("_RNvCs1234_4main8hot_loop"), "main::hot_loop");  // v0: rust_demangle_test.cpp
}

TEST(Demangle, SymbolVersionsAreDropped) {
  EXPECT_EQ(demangle("pthread_cond_signal@@GLIBC_2.3.2"), "pthread_cond_signal");
  EXPECT_EQ(demangle("memcpy@GLIBC_2.2.5"), "memcpy");
  EXPECT_EQ(demangle("_Z9lib_scalell@@V1"), "lib_scale(long, long)");
}

TEST(Demangle, OtherNamesUnchanged) {
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("fixture_work"), "fixture_work");
  EXPECT_EQ(demangle("_Znot a mangled name"), "_Znot a mangled name");
  EXPECT_EQ(demangle("_RNvCs1234_4main8hot_loo"), "_RNvCs1234_4main8hot_loo");  // Rust v0, truncated
  EXPECT_EQ(demangle(""), "");
}

}  // namespace
}  // namespace coz
