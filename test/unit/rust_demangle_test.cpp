// Mangled names from rustc 1.95 (-C symbol-mangling-version=v0) building a
// small crate; the demangled forms reasoned from RFC 2603 and checked against
// rustfilt 0.2.2 (rustc-demangle's alternate form, which prints no hashes), as
// were all 206,000 v0 names of rustc's librustc_driver and libstd (no difference).
#include "rust_demangle.h"

#include <gtest/gtest.h>

#include <string>

#include "symbol_names.h"

namespace coz {
namespace {

std::string v0(std::string_view mangled) { return demangle_rust_v0(mangled).value_or("<nullopt>"); }

TEST(RustV0, Paths) {
  EXPECT_EQ(v0("_RNvCskNItiDSreWu_5vzero4main"), "vzero::main");
  EXPECT_EQ(v0("_RNvCs1234_4main8hot_loop"), "main::hot_loop");
  EXPECT_EQ(v0("_RNvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace28___rust_begin_short_backtrace"),
            "std::sys::backtrace::__rust_begin_short_backtrace");
  // Inherent impl (M), trait impl (X), trait definition (Y); the impl paths are not printed.
  EXPECT_EQ(v0("_RNvMs0_CskNItiDSreWu_5vzeroINtB5_4GridKj3_Kb1_Kc78_E5cellsB5_"),
            "<vzero::Grid<3, true, 'x'>>::cells");
  EXPECT_EQ(v0("_RNvXCskNItiDSreWu_5vzeroINtB2_7WrapperdENtB2_5Shape4area"),
            "<vzero::Wrapper<f64> as vzero::Shape>::area");
  EXPECT_EQ(v0("_RNvMs_CskNItiDSreWu_5vzeroINtB4_7WrapperINtNtCslNYArtu3iFV_5alloc3vec3VechEE4showB4_"),
            "<vzero::Wrapper<alloc::vec::Vec<u8>>>::show");
  EXPECT_EQ(v0("_RNvYNtNtNtNtCsjrHSEGnQ3l9_3std3sys5stdio4unix6StderrNtNtBa_2io5Write9write_fmtCskNItiDSreWu_5vzero"),
            "<std::sys::stdio::unix::Stderr as std::io::Write>::write_fmt");
}

TEST(RustV0, ClosuresShimsAndSuffixes) {
  EXPECT_EQ(v0("_RNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0CskNItiDSreWu_5vzero.llvm.15344243268820695718"),
            "std::rt::lang_start::<()>::{closure#0}");
  EXPECT_EQ(v0("_RNSNvYNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0INtNtNtCsgEmfK2I1SDS_4core3ops8function6FnOnceuE"
                "9call_once6vtableCskNItiDSreWu_5vzero.llvm.15344243268820695718"),
            "<std::rt::lang_start<()>::{closure#0} as core::ops::function::FnOnce<()>>::call_once::{shim:vtable#0}");
  EXPECT_EQ(v0("_RINvNtNtCsjrHSEGnQ3l9_3std6thread9lifecycle15spawn_uncheckedNCNvCskNItiDSreWu_5vzero4mains0_0yEB10_"),
            "std::thread::lifecycle::spawn_unchecked::<vzero::main::{closure#2}, u64>");
  EXPECT_EQ(v0("_RNvCs1234_4main8hot_loop.cold"), "main::hot_loop.cold");
}

TEST(RustV0, GenericArgumentTypes) {
  const std::string take = "_RINvCsbO1SKvWwsec_5vzero4take";
  auto t = [&](std::string_view arg) { return v0(take + std::string(arg) + "EB2_"); };
  EXPECT_EQ(t("Ahj4_"), "vzero::take::<[u8; 4]>");
  EXPECT_EQ(t("ThE"), "vzero::take::<(u8,)>");
  EXPECT_EQ(t("TlReE"), "vzero::take::<(i32, &str)>");
  EXPECT_EQ(t("u"), "vzero::take::<()>");
  EXPECT_EQ(t("Ot"), "vzero::take::<*mut u16>");
  EXPECT_EQ(t("PSn"), "vzero::take::<*const [i128]>");
  EXPECT_EQ(t("Qf"), "vzero::take::<&mut f32>");
  EXPECT_EQ(t("FG_QL0_xPhEb"), "vzero::take::<for<'a> fn(&'a mut i64, *const u8) -> bool>");
  EXPECT_EQ(t("FG_RL0_eERL0_e"), "vzero::take::<for<'a> fn(&'a str) -> &'a str>");
  EXPECT_EQ(t("FUKClEl"), "vzero::take::<unsafe extern \"C\" fn(i32) -> i32>");
  EXPECT_EQ(t("FhEz"), "vzero::take::<fn(u8) -> !>");
  EXPECT_EQ(t("INtNtCsgEmfK2I1SDS_4core6option6OptionaE"), "vzero::take::<core::option::Option<i8>>");
  EXPECT_EQ(t("RDNtNtNtNtCsgEmfK2I1SDS_4core4iter6traits8iterator8Iteratorp4ItemhEL_"),
            "vzero::take::<&dyn core::iter::traits::iterator::Iterator<Item = u8>>");
  EXPECT_EQ(t("RINtNtCslNYArtu3iFV_5alloc5boxed3BoxDINtNtNtCsgEmfK2I1SDS_4core3ops8function2FnThEEp6Output"
              "hNtNtB19_6marker4SendEL_E"),
            "vzero::take::<&alloc::boxed::Box<dyn core::ops::function::Fn<(u8,), Output = u8> + "
            "core::marker::Send>>");
}

TEST(RustV0, Constants) {
  EXPECT_EQ(v0("_RINvCsbO1SKvWwsec_5vzero4takeINtB2_4GridKjffffffffffffffff_Kb0_Kca_EEB2_"),
            "vzero::take::<vzero::Grid<18446744073709551615, false, '\\n'>>");
  EXPECT_EQ(v0("_RINvC1a1fKxn2a_KpE"), "a::f::<-42, _>");
  EXPECT_EQ(v0("_RINvC1a1fKo1ffffffffffffffff_E"), "a::f::<0x1ffffffffffffffff>");  // past u64
  EXPECT_EQ(v0("_RINvC1a1fKRe616263_E"), "a::f::<\"abc\">");
  EXPECT_EQ(v0("_RINvC1a1fKc1f600_E"), "a::f::<'\xF0\x9F\x98\x80'>");
}

TEST(RustV0, Identifiers) {
  EXPECT_EQ(v0("_RNvCskNItiDSreWu_5vzerou7caf_dma"), "vzero::caf\xC3\xA9");                   // café
  EXPECT_EQ(v0("_RNvCskNItiDSreWu_5vzerou7_1lqs71d"), "vzero::\xE6\x9D\xB1\xE4\xBA\xAC");  // 東京
  EXPECT_EQ(v0("_RNvC1a5__abcd"), "a::_abcd");  // `_` separates the length from a leading `_`
  // Punycode that does not decode stays readable, as rustc-demangle leaves it.
  EXPECT_EQ(v0("_RNvC1au5ab_99"), "a::punycode{ab-99}");
}

TEST(RustV0, MalformedOrTruncatedFail) {
  const std::string good = "_RNvMs0_CskNItiDSreWu_5vzeroINtB5_4GridKj3_Kb1_Kc78_E5cellsB5_";
  for (size_t n = 2; n < good.size(); ++n) {
    // Every cut either fails or (at a production boundary) reads a shorter name; never crashes.
    (void)demangle_rust_v0(good.substr(0, n));
  }
  EXPECT_FALSE(demangle_rust_v0("_R"));
  EXPECT_FALSE(demangle_rust_v0("_RNvC5vzero"));              // identifier longer than the name
  EXPECT_FALSE(demangle_rust_v0("_RNvCs_4main4mainxyz"));      // trailing garbage
  EXPECT_FALSE(demangle_rust_v0("_RB_"));                      // back-reference to itself
  EXPECT_FALSE(demangle_rust_v0("_RNvB2_4main"));              // back-reference forward
  EXPECT_FALSE(demangle_rust_v0("_R0NvC1a1f"));                // encoding version: none defined
  EXPECT_FALSE(demangle_rust_v0("_RNvC1a1f\xE9"));             // non-ASCII
  EXPECT_FALSE(demangle_rust_v0("_RINvC1a1fKb2_E"));           // bool that is 2
  EXPECT_FALSE(demangle_rust_v0("_RINvC1a1fKcd800_E"));        // char that is a surrogate
  EXPECT_FALSE(demangle_rust_v0("_RINvC1a1fRL1_hE"));          // lifetime bound by nothing
  EXPECT_FALSE(demangle_rust_v0("_RNvC1a1fZZZZZZZZZZZZZZZ_"));  // base-62 overflow
  EXPECT_FALSE(demangle_rust_v0("_RNvC99999999999999999999999a1f"));
  EXPECT_EQ(demangle("_RNvC5vzero"), "_RNvC5vzero");  // undecodable: kept as it is
}

TEST(RustV0, DeepNestingIsRefused) {
  // &&&&...u8: each level one type production; past the depth limit, refused.
  std::string deep = "_RINvC1a1f";
  for (int i = 0; i < 100'000; ++i) deep += 'R';
  deep += "hE";
  EXPECT_FALSE(demangle_rust_v0(deep));
  std::string shallow = "_RINvC1a1f" + std::string(20, 'R') + "hE";
  EXPECT_EQ(v0(shallow), "a::f::<" + std::string(20, '&') + "u8>");
}

std::string base62(size_t v) {
  if (v == 0) return "_";
  const char* digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string out = "_";
  for (v -= 1;; v /= 62) {
    out.insert(out.begin(), digits[v % 62]);
    if (v < 62) break;
  }
  return out;
}

TEST(RustV0, BackReferenceBlowUpIsBounded) {
  // Each tuple holds the previous one twice, by back-reference: the text
  // doubles at every level (2^60 tuples); the output limit stops it.
  std::string mangled = "_RINvC1a1fThhhhhhhh";
  size_t previous = 8;  // offset of the first tuple, counted after `_R`
  for (int i = 0; i < 60; ++i) {
    mangled += 'E';
    const size_t here = mangled.size() - 2;
    mangled += "TB" + base62(previous) + "B" + base62(previous);
    previous = here;
  }
  mangled += "EE";
  EXPECT_FALSE(demangle_rust_v0(mangled));
  // The same shape three levels deep is fine.
  EXPECT_EQ(v0("_RINvC1a1fThhETB7_B7_EE"), "a::f::<(u8, u8), ((u8, u8), (u8, u8))>");
}

TEST(RustV0, MutatedNamesNeverBreakTheLimits) {
  // Deterministic mutations of real names (a byte replaced, removed or
  // doubled): each either fails or gives text within the output limit.
  const std::string names[] = {
      "_RNvMs0_CskNItiDSreWu_5vzeroINtB5_4GridKj3_Kb1_Kc78_E5cellsB5_",
      "_RINvCsbO1SKvWwsec_5vzero4takeRINtNtCslNYArtu3iFV_5alloc5boxed3BoxDINtNtNtCsgEmfK2I1SDS_4core3ops8function2Fn"
      "ThEEp6OutputhNtNtB19_6marker4SendEL_EEB2_",
      "_RNSNvYNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0INtNtNtCsgEmfK2I1SDS_4core3ops8function6FnOnceuE9call_once6vtab"
      "leCskNItiDSreWu_5vzero",
      "_RINvCsbO1SKvWwsec_5vzero4takeFG_QL0_xPhEbEB2_",
  };
  const std::string alphabet = "_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  size_t decoded = 0;
  for (const std::string& name : names) {
    for (int i = 0; i < 20'000; ++i) {
      std::string m = name;
      for (int edits = 1 + static_cast<int>(next() % 3); edits > 0; --edits) {
        const size_t at = 2 + next() % (m.size() - 2);
        switch (next() % 3) {
          case 0: m[at] = alphabet[next() % alphabet.size()]; break;
          case 1: m.erase(at, 1); break;
          default: m.insert(at, 1, m[at]); break;
        }
      }
      if (auto out = demangle_rust_v0(m)) {
        ++decoded;
        EXPECT_LE(out->size(), RustDemangleLimits::max_output) << m;
      }
    }
  }
  EXPECT_GT(decoded, 0u);  // some mutations are still valid names
}

TEST(RustLegacy, HashDroppedAndEscapesDecoded) {
  auto legacy = [](std::string_view m) { return demangle_rust_legacy(m).value_or("<nullopt>"); };
  EXPECT_EQ(legacy("_ZN4core3num21_$LT$impl$u20$u64$GT$12wrapping_mul17h0123456789abcdefE"),
            "core::num::<impl u64>::wrapping_mul");
  EXPECT_EQ(legacy("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h1e2d3c4b5a697887E"),
            "std::rt::lang_start::{{closure}}");
  EXPECT_EQ(legacy("_ZN102_$LT$core..iter..adapters..map..Map$LT$I$C$F$GT$$u20$as$u20$core..iter..traits..iterator.."
                   "Iterator$GT$4next17h0123456789abcdefE"),
            "<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::next");
  EXPECT_EQ(legacy("_ZN4main8hot_loop17h0123456789abcdefE.llvm.1234"), "main::hot_loop");
  EXPECT_FALSE(demangle_rust_legacy("_ZN4main8hot_loopE"));            // no hash: C++'s main::hot_loop
  EXPECT_FALSE(demangle_rust_legacy("_ZN4main8hot_loopEv"));           // C++ function
  EXPECT_FALSE(demangle_rust_legacy("_ZN4main8hot_loop17h0123456789abcdefEv"));
  EXPECT_FALSE(demangle_rust_legacy("_ZN4main8hot_loop17h0123456789abcdef"));  // truncated
  EXPECT_FALSE(demangle_rust_legacy("_ZN4ma$XX$in17h0123456789abcdefE"));      // unknown escape
}

TEST(RustLegacy, ThroughDemangle) {
  EXPECT_EQ(demangle("_ZN4core3num21_$LT$impl$u20$u64$GT$12wrapping_mul17h0123456789abcdefE"),
            "core::num::<impl u64>::wrapping_mul");
  EXPECT_EQ(demangle("_ZNSt6vectorIlSaIlEEixEm"), "std::vector<long, std::allocator<long> >::operator[](unsigned long)");
}

}  // namespace
}  // namespace coz
