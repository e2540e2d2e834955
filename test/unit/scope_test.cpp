#include "scope.h"

#include <gtest/gtest.h>

namespace coz {
namespace {

TEST(Scope, DefaultBinaryScopeIsTheMainExecutable) {
  BinaryScope s({}, "/opt/app/server");
  EXPECT_TRUE(s.contains("/opt/app/server"));
  EXPECT_FALSE(s.contains("/lib/x86_64-linux-gnu/libc.so.6"));
}

TEST(Scope, BinaryGlobsMatchPathOrBaseNameAndMainIsAKeyword) {
  BinaryScope s({"*libhot*.so", "MAIN"}, "/opt/app/server");
  EXPECT_TRUE(s.contains("/opt/app/libhotloop.so"));
  EXPECT_TRUE(s.contains("/opt/app/server"));
  EXPECT_FALSE(s.contains("/lib/x86_64-linux-gnu/libc.so.6"));
  BinaryScope only_lib({"libhotloop.so"}, "/opt/app/server");
  EXPECT_TRUE(only_lib.contains("/build/libhotloop.so"));
  EXPECT_FALSE(only_lib.contains("/opt/app/server"));
}

TEST(Scope, DefaultSourceScopeExcludesSystemSources) {
  SourceScope s({});
  EXPECT_TRUE(s.contains("/home/me/app/main.cpp"));
  EXPECT_FALSE(s.contains("/usr/include/c++/12/bits/stl_vector.h"));
  EXPECT_FALSE(s.contains("/rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/iter.rs"));
  // The C part of Go's runtime/cgo: Go 1.19-1.22 and Go 1.26 name it so.
  EXPECT_FALSE(s.contains("/_/runtime/cgo/gcc_amd64.S"));
  EXPECT_FALSE(s.contains("/_/GOROOT/src/runtime/cgo/gcc_amd64.S"));
  EXPECT_FALSE(s.contains("/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/coz-0.1.3/src/lib.rs"));
  EXPECT_FALSE(s.contains("<built-in>"));
}

TEST(Scope, SourceGlobsReplaceTheDefault) {
  SourceScope s({"*/src/*.cpp"});
  EXPECT_TRUE(s.contains("/home/me/app/src/main.cpp"));
  EXPECT_FALSE(s.contains("/home/me/app/src/main.h"));
  EXPECT_FALSE(s.contains("/home/me/app/test/t.cpp"));
}

}  // namespace
}  // namespace coz
