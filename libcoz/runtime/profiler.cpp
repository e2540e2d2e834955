#include "profiler.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "descriptors.h"
#include "experiment_cycle.h"
#include "experiment_window.h"
#include "log.h"
#include "mirrored_calls.h"
#include "real.h"
#include "reentrancy.h"
#include "sampler.h"
#include "thread_registry.h"

namespace coz {

namespace {

ProfileWriter::SamplingTotals sampling_totals(const Runtime& rt) {
  const SamplingStats& stats = rt.stats;
  const uint64_t period_ns = rt.config.sample_period_ns;
  ProfileWriter::SamplingTotals t;
  // Counted samples are one per configured period (counted_in_profile), a
  // CPU-time timer's signal as many as the periods it says went by.
  t.period_ns = period_ns;
  t.cpu_time_ns = sys::process_cpu_ns();
  t.samples = stats.samples.load(std::memory_order_relaxed);
  t.in_scope = stats.in_scope();
  t.lost = stats.lost.load(std::memory_order_relaxed);
  for (size_t i = 0; i < std::size(stats.unwind_stops); ++i) {
    auto stop = static_cast<UnwindStop>(i);
    std::string key = stop == UnwindStop::Outermost ? "unwound" : std::string("stopped-") + unwind_stop_name(stop);
    t.walks.emplace_back(std::move(key), stats.unwind_stops[i].load(std::memory_order_relaxed));
  }
  t.stacks_dropped = rt.stacks.dropped();
  t.waits_dropped = rt.blocked.dropped();
  t.paused_ns = rt.ledger.total_paused();
  const uint64_t steal = sys::machine_steal_ns();
  if (rt.start_steal_ns != 0 && steal > rt.start_steal_ns) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    t.steal_ns = steal - rt.start_steal_ns;
    t.machine_ns = (sys::monotonic_ns() - rt.start_ns) * static_cast<uint64_t>(cpus > 0 ? cpus : 1);
  }
  t.pid = sys::getpid();
  return t;
}

constexpr const char* end_to_end_point = "end-to-end";
}

uint64_t Profiler::SystemClock::now_ns() { return sys::monotonic_ns(); }
void Profiler::SystemClock::sleep_ns(uint64_t ns) { sys::sleep_ns(ns); }
int Profiler::RuntimeCensus::registered_threads() { return live_thread_count(); }
std::optional<ProcessThreads> Profiler::RuntimeCensus::process_threads() { return read_process_threads(); }

/// At each of this thread's wake-ups: the rings no signal drains, and a
/// program thread's capability call to make here too (mirrored_calls.h).
void Profiler::on_wake() {
  drain_unsignalled_rings(rt_);
  serve_mirrored_call();
}

template <typename Done>
bool Profiler::wait_unless_stopping(uint64_t ns, uint64_t step_ns, bool poll_points, Done done) {
  step_ns = quiet_step(step_ns);
  auto stop = [&] { return stopping_.load(std::memory_order_acquire) || program_gone(); };
  auto work = [&] {
    if (poll_points) poll_in_flight();
    on_wake();
    // The step counts from the drain: unmapping takes part of it, not more.
    unmap_retired_rings(step_ns / 2);
  };
  return wait_in_steps(clock_, ns, step_ns, stop, done, work);
}

Profiler::Profiler(Runtime& rt)
    : rt_(rt),
      system_(rt.system ? std::make_unique<SystemLink>(rt) : nullptr),
      scheduler_(rt.config, sys::monotonic_ns() ^ static_cast<uint64_t>(sys::getpid())),
      two_phase_(TwoPhase::Limits{.function_experiments = rt.config.two_phase_experiments}) {
  start_line_choice();  // in a forked child: the parent's samples are not this process's
}

void Profiler::open_control() {
  if (rt_.config.control_path.empty()) return;
  int fd = open_control_file(rt_.config.control_path.c_str());
  if (fd >= 0) control_fd_ = descriptors::adopt(fd);
  else log::debug("cannot open the control file {}: experiments go by samples alone", rt_.config.control_path);
}

void Profiler::open_own_files() {
  descriptors::enter_own_table();  // refused: the files go to the program's table, as high as they can
  open_process_stat();
  open_control();
  rt_.writer.flush();  // the start-up record, written before this thread had the file
}

bool Profiler::start() {
  if (descriptors::usable_here()) open_control();
  // The thread must not take the program's signals, nor our sample signal.
  // Set on the new thread alone: blocking them in the calling thread
  // meanwhile looked like a program that blocks the sample signal
  // (watch_signal_delivery in sampler.cpp).
  sigset_t all;
  sigfillset(&all);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setsigmask_np(&attr, &all);
  pthread_t thread;
  note_profiler_thread(-1);  // starting: a program thread may need it before it runs (mirrored_calls.h)
  int err = real::functions().pthread_create(&thread, &attr, &Profiler::thread_main, this);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    note_profiler_thread(0);
    log::warn("cannot start the profiler thread; no experiments will run");
    return false;
  }
  return true;
}

void* Profiler::thread_main(void* self) {
  RuntimeSection::enter_for_good();  // nothing this thread calls is the program's
  auto* profiler = static_cast<Profiler*>(self);
  note_profiler_thread(sys::gettid());
  if (descriptors::own_table()) profiler->open_own_files();
  profiler->take_realtime_priority();
  profiler->run();
  // Every program thread is gone (main called pthread_exit, then the others
  // exited): finish the profile and exit, so that glibc, seeing its last
  // thread leave, ends the process with status 0 as it would without us.
  if (profiler->program_gone()) profiler->shutdown();
  // The main thread left without exit() (a raw SYS_exit, or killed under
  // seccomp strict mode) and no other thread of the program is left: the
  // process would have ended when that thread did.
  if (profiler->exit_watch_.found_left_alone()) profiler->end_process_as_main_left();
  return nullptr;
}

/// The profiler thread mostly sleeps, but when it wakes its timing matters:
/// an experiment ends only once the program threads have paid their delays
/// (drain_debts), and with every core busy an ordinary thread waking from a
/// 0.1 ms sleep waited up to 5 ms for a core here, all that time counted in
/// the experiment. With the lowest real-time priority it runs as soon as it
/// wakes (drains took ~0.6 ms). It never spins, so it cannot starve the
/// program. Needs CAP_SYS_NICE or an RLIMIT_RTPRIO (root has both);
/// without it, the thread keeps its ordinary priority.
void Profiler::take_realtime_priority() {
  sched_param param{};
  param.sched_priority = 1;
  int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
  if (err != 0) log::debug("profiler thread keeps its ordinary priority (SCHED_FIFO refused: error {})", err);
}

/// Every program thread has exited, or a terminating signal is ending the
/// process (shutdown_from_signal): either way, the profile must be finished.
bool Profiler::program_gone() {
  return live_thread_count() == 0 || shutdown_requested_.load(std::memory_order_acquire) ||
         exit_requested_.load(std::memory_order_acquire) ||
         exit_watch_.main_left_alone();
}

void Profiler::end_process_as_main_left() {
  // Another thread outlived the main thread: the process ends when the last
  // thread leaves, with that thread's status, which is 0 for a thread that
  // glibc ended; returning from this thread does just that.
  if (exit_watch_.main_outlived()) pthread_exit(nullptr);
  // The main thread was the last: the status is its own. Killed (seccomp
  // strict kills a thread with SIGKILL), the process dies of the same signal.
  const int status = exit_watch_.main_status();
  if (WIFSIGNALED(status)) sys::raw_syscall6(SYS_tgkill, sys::getpid(), sys::gettid(), WTERMSIG(status));
  // Not through glibc's thread exit, which would leave status 0: this
  // thread's exit is the process's, with the main thread's status. No
  // atexit handler runs, as none would have.
  for (;;) sys::raw_syscall6(SYS_exit, WIFEXITED(status) ? WEXITSTATUS(status) : 0);
}

void Profiler::shutdown_from_signal(uint64_t timeout_ns) {
  shutdown_requested_.store(true, std::memory_order_release);
  wait_until_shut_down(timeout_ns);
}

bool Profiler::shutdown_on_profiler_thread(uint64_t timeout_ns, bool may_sleep) {
  exit_requested_.store(true, std::memory_order_release);
  return wait_until_shut_down(timeout_ns, may_sleep);
}

bool Profiler::wait_until_shut_down(uint64_t timeout_ns, bool may_sleep) {
  uint64_t deadline = sys::monotonic_ns() + timeout_ns;  // the vDSO's clock: no system call
  while (!shut_down_.load(std::memory_order_acquire) && sys::monotonic_ns() < deadline) {
    if (may_sleep) sys::sleep_ns(1'000'000);
    else __builtin_ia32_pause();
  }
  return shut_down_.load(std::memory_order_acquire);
}

void Profiler::run() {
  if (system_) return run_in_system();
  Steps steps{*this};
  run_experiment_cycles(steps, rt_.config.end_to_end, rt_.config.cooloff_ns);
}

void Profiler::run_in_system() {
  auto stop = [&] { return stopping_.load(std::memory_order_acquire) || program_gone(); };
  while (!system_->lead()) {
    if (!system_->follow(stop, [&] {
          FutexGuard guard(lock_);
          if (!stopping_.load(std::memory_order_acquire)) write_new_samples();
        })) {
      return;  // stopping
    }
  }
  log::debug("system: pid {} runs the experiments", sys::getpid());
  start_line_choice();
  Steps steps{*this};
  run_experiment_cycles(steps, rt_.config.end_to_end, rt_.config.cooloff_ns);
}

bool Profiler::choose_in_system(ExperimentChoice& choice) {
  auto stop = [&] { return stopping_.load(std::memory_order_acquire) || program_gone(); };
  const bool fixed = !rt_.config.fixed_line.empty();
  // A --fixed-line no process has code at yet: said once (a library loaded
  // later, or a program started later, may still have it).
  constexpr uint64_t fixed_line_patience_ns = 1'000'000'000;
  const uint64_t warn_at = sys::monotonic_ns() + fixed_line_patience_ns;
  bool gathered = false;
  while (!stop()) {
    on_wake();
    system_->publish_samples();
    std::optional<std::string> name;
    if (fixed) {
      if (std::string n = system_->fixed_line_name(); !n.empty()) name = std::move(n);
      else if (!warned_fixed_line_ && sys::monotonic_ns() >= warn_at) {
        log::warn("--fixed-line {}: no process of the run has code at that line yet: no experiment runs until one has",
                  rt_.config.fixed_line);
        warned_fixed_line_ = true;
      }
    } else {
      // Once: a follower that finds nothing to publish yet publishes on its
      // own when it wakes, and waking every follower at each poll of an
      // idle program would cost them a wake-up every few ms.
      if (!gathered) {
        system_->gather_samples();
        gathered = true;
      }
      name = system_->choose(scheduler_);
    }
    if (name) {
      choice.name = std::move(*name);
      choice.line = system_->unit_named(choice.name);
      return true;
    }
    sys::sleep_ns(quiet_step(rt_.config.poll_interval_ns));
  }
  return false;
}

bool Profiler::Steps::stopping() { return p.stopping_.load(std::memory_order_acquire); }

bool Profiler::Steps::stop_asked() {
  p.read_control();
  return !p.control_.stop.empty();
}

void Profiler::Steps::stop_experiments() { p.stop_experiments(); }

bool Profiler::Steps::choose(ExperimentChoice& choice) {
  const Config& c = p.rt_.config;
  if (p.system_) {
    if (!p.choose_in_system(choice)) return false;  // stopping
  } else {
    choice.line = c.fixed_line.empty() ? p.wait_for_line() : p.wait_for_fixed_line();
    if (!choice.line) return false;  // stopping
    choice.name = choice.line->name();
  }
  // The monitor's baseline share holds while it aims (control.h).
  const bool aimed = !p.control_.aim.empty() && p.control_.baseline_share > 0;
  choice.speedup = p.scheduler_.choose_speedup(aimed ? std::optional<double>(p.control_.baseline_share) : std::nullopt);
  choice.length_ns = c.end_to_end ? UINT64_MAX : p.scheduler_.choose_length(p.visit_rates());
  return true;
}

void Profiler::Steps::drain_samples() { drain_unsignalled_rings(p.rt_); }

bool Profiler::Steps::begin(const ExperimentChoice& choice) {
  FutexGuard guard(p.lock_);
  if (stopping()) return false;
  p.begin(choice);
  return true;
}

void Profiler::Steps::run_to_the_end() { p.idle_until_stopping(); }

bool Profiler::Steps::sleep(uint64_t ns, bool poll_points) { return p.sleep_unless_stopping(ns, poll_points); }

bool Profiler::Steps::stop_crediting() {
  FutexGuard guard(p.lock_);
  if (stopping()) return false;
  p.stop_crediting();
  return true;
}

bool Profiler::Steps::drain_debts(uint64_t length_ns) { return p.drain_debts(length_ns); }

bool Profiler::Steps::end_and_write() {
  // Ended and written under the lock shutdown() takes: an exit meanwhile
  // waits for these records, then writes only what is newer (written
  // outside it, both took the same samples, or the exit ended the process
  // between taking and writing them).
  FutexGuard guard(p.lock_);
  if (stopping()) return false;
  ExperimentResult result;
  if (p.end(result)) {
    p.two_phase_.record(result);
    p.rt_.writer.write_experiment(result);
  }
  // The samples in any case: an experiment not recorded (Profiler::end)
  // still ran, and a process that a signal kills without the runtime's
  // last records keeps what was written so far.
  p.write_new_samples();
  return true;
}

void Profiler::Steps::after_experiment() {
  set_sample_period(p.rt_, p.rt_.config.sample_period_ns);
  p.start_line_choice();
}

uint64_t Profiler::quiet_step(uint64_t step_ns) const {
  return std::min(step_ns, unsignalled_drain_interval_ns(rt_));
}

SourceLine* Profiler::wait_for_fixed_line() {
  while (!stopping_.load(std::memory_order_acquire) && !program_gone()) {
    if (SourceLine* line = rt_.fixed_line.load(std::memory_order_acquire)) return line;
    on_wake();
    sys::sleep_ns(quiet_step(rt_.config.poll_interval_ns));  // its library is not loaded yet
  }
  return nullptr;
}

/// Waits for a sampled line, every half poll interval while the program
/// is sampled. While nothing is (a server between requests), the wait
/// doubles up to idle_wake_ns: each wake-up costs ~50 us of CPU time in
/// this VM (Firecracker, Linux 6.18), and an idle nghttpd's profiler thread
/// woke ~765 times a second, 4% of a core. The first samples after an idle
/// spell are looked at up to idle_wake_ns later.
SourceLine* Profiler::wait_for_line() {
  const uint64_t busy_wait_ns = rt_.config.poll_interval_ns / 2;
  uint64_t wait_ns = busy_wait_ns;
  uint64_t sampled_before = rt_.stats.samples.load(std::memory_order_relaxed);
  while (!stopping_.load(std::memory_order_acquire) && !program_gone()) {
    on_wake();
    if (SourceLine* line = choose_line()) return line;
    const uint64_t sampled = rt_.stats.samples.load(std::memory_order_relaxed);
    wait_ns = sampled == sampled_before ? std::min(wait_ns * 2, rt_.config.idle_wake_ns) : busy_wait_ns;
    sampled_before = sampled;
    // The rings no signal drains bound the wait (quiet_step).
    const uint64_t step_ns = quiet_step(2 * wait_ns);
    unmap_retired_rings(step_ns / 2);
    sys::sleep_ns(step_ns / 2);
  }
  return nullptr;
}

/// The next line is one of the samples taken since the last experiment
/// ended (the cool-off, at least), each equally likely. Not the samples of
/// the experiment itself: its pauses take CPU time from every line but the
/// selected one. And not the first sample after the cool-off, as before:
/// the period switch at the end of an experiment restarts every thread's
/// countdown at once, so which thread's sample came first was decided by
/// the program's rhythm, the same way experiment after experiment
/// (pipeline: 3 to 65 of ~85 experiments on the producer line, which has a
/// quarter of the samples).
void Profiler::start_line_choice() {
  // `coz run --system`: the window starts once every process has published
  // what it sampled so far (an experiment's samples, which must stay out).
  if (system_ && system_->lead_held()) {
    system_->publish_samples();
    system_->gather_samples();
    system_->start_choice();
  }
  FutexGuard guard(rt_.lines_lock);
  const auto& lines = rt_.lines.lines();
  choice_base_.resize(lines.size());  // a line never sampled stays at 0
  for (uint32_t i : sampled_lines_.refresh(rt_.lines)) choice_base_[i] = lines[i].samples.load(std::memory_order_relaxed);
  samples_at_empty_look_ = no_look;
}

/// A look costs a pass over the sampled lines and a choice among every
/// line, every poll (~1 ms) until it finds one. When each look passed over
/// every line, an idle nghttpd's 5,106 kept the profiler thread at 6% of a
/// core. So when nothing was sampled since a look that
/// found nothing, the lines are not looked at again, but for one look in 64
/// (a sample is counted in the run's total before its line's count, and
/// the two may be seen apart).
SourceLine* Profiler::choose_line() {
  const uint64_t sampled = rt_.stats.samples.load(std::memory_order_relaxed);
  if (sampled == samples_at_empty_look_ && ++looks_skipped_ % 64 != 0) return nullptr;
  SourceLine* chosen = look_for_line();
  samples_at_empty_look_ = chosen ? no_look : sampled;
  return chosen;
}

SourceLine* Profiler::look_for_line() {
  FutexGuard guard(rt_.lines_lock);
  auto& lines = rt_.lines.lines();
  choice_base_.resize(lines.size(), 0);  // lines of libraries loaded since: all their samples are new
  std::vector<uint64_t> fresh(lines.size());
  for (uint32_t i : sampled_lines_.refresh(rt_.lines)) {
    fresh[i] = lines[i].samples.load(std::memory_order_relaxed) - choice_base_[i];
  }
  apply_two_phase(fresh);
  if (!control_.aim.empty() && scheduler_.aim_next()) {
    if (SourceLine* unit = choose_aimed_unit()) return unit;
  }
  size_t chosen = scheduler_.choose_line(fresh);
  // A line is chosen in proportion to its samples, so a function unit is in proportion to all of its lines'.
  return chosen == ExperimentScheduler::no_line ? nullptr : lines[chosen].experiment_unit();
}

void Profiler::read_control() {
  if (control_fd_ < 0) return;
  std::optional<Control> read = coz::read_control(control_fd_);
  if (!read) return;  // not a whole control file: the last one read stays in force
  if (read->aim != control_.aim) aim_resolved_ = false;
  control_ = std::move(*read);
}

SourceLine* Profiler::choose_aimed_unit() {
  auto& lines = rt_.lines.lines();
  if (!aim_resolved_ || aim_lines_ != lines.size()) {
    // Names are built once per change of the aim, of the line map or of the
    // two-phase units (apply_two_phase), not per choice.
    std::unordered_map<std::string, double> wanted;
    for (const Control::Aim& a : control_.aim) wanted[a.unit] = a.weight;
    std::unordered_set<SourceLine*> seen;
    aim_units_.clear();
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!two_phase_lines_.empty() && (i >= two_phase_lines_.size() || !two_phase_lines_[i])) continue;
      SourceLine* unit = lines[i].experiment_unit();
      if (!unit || !seen.insert(unit).second) continue;
      if (auto it = wanted.find(unit->name()); it != wanted.end()) aim_units_.emplace_back(unit, it->second);
    }
    aim_resolved_ = true;
    aim_lines_ = lines.size();
  }
  std::vector<double> weights;
  for (const auto& [unit, weight] : aim_units_) weights.push_back(weight);
  size_t chosen = scheduler_.choose_weighted(weights);
  return chosen == ExperimentScheduler::no_line ? nullptr : aim_units_[chosen].first;
}

void Profiler::stop_experiments() {
  log::info("experiments stopped ({}): the profile is complete; the program runs on", control_.stop);
  {
    FutexGuard guard(lock_);
    if (stopping_.load(std::memory_order_acquire)) return;
    rt_.writer.write_experiments_stopped(control_.stop, sys::monotonic_ns() - rt_.start_ns);
  }
  idle_until_stopping();
}

void Profiler::end_monitor() {
  if (control_fd_ < 0 || !descriptors::usable_here() || rt_.config.run_pid != sys::getpid()) return;
  update_control(control_fd_, [](Control& c) { c.ended = true; });
  // Nobody needs the file by its name any more: the monitor reads it through
  // its own descriptor and leaves once it sees `ended`, and a process of the
  // run that starts now finds no file and goes by samples alone. The monitor
  // removes it too as it leaves, but one killed with the run's process group
  // first (`kill -9 -PGID`, a CI job's end; the test harness's cleanup left
  // 8 files per test-suite run) never did.
  if (sys::raw_syscall6(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(rt_.config.control_path.c_str()), 0) != 0) {
    log::debug("cannot remove the control file {}", rt_.config.control_path);
  }
  // The monitor prints nothing once `ended` is set: the line can go now,
  // before the shell's prompt comes back.
  if (rt_.config.status_line && isatty(STDERR_FILENO)) sys::write(STDERR_FILENO, "\r\033[K", 4);
}

void Profiler::apply_two_phase(std::vector<uint64_t>& fresh) {
  if (rt_.config.granularity != Config::Granularity::Auto) return;
  auto& lines = rt_.lines.lines();
  if (two_phase_.phase() == TwoPhase::Phase::Undecided) {
    uint64_t total = 0;
    size_t sampled = 0;
    for (uint32_t i : sampled_lines_.refresh(rt_.lines)) {
      uint64_t n = lines[i].samples.load(std::memory_order_relaxed);
      total += n;
      sampled += n > 0;
    }
    two_phase_.observe_samples(total, sampled);
    if (two_phase_.phase() == TwoPhase::Phase::Functions) {
      log::info("two-phase: {} lines have samples: experiments on functions first", sampled);
    }
  }
  if (two_phase_.phase() == TwoPhase::Phase::Functions) {
    rt_.lines.group_by_function();  // again each time: libraries loaded since have new lines
    if (!two_phase_grouped_) aim_resolved_ = false;  // the units are functions now
    two_phase_grouped_ = true;
    return;
  }
  if (two_phase_grouped_) {  // the first phase just ended
    rt_.lines.ungroup();
    two_phase_grouped_ = false;
    aim_resolved_ = false;  // the units are lines again, of the winners only
    for (const std::string& line : two_phase_.summary()) log::info("two-phase: {}", line);
    const std::vector<std::string>& winners = two_phase_.winners();
    if (winners.empty()) {
      log::info("two-phase: no function stands out: experiments on every line");
    } else {
      log::info("two-phase: experiments on the lines of {}", fmt::join(winners, ", "));
      two_phase_lines_.assign(lines.size(), false);
      for (size_t i = 0; i < lines.size(); ++i) {
        const SourceLine* unit = rt_.lines.unit_of(lines[i]);
        two_phase_lines_[i] = unit && std::find(winners.begin(), winners.end(), unit->name()) != winners.end();
      }
    }
  }
  if (two_phase_lines_.empty()) return;
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (i >= two_phase_lines_.size() || !two_phase_lines_[i]) fresh[i] = 0;  // later lines: in no winner
  }
}

/// Experiments sample `delay_sampling_rate` times as often. Each sample in the selected line pauses the other threads by
/// speedup x period at once, so the period is the grain of the pauses: at
/// 1 ms, a 50% experiment paused a thread 0.5 ms in one go, long enough that
/// all three waiters of lock_contention were sometimes paying at once when
/// the lock was released. The lock then sat idle (a quarter of hand-offs went
/// back to the releasing thread after its own 0.25 ms of outside work, 4x as
/// many as at 0%), which the sped-up program never does: +39% predicted for
/// a line whose halving really gives +50%. At 0.5 ms: +47.7%. Counts in the
/// profile stay per configured period (counted_in_profile in sampler.cpp).
/// The 0% baselines sample as often too: the extra samples cost the program
/// ~2.5% here, and charged to the speedup experiments alone they made every
/// prediction ~3 points low. Only a run of 0% experiments alone
/// (--fixed-speedup 0, which inserts no delays at all) keeps the configured period.
void Profiler::begin(const ExperimentChoice& choice) {
  SourceLine* line = choice.line;
  const double speedup = choice.speedup;
  // The period first, before the experiment's clock starts: one ioctl per
  // thread took 10-18 ms for 1,000 threads here, time in which no delay can
  // be credited yet, and which inside the experiment would count as time at
  // no speedup (a third of a 50 ms experiment).
  uint64_t period = rt_.config.sample_period_ns;
  if (!rt_.config.only_baselines()) period = set_sample_period(rt_, period / std::max(1u, rt_.config.delay_sampling_rate));
  refresh_breakpoint_counters(rt_);
  snapshot_core_use(running_.core_use);  // before the clock starts: /proc reads take a while
  uint64_t now = clock_.now_ns();
  uint64_t global = rt_.ledger.global();
  rt_.points.import_shared();  // `coz run --system`: the points of every process
  running_.active = true;
  running_.line = line;
  running_.name = choice.name;
  running_.speedup = speedup;
  running_.deaths = system_ ? system_->deaths() : 0;
  running_.start_ns = now;
  running_.start_global = global;
  running_.last_poll_ns = now;
  running_.start_cpu_ns = sys::process_cpu_ns();
  running_.start_switches = program_voluntary_switches();
  running_.after_first_progress = any_progress_yet();
  rt_.points.for_each([](ProgressPoint& p) { open_window(p); });
  rt_.experiment.request_window.store(++request_windows_, std::memory_order_release);
  rt_.experiment.selected_samples.store(0, std::memory_order_relaxed);
  if (system_) system_->announce_selection(choice.name, period);
  // A sample in a breakpoint's trap stands for one period in force
  // (credit_trap_sample); not where every experiment is a 0% one, whose
  // samples no thread's handler sees.
  const uint64_t trap_delay = rt_.breakpoints.count > 0 && !rt_.config.only_baselines() ? period : 0;
  rt_.ledger.begin_experiment(ExperimentScheduler::delay_per_sample(speedup, period), trap_delay);
  rt_.experiment.selected.store(line, std::memory_order_release);
  if (system_) system_->announce(true);
}

void Profiler::stop_crediting() {
  rt_.experiment.selected.store(nullptr, std::memory_order_release);
  rt_.ledger.end_experiment();
  if (system_) system_->announce(false);
}

/// When credits stop, the running threads still owe the delays of the last
/// sample period or so: they pay at their next sample. Progress counted
/// before they pay was made ahead of the virtual clock (the delays are
/// subtracted in full), which made every virtual speedup look larger, by
/// about half a sample period per experiment: +2 to +4 points on a line with
/// no effect in 50 ms experiments. So the experiment is counted only once
/// every thread has paid up, or is blocked (a woken thread skips those
/// delays), or the wait has lasted a few sample periods plus the largest
/// debt, at most the experiment's length (a thread stuck somewhere we do not
/// see). The virtual clock runs at wall speed meanwhile.
///
/// The largest debt matters at high speedups of a line that keeps another
/// core busy: at 95% a thread owes 19 times what it ran, ~10 ms paid in one
/// sleep, and an experiment counted in the middle of that sleep credited it
/// with progress made 10 ms ahead of a virtual clock that had advanced only
/// ~2.5 ms in 50: hot_no_effect's spinning line, truly without effect,
/// showed +29% at 95% and +55% at 100%.
bool Profiler::drain_debts(uint64_t length_ns) {
  // Waiting for each thread's next regular sample made the wait ~1-5 ms,
  // during which the program ran without its virtual speedup: 10% of a
  // 50 ms experiment, -4 points on a line with a 40% effect.
  uint64_t largest_debt = hurry_threads_that_owe(rt_);
  auto all_settled = [&] {
    // `coz run --system`: and every other process's threads (each follower settles its own).
    return every_thread_settled(rt_) && (!system_ || system_->followers_settled());
  };
  // Another process's threads may owe more than this one's: at most every
  // delay credited in the experiment.
  if (system_) largest_debt = std::max(largest_debt, rt_.ledger.global() - running_.start_global);
  constexpr uint64_t step_ns = 100'000;
  const uint64_t longest_wait = 2 * rt_.config.sample_period_ns + std::min(largest_debt, length_ns);
  return wait_unless_stopping(longest_wait, step_ns, true, all_settled);
}

bool Profiler::end(ExperimentResult& result) {
  if (!running_.active) return false;
  // Requests that end from now on are not this experiment's: their time
  // after the windows close would count without the experiment's.
  rt_.experiment.request_window.store(0, std::memory_order_release);
  stop_crediting();
  poll_in_flight();  // covers the time since the last poll
  refresh_breakpoint_counters(rt_);
  uint64_t now = clock_.now_ns();
  uint64_t paused = rt_.ledger.global() - running_.start_global;
  uint64_t wall = now - running_.start_ns;

  if (system_ && system_->deaths() != running_.deaths) {
    // A process of the run died during it: its threads neither paid their
    // delays nor finished their work, so the progress counted means nothing.
    running_.active = false;
    return false;
  }
  result.selected = running_.name;
  result.speedup = running_.speedup;
  result.duration_ns = effective_duration(wall, paused);
  result.selected_samples = rt_.experiment.selected_samples.load(std::memory_order_relaxed);
  if (system_) result.selected_samples += system_->take_follower_samples();
  result.pid = sys::getpid();
  result.end_ns = now - rt_.start_ns;
  rt_.points.for_each([&](ProgressPoint& p) { result.points.push_back(close_window(p, result.duration_ns, wall)); });
  const uint64_t cpu = sys::process_cpu_ns() - running_.start_cpu_ns;
  {
    // After the windows close: the program's progress while the files are
    // read would count without its time (short_threads' task_b, a line
    // without effect, read +13% and +16%). Threads waiting from the files of
    // those that lived through it; cores busy from the process's CPU time,
    // which counts the threads that started or ended meanwhile
    // (short_threads' never outlive an experiment: their files read 0.02).
    static CoreUseSnapshot ended;  // the profiler thread's (too large for its stack frame to want)
    snapshot_core_use_again(running_.core_use, ended);
    result.waiting_for_core = waiting_for_core_between(running_.core_use, ended);
    if (result.waiting_for_core >= 0 && wall > 0)
      result.cores_busy = static_cast<double>(cpu) / static_cast<double>(wall);
    result.cores = usable_cpus();
    const int64_t switches = program_voluntary_switches();
    if (switches >= 0 && running_.start_switches >= 0) {
      result.voluntary_switches = std::max<int64_t>(switches - running_.start_switches, 0);
    }
  }
  running_.active = false;
  // The program's start, before any point was reached: loading its data, a
  // server whose load is still connecting. Counted, it is a rate that no
  // line's speed explains: memcached's first experiment, on an off-path
  // line at 30%, read -1148% (68 responses in 50 ms, 800 in the next) and
  // made the line "slow the program down".
  if (!running_.after_first_progress) {
    ++unrecorded_.before_progress;
    return false;
  }
  if (waited_for_the_world(result, wall, cpu)) {
    ++unrecorded_.idle;
    return false;
  }
  return true;
}

/// The process's voluntary switches (its exited threads' included) less
/// the runtime's own: this thread's, and the sleeps that paid delays. Each
/// is a thread of the program that gave up its core to wait, for a lock, a
/// queue, a reply: a hand-off whose wake costs what no pause can give back.
int64_t Profiler::program_voluntary_switches() const {
  rusage process{}, self{};
  if (getrusage(RUSAGE_SELF, &process) != 0 || getrusage(RUSAGE_THREAD, &self) != 0) return -1;
  const int64_t program = static_cast<int64_t>(process.ru_nvcsw) - static_cast<int64_t>(self.ru_nvcsw) -
                          static_cast<int64_t>(rt_.ledger.total_sleeps());
  return std::max<int64_t>(program, 0);
}

bool Profiler::any_progress_yet() {
  if (rt_.config.end_to_end) return true;  // its one point is the whole run
  bool any = false;
  rt_.points.for_each([&](ProgressPoint& p) { any = any || p.begins() > 0 || p.ends() > 0; });
  return any;
}

/// An experiment during which no point advanced while the process stayed
/// almost idle (under a quarter of a core): the program was waiting for the
/// world, a server between two loads or after the last, and no line's speed
/// could change what it did. Counted, such an experiment is a stretch of no
/// progress charged to whichever line it sped up: memcached's last
/// experiment after its load ended read an off-path line at -107% (a "slows
/// down" verdict), and one in the pooled 0% baseline would make every line
/// look faster. A program that works without reaching its points (a phase
/// of a batch job) keeps its experiments. Under `coz run --system` the CPU
/// time is the leading process's only.
bool Profiler::waited_for_the_world(const ExperimentResult& result, uint64_t wall_ns, uint64_t cpu_ns) {
  for (const PointResult& point : result.points) {
    if (point.delta != 0 || point.arrivals != 0 || point.departures != 0) return false;
  }
  return cpu_ns * 4 < wall_ns;
}

/// Little's law needs the mean number in flight over the experiment's
/// *effective* time, the wall time less the delays credited: that time does
/// not exist in the sped-up program. Which requests the removed time held in
/// flight matters: a delay is credited while a thread runs the selected line,
/// so it removes the requests in flight at that moment (none of its own when
/// the line is outside requests, at least its own when inside). Polls every
/// few ms cannot see that; the credit does, so each credit notes the count in
/// flight (ProgressPoints::note_delay_credit) and polls only integrate over
/// wall time (experiment_window.h). (Weighting each poll by the effective
/// time since the last, as before, predicted +8% for a line outside every
/// request with no effect.)
void Profiler::poll_in_flight() {
  uint64_t now = clock_.now_ns();
  double wall = static_cast<double>(now - running_.last_poll_ns);
  running_.last_poll_ns = now;
  if (rt_.breakpoints.has_latency) refresh_breakpoint_counters(rt_);
  rt_.points.for_each([&](ProgressPoint& p) { poll_window(p, wall); });
}

std::vector<VisitRate> Profiler::visit_rates() {
  std::vector<VisitRate> rates;
  rt_.points.for_each([&](ProgressPoint& p) { rates.push_back({p.total_visits, p.total_ns}); });
  return rates;
}

void Profiler::write_new_samples() {
  // Everything is taken before anything is written, so that the records
  // describe the same moment: samples keep coming meanwhile (at exit too).
  std::vector<ProfileWriter::Samples> fresh;
  std::vector<std::pair<std::string, uint64_t>> stacks;
  {
    FutexGuard guard(rt_.lines_lock);  // lines, and the object list naming functions reads, grow with dlopen
    auto& lines = rt_.lines.lines();
    for (uint32_t i : sampled_lines_.refresh(rt_.lines)) {
      SourceLine& line = lines[i];
      uint64_t now = line.samples.load(std::memory_order_relaxed);
      uint64_t before = line.reported_samples.load(std::memory_order_relaxed);
      if (now > before) {
        fresh.push_back({line.name(), now - before, line.function});
        line.reported_samples.store(now, std::memory_order_relaxed);
      }
    }
    stacks = rt_.stacks.take_new([&](uint64_t entry) { return rt_.frames.function_name(entry); });
  }
  std::vector<ProfileWriter::Blocked> blocked;
  for (auto& b : rt_.blocked.take_new()) blocked.push_back({b.site, wait_kind_name(b.kind), b.ns, b.count});
  rt_.writer.write_samples(fresh);
  rt_.writer.write_stacks(stacks);
  rt_.writer.write_blocked(blocked);
}

/// Each wake-up of the profiler thread costs the program: at real-time
/// priority it preempts whichever program thread shares its CPU. Waking
/// every 2 ms slowed a single busy thread by ~1% here (0.5% at 20 ms), so
/// the thread wakes that often only while latency points need their
/// in-flight polls.
void Profiler::idle_until_stopping() {
  while (sleep_unless_stopping(rt_.config.idle_wake_ns, false)) {
  }
}

bool Profiler::sleep_unless_stopping(uint64_t ns, bool poll_points) {
  bool polls_needed = poll_points && (rt_.points.has_latency() || rt_.breakpoints.has_latency);
  uint64_t step_ns = polls_needed ? rt_.config.poll_interval_ns : rt_.config.idle_wake_ns;
  return wait_unless_stopping(ns, step_ns, poll_points, [] { return false; });
}

void Profiler::shutdown() {
  // Everything under the lock, so a second caller (the exiting thread while
  // the profiler thread finishes, or the other way round) returns only once
  // the last records are written.
  FutexGuard guard(lock_);
  if (stopping_.exchange(true, std::memory_order_acq_rel)) return;
  drain_unsignalled_rings(rt_);
  bool long_enough = running_.active && (rt_.config.end_to_end ||
                                         clock_.now_ns() - running_.start_ns >= rt_.config.experiment_min_ns);
  if (running_.active && !long_enough) {
    running_.active = false;  // too short to measure anything: drop it
    stop_crediting();
  }
  ExperimentResult result;
  if (end(result)) {
    if (rt_.config.end_to_end) {
      PointResult whole_run;
      whole_run.name = end_to_end_point;
      whole_run.delta = 1;
      result.points.insert(result.points.begin(), whole_run);
    }
    rt_.writer.write_experiment(result);
  }
  write_new_samples();
  rt_.writer.write_sampling(sampling_totals(rt_));
  rt_.writer.write_runtime(sys::monotonic_ns() - rt_.start_ns);
  if (unrecorded_.before_progress + unrecorded_.idle > 0) {
    log::info("experiments not recorded: {} begun before any progress point was reached, {} during which none "
              "advanced while the program was idle",
              unrecorded_.before_progress, unrecorded_.idle);
  }
  if (system_) {
    system_->release_lead();
    system_->leave();
  }
  end_monitor();
  if (shutdown_requested_.load(std::memory_order_acquire) && signal_report_) signal_report_();
  shut_down_.store(true, std::memory_order_release);
}

}  // namespace coz
