// `coz report --pprof` (export_pprof, protobuf_writer): the wire format
// against bytes worked out by hand, and the Profile message read back with
// a decoder of its own, written from profile.proto, not from our encoder.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "export_pprof.h"
#include "exported_stacks.h"
#include "profile.h"
#include "protobuf_writer.h"

namespace coz::analysis {
namespace {

using Names = std::pair<std::string, std::string>;  // a ValueType's type and unit

// --- a minimal protobuf reader: each field as its number and its varint or bytes ---

struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t value = 0;  // wire type 0
  std::string bytes;   // wire type 2
};

uint64_t read_varint(const std::string& in, size_t& pos) {
  uint64_t value = 0;
  for (int shift = 0; pos < in.size(); shift += 7) {
    auto byte = static_cast<unsigned char>(in[pos++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  ADD_FAILURE() << "varint runs past the end";
  return value;
}

std::vector<Field> decode(const std::string& in) {
  std::vector<Field> out;
  size_t pos = 0;
  while (pos < in.size()) {
    uint64_t key = read_varint(in, pos);
    Field f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire_type = static_cast<uint32_t>(key & 7);
    if (f.wire_type == 0) {
      f.value = read_varint(in, pos);
    } else if (f.wire_type == 2) {
      uint64_t size = read_varint(in, pos);
      EXPECT_LE(pos + size, in.size());
      f.bytes = in.substr(pos, size);
      pos += size;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire_type;
      return out;
    }
    out.push_back(f);
  }
  return out;
}

uint64_t get(const std::vector<Field>& fields, uint32_t number) {
  for (const Field& f : fields) {
    if (f.number == number) return f.value;
  }
  return 0;
}

std::vector<uint64_t> packed(const std::vector<Field>& fields, uint32_t number) {
  std::vector<uint64_t> out;
  for (const Field& f : fields) {
    if (f.number != number) continue;
    size_t pos = 0;
    while (pos < f.bytes.size()) out.push_back(read_varint(f.bytes, pos));
  }
  return out;
}

// The decoded Profile, its references resolved.
struct Decoded {
  std::vector<std::string> strings;
  std::vector<std::pair<std::string, std::string>> sample_types;
  struct Sample {
    std::vector<uint64_t> locations;
    std::vector<uint64_t> values;
  };
  std::vector<Sample> samples;
  std::map<uint64_t, std::vector<Field>> locations, functions, mappings;
  uint64_t duration = 0, period = 0;
  std::pair<std::string, std::string> period_type;

  std::string function_of(uint64_t location) const {  // via its first Line
    for (const Field& f : locations.at(location)) {
      if (f.number == 4) return strings.at(get(functions.at(get(decode(f.bytes), 1)), 2));
    }
    return "?";
  }
  uint64_t line_of(uint64_t location) const {
    for (const Field& f : locations.at(location)) {
      if (f.number == 4) return get(decode(f.bytes), 2);
    }
    return 0;
  }
  std::string file_of(uint64_t location) const {
    for (const Field& f : locations.at(location)) {
      if (f.number == 4) return strings.at(get(functions.at(get(decode(f.bytes), 1)), 4));
    }
    return "?";
  }
  std::vector<std::string> stack(size_t sample) const {  // leaf first, as stored
    std::vector<std::string> out;
    for (uint64_t id : samples.at(sample).locations) out.push_back(function_of(id));
    return out;
  }
};

Decoded decode_profile(const std::string& message) {
  Decoded d;
  std::vector<Field> top = decode(message);
  for (const Field& f : top) {
    if (f.number == 6) d.strings.push_back(f.bytes);
  }
  auto value_type = [&](const std::string& bytes) {
    std::vector<Field> v = decode(bytes);
    return std::pair(d.strings.at(get(v, 1)), d.strings.at(get(v, 2)));
  };
  for (const Field& f : top) {
    switch (f.number) {
      case 1: d.sample_types.push_back(value_type(f.bytes)); break;
      case 2: {
        std::vector<Field> s = decode(f.bytes);
        d.samples.push_back({packed(s, 1), packed(s, 2)});
        break;
      }
      case 3: d.mappings[get(decode(f.bytes), 1)] = decode(f.bytes); break;
      case 4: d.locations[get(decode(f.bytes), 1)] = decode(f.bytes); break;
      case 5: d.functions[get(decode(f.bytes), 1)] = decode(f.bytes); break;
      case 10: d.duration = f.value; break;
      case 11: d.period_type = value_type(f.bytes); break;
      case 12: d.period = f.value; break;
      default: break;
    }
  }
  return d;
}

Profile read(const std::string& text) {
  Profile p;
  std::istringstream in(text);
  read_profile(in, "test.coz", p);
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  return p;
}

const std::string example =
    "samples\tlocation=/src/app/main.cpp:42\tcount=10\tfunction=consume\n"
    "stack\tframes=/src/app/main.cpp:30;/src/app/main.cpp:42\tcount=7\n"
    "stack\tframes=/src/app/main.cpp:30;/src/app/main.cpp:42;__memmove_avx_unaligned_erms [libc.so.6]\tcount=2\n"
    "sampling\tsamples=12\tin-scope=10\tlost=0\tperiod=1000000\tcpu-time=12000000\tstacks-dropped=1\n"
    "runtime\ttime=30000000\n";

// --- the wire format, byte for byte (the examples of protobuf.dev's encoding guide) ---

TEST(ProtobufWriter, VarintsStringsAndPackedFieldsByHand) {
  ProtobufWriter w;
  w.varint(1, 150);  // key 0x08, then 150 = 0b1'0010110: 0x96 0x01
  EXPECT_EQ(w.data(), std::string("\x08\x96\x01", 3));

  ProtobufWriter s;
  s.bytes(2, "testing");  // key (2 << 3) | 2 = 0x12, length 7
  EXPECT_EQ(s.data(), std::string("\x12\x07testing", 9));

  ProtobufWriter p;
  p.packed(4, {3, 270, 86942});  // key 0x22, 6 bytes: 03, 8e 02, 9e a7 05
  EXPECT_EQ(p.data(), std::string("\x22\x06\x03\x8e\x02\x9e\xa7\x05", 8));

  ProtobufWriter outer;
  outer.message(3, w);  // key 0x1a, length 3, then the nested bytes
  EXPECT_EQ(outer.data(), std::string("\x1a\x03\x08\x96\x01", 5));

  ProtobufWriter big;
  big.varint(1, UINT64_MAX);  // ten bytes: nine 0xff then 0x01
  EXPECT_EQ(big.data(), std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));

  ProtobufWriter none;
  none.packed(1, {});
  EXPECT_TRUE(none.data().empty());
}

// --- the Profile message ---

TEST(ExportPprof, SamplesAreLeafFirstWithCountsAndCpuTime) {
  Profile profile = read(example);
  ASSERT_EQ(sampling_period_ns(profile), 1000000u);
  Decoded d = decode_profile(pprof_message(exported_stacks(profile), sampling_period_ns(profile), profile.runtime_ns));

  ASSERT_FALSE(d.strings.empty());
  EXPECT_EQ(d.strings[0], "");
  ASSERT_EQ(d.sample_types.size(), 2u);
  EXPECT_EQ(d.sample_types[0], Names("samples", "count"));
  EXPECT_EQ(d.sample_types[1], Names("cpu", "nanoseconds"));
  EXPECT_EQ(d.period_type, Names("cpu", "nanoseconds"));
  EXPECT_EQ(d.period, 1000000u);
  EXPECT_EQ(d.duration, 30000000u);

  // The profile's map order: the stack ending in main.cpp:42, the one
  // through memmove, then main.cpp:42's sample without a stack record.
  ASSERT_EQ(d.samples.size(), 3u);
  EXPECT_EQ(d.stack(0), (std::vector<std::string>{"consume", "main.cpp:30"}));
  EXPECT_EQ(d.samples[0].values, (std::vector<uint64_t>{7, 7000000}));
  EXPECT_EQ(d.stack(1), (std::vector<std::string>{"__memmove_avx_unaligned_erms", "consume", "main.cpp:30"}));
  EXPECT_EQ(d.samples[1].values, (std::vector<uint64_t>{2, 2000000}));
  EXPECT_EQ(d.stack(2), (std::vector<std::string>{"consume", "[stack not recorded]"}));
  EXPECT_EQ(d.samples[2].values, (std::vector<uint64_t>{1, 1000000}));

  uint64_t consume = d.samples[0].locations[0];
  EXPECT_EQ(d.line_of(consume), 42u);
  EXPECT_EQ(d.file_of(consume), "/src/app/main.cpp");
  EXPECT_EQ(d.line_of(d.samples[0].locations[1]), 30u);
  EXPECT_EQ(consume, d.samples[1].locations[1]);  // one location per frame

  // The callee's function has its library for a file; no line.
  uint64_t memmove = d.samples[1].locations[0];
  EXPECT_EQ(d.file_of(memmove), "libc.so.6");
  EXPECT_EQ(d.line_of(memmove), 0u);
  // No mappings (pprof would name the program after the first one), no addresses.
  EXPECT_TRUE(d.mappings.empty());
  for (const auto& [id, fields] : d.locations) {
    EXPECT_EQ(get(fields, 2), 0u);
    EXPECT_EQ(get(fields, 3), 0u);
  }

  // Every id is nonzero, every reference resolves (what pprof checks on load).
  for (const auto& s : d.samples) {
    for (uint64_t id : s.locations) EXPECT_EQ(d.locations.count(id), 1u) << id;
  }
  for (const auto& [id, fields] : d.functions) {
    EXPECT_NE(id, 0u);
    EXPECT_EQ(get(fields, 2), get(fields, 3));  // name = system_name
  }
}

TEST(ExportPprof, WithoutAPeriodOnlyCounts) {
  Profile profile = read("samples\tlocation=/src/a.c:3\tcount=4\n"
                         "stack\tframes=/src/a.c:3\tcount=4\n"
                         "sampling\tsamples=4\tin-scope=4\tlost=0\n");
  EXPECT_EQ(sampling_period_ns(profile), 0u);
  Decoded d = decode_profile(pprof_message(exported_stacks(profile), 0, 0));
  ASSERT_EQ(d.sample_types.size(), 1u);
  EXPECT_EQ(d.sample_types[0], Names("samples", "count"));
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_EQ(d.samples[0].values, (std::vector<uint64_t>{4}));
  EXPECT_EQ(d.period, 1u);
}

TEST(ExportPprof, PeriodsOfSeveralProcessesAreWeightedByTheirSamples) {
  Profile profile = read("sampling\tsamples=10\tin-scope=10\tlost=0\tperiod=1000\tcpu-time=1\n"
                         "sampling\tsamples=30\tin-scope=30\tlost=0\tperiod=2000\tcpu-time=1\n");
  EXPECT_EQ(sampling_period_ns(profile), 1750u);  // (10 x 1000 + 30 x 2000) / 40
}

TEST(ExportPprof, SystemFunctionsNameTheirProgram) {
  Profile profile = read("samples\tlocation=/src/s.c:4 [server]\tcount=1\tfunction=main\n"
                         "samples\tlocation=/src/c.c:4 [client]\tcount=1\tfunction=main\n"
                         "stack\tframes=/src/s.c:4 [server]\tcount=1\n"
                         "stack\tframes=/src/c.c:4 [client]\tcount=1\n");
  Decoded d = decode_profile(pprof_message(exported_stacks(profile), 0, 0));
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.stack(0), std::vector<std::string>{"main [client]"});
  EXPECT_EQ(d.stack(1), std::vector<std::string>{"main [server]"});
  EXPECT_EQ(d.file_of(d.samples[1].locations[0]), "/src/s.c");
}

// --- gzip and the file ---

std::string gunzip(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  int status = Z_OK;
  while (status == Z_OK) {
    char chunk[4096];
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    status = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - zs.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

TEST(ExportPprof, GzipRoundTrips) {
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); i += 7) data[i] = static_cast<char>(i);
  std::string packed = gzip(data);
  ASSERT_GE(packed.size(), 2u);
  EXPECT_EQ(packed.substr(0, 2), "\x1f\x8b");  // the gzip magic
  EXPECT_EQ(gunzip(packed), data);
  EXPECT_EQ(gunzip(gzip("")), "");
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/coz_export_test.XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() { [[maybe_unused]] int rc = std::system(("rm -rf " + path_).c_str()); }
  const std::string& path() const { return path_; }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    DIR* dir = opendir(path_.c_str());
    while (dirent* e = readdir(dir)) {
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    }
    closedir(dir);
    return out;
  }

 private:
  std::string path_;
};

TEST(ExportPprof, WritesTheFileWholeAndNothingElse) {
  TempDir dir;
  Profile profile = read(example);
  std::string error;
  std::string path = dir.path() + "/cpu.pb.gz";
  ASSERT_TRUE(write_pprof_file(profile, exported_stacks(profile), path, error)) << error;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"cpu.pb.gz"});  // no temporary file left
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Decoded d = decode_profile(gunzip(bytes));
  EXPECT_EQ(d.samples.size(), 3u);
  EXPECT_EQ(d.duration, 30000000u);
}

TEST(ExportPprof, AnUnwritablePathIsOneLine) {
  TempDir dir;
  Profile profile = read(example);
  std::string error;
  EXPECT_FALSE(write_pprof_file(profile, exported_stacks(profile), dir.path() + "/missing/cpu.pb.gz", error));
  EXPECT_EQ(error, "cannot write " + dir.path() + "/missing/cpu.pb.gz: No such file or directory");
  EXPECT_FALSE(write_pprof_file(profile, exported_stacks(profile), dir.path(), error));  // a directory
  EXPECT_EQ(error, "cannot write " + dir.path() + ": Is a directory");
  EXPECT_TRUE(dir.entries().empty());  // the temporary file removed
}

}  // namespace
}  // namespace coz::analysis
