#include "generator.h"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace coz_space {

uint64_t Draws::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Draws::uniform(double low, double high) {
  const double unit = double(next() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

double Draws::log_uniform(double low, double high) { return std::exp(uniform(std::log(low), std::log(high))); }

int Draws::integer(int low, int high) { return low + int(next() % uint64_t(high - low + 1)); }

std::vector<std::string> SpaceProgram::args() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : params) out.push_back(key + "=" + value);
  return out;
}

std::string SpaceProgram::describe() const {
  std::string out = structure;
  for (const auto& [key, value] : params) out += " " + key + "=" + value;
  return out;
}

namespace {

// Work per item or round, microseconds: the space's bounds.
constexpr double kMinWorkUs = 1;
constexpr double kMaxWorkUs = 10'000;
// Hand-offs per second the draws aim at (the program's own rate, printed in
// its output, is what it reaches on the machine).
constexpr double kMinRate = 100;
constexpr double kMaxRate = 100'000;

std::string work(double us) { return fmt::format("{:.1f}", std::clamp(us, kMinWorkUs, kMaxWorkUs)); }

// Each structure's draw. `period` is 1 / the drawn hand-off rate, in us.
void draw_pipeline(Draws& d, int cores, double period, SpaceProgram& p) {
  const int stages = d.integer(2, 4);
  const int bottleneck = d.integer(0, stages - 1);
  p.params = {{"stages", std::to_string(stages)},
              {"capacity", std::to_string(int(std::floor(d.log_uniform(1, 1025))))}};
  for (int k = 0; k < stages; ++k) {
    const double share = k == bottleneck ? 1.0 : d.uniform(0.1, 1.0);
    p.params.push_back({"stage" + std::to_string(k), work(period * share)});
    p.lines.push_back("stage" + std::to_string(k));
  }
  p.threads = stages;
  (void)cores;
}

void draw_lock(Draws& d, int cores, double period, SpaceProgram& p) {
  const int threads = d.integer(2 * cores, 4 * cores);
  const double critical_share = d.uniform(0.01, 0.9);
  const double round = period * threads;  // each thread takes the lock once a round
  p.params = {{"threads", std::to_string(threads)},
              {"outside", work(round * (1 - critical_share))},
              {"critical", work(round * critical_share)}};
  p.lines = {"outside", "critical"};
  p.threads = threads;
}

void draw_forkjoin(Draws& d, int cores, double period, SpaceProgram& p) {
  const int workers = d.integer(2, 4 * cores);
  p.params = {{"workers", std::to_string(workers)},
              {"part_a", work(period * d.uniform(0.2, 1.0))},
              {"part_b", work(period * d.uniform(0.2, 1.0))},
              {"serial", work(period * d.uniform(0.01, 0.3))}};
  p.lines = {"part_a", "part_b", "serial"};
  p.threads = workers;
}

void draw_pool(Draws& d, int cores, double period, SpaceProgram& p) {
  const int workers = d.integer(1, 4 * cores);
  p.params = {{"workers", std::to_string(workers)},
              {"capacity", std::to_string(int(std::floor(d.log_uniform(1, 1025))))},
              {"dispatch", work(period * d.uniform(0.1, 1.0))},
              {"task", work(period * std::min(workers, cores) * d.uniform(0.1, 1.0))}};
  p.lines = {"dispatch", "task"};
  p.threads = workers + 1;
}

void draw_rpc(Draws& d, int cores, double period, SpaceProgram& p) {
  const int clients = d.integer(1, 2 * cores);
  const int transport = d.integer(0, 2);
  const bool processes = d.integer(0, 3) == 0;
  const double server = period * d.uniform(0.1, 1.0);
  p.params = {{"clients", std::to_string(clients)},
              {"transport", std::to_string(transport)},
              {"processes", processes ? "1" : "0"},
              {"client", work(period * clients * d.uniform(0.1, 1.0))},
              {"server", work(server)},
              {"log", work(server * d.uniform(0.05, 1.0))}};
  p.lines = {"client", "server", "log"};
  p.threads = clients + 1;
  p.system = processes;
}

void draw_rwlock(Draws& d, int cores, double period, SpaceProgram& p) {
  const int threads = d.integer(cores, 4 * cores);
  const double round = period * threads;
  p.params = {{"threads", std::to_string(threads)},
              {"write_every", std::to_string(int(std::floor(d.log_uniform(1, 101))))},
              {"outside", work(round * d.uniform(0.05, 0.9))},
              {"read", work(round * d.uniform(0.05, 0.9))},
              {"write", work(round * d.uniform(0.05, 1.0))}};
  p.lines = {"outside", "read", "write"};
  p.threads = threads;
}

struct Structure {
  const char* name;
  void (*draw)(Draws&, int cores, double period_us, SpaceProgram&);
};
constexpr Structure kStructures[] = {
    {"pipeline", draw_pipeline}, {"lock", draw_lock}, {"forkjoin", draw_forkjoin},
    {"pool", draw_pool},         {"rpc", draw_rpc},   {"rwlock", draw_rwlock},
};

}  // namespace

std::vector<SpaceProgram> generate(uint64_t seed, int count, int cores) {
  std::vector<SpaceProgram> programs;
  for (int i = 0; i < count; ++i) {
    // One stream per program: program i is the same whatever the count.
    Draws d(seed ^ (0x9e3779b97f4a7c15ULL * uint64_t(i + 1)));
    const Structure& s = kStructures[size_t(i) % std::size(kStructures)];
    SpaceProgram p;
    p.index = i;
    p.structure = s.name;
    p.binary = std::string("space_") + s.name;
    p.drawn_rate = d.log_uniform(kMinRate, kMaxRate);
    s.draw(d, cores, 1e6 / p.drawn_rate, p);
    programs.push_back(std::move(p));
  }
  return programs;
}

uint64_t fresh_seed() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  Draws d(uint64_t(t.tv_sec) * 1'000'000'007ULL ^ uint64_t(t.tv_nsec) ^ (uint64_t(getpid()) << 32));
  return d.next() % 1'000'000'000;  // short enough to type back
}

}  // namespace coz_space
