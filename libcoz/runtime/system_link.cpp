#include "system_link.h"

#include <algorithm>
#include <cstring>

#include "log.h"
#include "sampler.h"

namespace coz {

namespace {

/// How often a follower writes its samples to the profile, and looks for its leader.
constexpr uint64_t follower_write_interval_ns = 200'000'000;
constexpr uint64_t leader_check_interval_ns = 50'000'000;
/// A follower's longest wait on the shared word (it also drains its rings, when quiet).
constexpr uint64_t follower_wait_ns = 20'000'000;
/// How long a follower waits for its threads to pay, at most.
constexpr uint64_t longest_settle_ns = 2'000'000'000;

/// Copies the selected name, written by the leader while experiment_seq was
/// even, as of `seq`; false if the leader moved on meanwhile.
bool read_selection(const SystemShared& shared, uint32_t seq, std::string& name) {
  char copy[SharedLine::name_size];
  std::memcpy(copy, shared.selected, sizeof copy);
  copy[sizeof copy - 1] = '\0';
  std::atomic_thread_fence(std::memory_order_acquire);
  if (shared.experiment_seq.load(std::memory_order_acquire) != seq) return false;
  name = copy;
  return true;
}

}  // namespace

SystemLink::SystemLink(Runtime& rt) : rt_(rt), shared_(*rt.system) {
  FutexGuard guard(rt_.lines_lock);
  for (const SourceLine& line : rt_.lines.lines()) published_.push_back(line.samples.load(std::memory_order_relaxed));
}

bool SystemLink::lead() {
  const int32_t me = sys::getpid();
  int32_t current = shared_.leader.load(std::memory_order_acquire);
  for (;;) {
    if (current == me) return true;
    if (current != 0 && process_alive(current)) return false;
    if (shared_.leader.compare_exchange_weak(current, me, std::memory_order_acq_rel)) break;
  }
  if (current != 0) log::info("system: the leader (pid {}) is gone; pid {} runs the experiments", current, me);
  end_orphaned_experiment();
  return true;
}

void SystemLink::end_orphaned_experiment() {
  if (!(shared_.experiment_seq.load(std::memory_order_acquire) & 1u)) return;
  shared_.deaths.fetch_add(1, std::memory_order_acq_rel);  // the experiment is not counted
  rt_.ledger.end_experiment();
  announce(false);
}

void SystemLink::release_lead() {
  int32_t me = sys::getpid();
  if (shared_.leader.compare_exchange_strong(me, 0, std::memory_order_acq_rel)) shared_futex_wake_all(shared_.experiment_seq);
}

void SystemLink::leave() {
  if (rt_.system_slot) rt_.system_slot->state.store(ProcessSlot::Exited, std::memory_order_release);
}

bool SystemLink::leader_gone() const {
  int32_t leader = shared_.leader.load(std::memory_order_acquire);
  return leader == 0 || !process_alive(leader);
}

// ---- samples and choice ----------------------------------------------------------

void SystemLink::publish_samples() {
  FutexGuard guard(rt_.lines_lock);
  auto& lines = rt_.lines.lines();
  published_.resize(lines.size(), 0);
  shared_lines_.resize(lines.size(), nullptr);
  for (uint32_t i : sampled_lines_.refresh(rt_.lines)) {
    uint64_t now = lines[i].samples.load(std::memory_order_relaxed);
    if (now == published_[i]) continue;
    if (!shared_lines_[i]) shared_lines_[i] = shared_.lines.find_or_claim(lines[i].name());
    if (!shared_lines_[i]) continue;  // the table is full: this line cannot be chosen elsewhere
    shared_lines_[i]->samples.fetch_add(now - published_[i], std::memory_order_relaxed);
    published_[i] = now;
  }
}

bool SystemLink::gather_samples() {
  constexpr uint64_t timeout_ns = 10'000'000;  // a follower settles in about a sample period
  // Called between experiments (the word is even): +2 keeps it so, a
  // change the followers act on as at an end, by settling and publishing.
  shared_.experiment_seq.fetch_add(2, std::memory_order_acq_rel);
  shared_futex_wake_all(shared_.experiment_seq);
  const uint64_t deadline = sys::monotonic_ns() + timeout_ns;
  while (!followers_settled()) {
    if (sys::monotonic_ns() >= deadline) return false;
    sys::sleep_ns(100'000);
  }
  return true;
}

void SystemLink::start_choice() {
  size_t n = shared_.lines.size();
  choice_base_.resize(n);
  for (size_t i = 0; i < n; ++i) choice_base_[i] = shared_.lines.entries[i].samples.load(std::memory_order_relaxed);
}

std::optional<std::string> SystemLink::choose(ExperimentScheduler& scheduler) {
  size_t n = shared_.lines.size();
  choice_base_.resize(n, 0);  // entries added since: all their samples are new
  std::vector<uint64_t> fresh(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const SharedLine& entry = shared_.lines.entries[i];
    if (entry.state.load(std::memory_order_acquire) != SharedLine::Ready) continue;
    fresh[i] = entry.samples.load(std::memory_order_relaxed) - choice_base_[i];
  }
  size_t chosen = scheduler.choose_line(fresh);
  if (chosen == ExperimentScheduler::no_line) return std::nullopt;
  return std::string(shared_.lines.entries[chosen].name);
}

std::string SystemLink::fixed_line_name() {
  if (shared_.fixed_line_ready.load(std::memory_order_acquire) != 2) return "";  // none yet, or being written
  return shared_.fixed_line;
}

void SystemLink::publish_fixed_line(const std::string& name) {
  if (name.size() >= sizeof shared_.fixed_line) return;
  uint32_t expected = 0;
  // 0 -> 1 (writing) -> 2 (ready): the first process to resolve the line names it.
  if (!shared_.fixed_line_ready.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  std::memcpy(shared_.fixed_line, name.c_str(), name.size() + 1);
  shared_.fixed_line_ready.store(2, std::memory_order_release);
}

SourceLine* SystemLink::unit_named(const std::string& name) {
  FutexGuard guard(rt_.lines_lock);
  auto& lines = rt_.lines.lines();
  if (indexed_lines_ != lines.size()) {  // libraries loaded since: index again
    names_.clear();
    for (SourceLine& line : lines) names_.emplace_back(line.name(), &line);
    std::sort(names_.begin(), names_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    indexed_lines_ = lines.size();
  }
  auto it = std::lower_bound(names_.begin(), names_.end(), name,
                             [](const auto& entry, const std::string& n) { return entry.first < n; });
  if (it == names_.end() || it->first != name) return nullptr;
  return it->second->experiment_unit();
}

// ---- the leader's experiment -----------------------------------------------------

void SystemLink::announce_selection(const std::string& name, uint64_t period_ns) {
  size_t n = std::min(name.size(), sizeof shared_.selected - 1);
  std::memcpy(shared_.selected, name.data(), n);
  shared_.selected[n] = '\0';
  shared_.experiment_period_ns.store(period_ns, std::memory_order_relaxed);
  shared_.selected_samples.store(0, std::memory_order_relaxed);
}

void SystemLink::announce(bool crediting) {
  // Only the leader writes the word: odd while crediting.
  if (((shared_.experiment_seq.load(std::memory_order_acquire) & 1u) != 0) == crediting) return;
  shared_.experiment_seq.fetch_add(1, std::memory_order_acq_rel);
  shared_futex_wake_all(shared_.experiment_seq);
}

bool SystemLink::followers_settled() {
  const uint32_t seq = shared_.experiment_seq.load(std::memory_order_acquire);
  const int32_t me = sys::getpid();
  bool settled = true;
  size_t n = std::min<size_t>(shared_.process_count.load(std::memory_order_acquire), SystemShared::process_capacity);
  for (size_t i = 0; i < n; ++i) {
    ProcessSlot& slot = shared_.processes[i];
    if (slot.state.load(std::memory_order_acquire) != ProcessSlot::Live) continue;
    int32_t pid = slot.pid.load(std::memory_order_relaxed);
    if (pid == me || slot.settled_seq.load(std::memory_order_acquire) == seq) continue;
    ProcessFate fate = process_fate(pid);
    if (fate == ProcessFate::Exited) {  // by _exit, which runs no exit handler: it just left
      uint32_t live = ProcessSlot::Live;
      slot.state.compare_exchange_strong(live, ProcessSlot::Exited, std::memory_order_acq_rel);
      continue;
    }
    if (fate == ProcessFate::Killed) {
      uint32_t live = ProcessSlot::Live;
      if (slot.state.compare_exchange_strong(live, ProcessSlot::Dead, std::memory_order_acq_rel)) {
        shared_.deaths.fetch_add(1, std::memory_order_acq_rel);
        log::info("system: pid {} died during an experiment: that experiment is not counted", pid);
      }
      continue;
    }
    settled = false;
  }
  return settled;
}

// ---- a follower ------------------------------------------------------------------

bool SystemLink::follow(const std::function<bool()>& stop, const std::function<void()>& write_samples) {
  uint32_t seen = shared_.experiment_seq.load(std::memory_order_acquire) ^ 1u;  // act on the first look
  uint64_t next_write = sys::monotonic_ns() + follower_write_interval_ns;
  uint64_t next_leader_check = 0;
  while (!stop()) {
    drain_unsignalled_rings(rt_);
    publish_samples();
    uint32_t seq = shared_.experiment_seq.load(std::memory_order_acquire);
    if (seq != seen) {
      if (seq & 1u) {
        follow_begin();
      } else {
        follow_end(seq);
      }
      seen = seq;
    }
    uint64_t now = sys::monotonic_ns();
    if (now >= next_write) {
      write_samples();
      next_write = now + follower_write_interval_ns;
    }
    if (now >= next_leader_check) {
      if (leader_gone()) return true;
      next_leader_check = now + leader_check_interval_ns;
    }
    shared_futex_wait(shared_.experiment_seq, seq, std::min(follower_wait_ns, unsignalled_drain_interval_ns(rt_)));
  }
  return false;
}

void SystemLink::follow_begin() {
  uint32_t seq = shared_.experiment_seq.load(std::memory_order_acquire);
  std::string name;
  if (!(seq & 1u) || !read_selection(shared_, seq, name)) return;  // over already: the next look acts
  SourceLine* unit = unit_named(name);
  uint64_t period = shared_.experiment_period_ns.load(std::memory_order_relaxed);
  if (period != 0) set_sample_period(rt_, period);
  rt_.experiment.selected_samples.store(0, std::memory_order_relaxed);
  rt_.experiment.selected.store(unit, std::memory_order_release);
}

void SystemLink::follow_end(uint32_t seq) {
  rt_.experiment.selected.store(nullptr, std::memory_order_release);
  set_sample_period(rt_, rt_.config.sample_period_ns);
  // As the leader's drain_debts: every thread pays what it owes, or is blocked.
  const uint64_t largest_debt = hurry_threads_that_owe(rt_);
  const uint64_t deadline =
      sys::monotonic_ns() + std::min(longest_settle_ns, 2 * rt_.config.sample_period_ns + largest_debt);
  while (!every_thread_settled(rt_) && sys::monotonic_ns() < deadline) sys::sleep_ns(100'000);
  shared_.selected_samples.fetch_add(rt_.experiment.selected_samples.exchange(0, std::memory_order_acq_rel),
                                     std::memory_order_acq_rel);
  publish_samples();  // the leader may be about to choose (gather_samples)
  if (rt_.system_slot) rt_.system_slot->settled_seq.store(seq, std::memory_order_release);
}

}  // namespace coz
