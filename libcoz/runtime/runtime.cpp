// Start-up and shutdown of the runtime in the profiled process, and the Coz
// ABI the program's progress points call.
#include "runtime.h"

#include <coz.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "channels.h"
#include "descriptors.h"
#include "exit_signals.h"
#include "file_line.h"
#include "go_binary.h"
#include "go_exit.h"
#include "go_wait.h"
#include "sample_handler.h"
#include "log.h"
#include "profiler.h"
#include "real.h"
#include "reentrancy.h"
#include "sampler.h"
#include "sanitizers.h"
#include "scope.h"
#include "system_link.h"
#include "thread_registry.h"
#include "wait.h"
#include "sys.h"

namespace coz {
namespace {

struct LoadedObject {
  std::string path;
  uintptr_t bias;
  bool operator==(const LoadedObject&) const = default;
};

using detail::g_runtime;

/// What the line map was built from, kept to add libraries loaded later.
struct MapSources {
  std::string main_executable;
  std::string main_program;
  std::vector<LoadedObject> mapped;  // objects already added (path, bias)
  FutexLock lock;                     // dlopen may run in several threads at once
};
MapSources* g_sources = nullptr;
bool g_warn_if_never_in_scope = false;  // the launched program, with -b globs that matched nothing yet
// Progress points exist even when profiling is off in this process, so the
// program's counters always resolve to something stable.
ProgressPoints* g_points = nullptr;
Profiler* g_profiler = nullptr;

void summarize_run(const Runtime& rt);
void summarize_after_exit_signal();
void route_messages(const Config& config);
void stop();

std::string read_link(const char* path) {
  char buf[4096];
  ssize_t n = readlink(path, buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string{};
}

std::string command_line() {
  std::string out;
  char buf[1024];
  ssize_t n = sys::read_small_file("/proc/self/cmdline", buf, sizeof buf);
  for (ssize_t i = 0; i < n; ++i) out.push_back(buf[i] ? buf[i] : ' ');
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}


/// Valgrind's "running on valgrind" client request, by its documented
/// protocol: an instruction sequence that does nothing on a real CPU (the
/// four rotations of rdi add up to 128 bits, the exchange is of rbx with
/// itself), leaving rdx at its default, 0; valgrind's core recognizes it and
/// answers in rdx. Valgrind gives its program its own /proc/self/exe, so the
/// path does not tell.
unsigned long running_on_valgrind() {
  volatile unsigned long request[6] = {0x1001, 0, 0, 0, 0, 0};  // VG_USERREQ__RUNNING_ON_VALGRIND
  unsigned long result = 0;
  __asm__ volatile(
      "rolq $3, %%rdi\n\trolq $13, %%rdi\n\trolq $61, %%rdi\n\trolq $51, %%rdi\n\txchgq %%rbx, %%rbx"
      : "=d"(result)
      : "a"(&request[0]), "0"(result)
      : "cc", "memory");
  return result;
}

/// Why the runtime must leave this process alone, or null. A tool that runs
/// other programs passes LD_PRELOAD on to them: a debugger's program would
/// stop at each sample signal (gdb: "received signal ?, Unknown signal"),
/// and valgrind's core, in which the program runs, died of the samplers'
/// SIGTRAP ("VALGRIND INTERNAL ERROR"). The tool itself is profiled.
const char* why_not_profiled() {
  if (traced()) return "it is traced (a debugger, strace), which would stop it at each sample";
  if (running_on_valgrind() != 0) return "it runs under valgrind, whose core cannot take the samplers' signals";
  return nullptr;
}

/// The load bias of the main executable (0 unless it is position-independent).
uintptr_t main_executable_bias() {
  uintptr_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        *static_cast<uintptr_t*>(data) = info->dlpi_addr;
        return 1;  // the first object is the executable
      },
      &bias);
  return bias;
}

/// In a Go program (go_binary.h): tells the sample handler where its
/// threads keep their g, and has its raw exit finish the profile first
/// (go_exit.h). Returns whether the runtime must stay out of the program:
/// a Go program without runtime/cgo, whose signal handlers would take the
/// runtime's samples.
bool prepare_for_go(const std::string& main_executable) {
  LeakCheckPause libelfin_cycles;  // a sanitizer build of the program would call them its leaks
  std::string error;
  std::optional<ElfFile> file = ElfFile::open(main_executable, error);
  if (!file || !is_go_program(*file)) return false;
  if (is_go_program_without_cgo(*file)) return true;
  sample_handler::set_go_program(go_g_tls_offset(*file));
  const uint64_t bias = main_executable_bias();
  const uint64_t exit_function = go_assembly_function(*file, "runtime.exit");
  if (exit_function == 0 || !redirect_go_exit(exit_function + bias, &stop)) {
    log::info("{}: its runtime.exit is not the one known: the profile's last records are lost at its exit",
              main_executable);
  }
  const uint64_t futex_function = go_assembly_function(*file, "runtime.futex");
  if (futex_function == 0 || !redirect_go_futex(futex_function + bias)) {
    log::warn("{}: its runtime.futex is not the one known (or its symbols were stripped): the experiments cannot "
              "see its threads' waits and wakes, and its impacts are not to be trusted", main_executable);
  }
  return false;
}

/// Whether the process is confined by a seccomp filter it inherited (the
/// runtime is starting: the program has installed none yet). A filter that
/// refuses prctl itself counts as one.
bool started_under_seccomp_filter() {
  long mode = sys::raw_syscall6(SYS_prctl, PR_GET_SECCOMP);
  return mode == SECCOMP_MODE_FILTER || (mode < 0 && mode != -EINVAL);
}

/// Every loaded ELF object but the runtime's own (never the program's: its
/// samples are the runtime's work, and its lines under `-b '*'` cost every
/// process ~30,000 ranges of inlined code to read); the first one
/// dl_iterate_phdr reports (with an empty name) is the executable.
std::vector<LoadedObject> loaded_objects(const std::string& main_executable) {
  Dl_info own{};
  const bool known = dladdr(reinterpret_cast<void*>(&loaded_objects), &own) != 0 && own.dli_fname != nullptr;
  struct Walk {
    std::vector<LoadedObject> objects;
    const std::string& main;
    std::string runtime;
  } walk{{}, main_executable, known ? own.dli_fname : ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& w = *static_cast<Walk*>(data);
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.empty() && w.objects.empty()) name = w.main;
        if (!w.runtime.empty() && name == w.runtime) return 0;
        if (!name.empty() && name.find("linux-vdso") == std::string::npos) {
          w.objects.push_back({name, static_cast<uintptr_t>(info->dlpi_addr)});
        }
        return 0;
      },
      &walk);
  return walk.objects;
}

/// One warning for `paths`: "X has WHAT" for one, "N objects (X, Y, ...) have
/// WHAT" for more (each named under -v).
void warn_about_objects(const std::vector<std::string>& paths, const char* what) {
  if (paths.empty()) return;
  if (paths.size() == 1) return log::warn("{} has {}", paths[0], what);
  std::string names;
  for (size_t i = 0; i < paths.size() && i < 4; ++i) names += (i ? ", " : "") + paths[i].substr(paths[i].rfind('/') + 1);
  if (paths.size() > 4) names += ", ...";
  log::warn("{} objects ({}) have {}", paths.size(), names, what);
  for (const std::string& path : paths) log::info("{}", path);
}

/// Builds the line map of every object in scope; returns how many objects were in scope.
/// `main_program` is what "MAIN" (and the default scope) means.
/// Only objects not mapped yet are read (the same call serves dlopen).
size_t build_line_map(Runtime& rt, MapSources& sources_seen) {
  LeakCheckPause libelfin_cycles;  // a sanitizer build of the program would call them its leaks
  BinaryScope binaries(rt.config.binary_scope, sources_seen.main_program);
  SourceScope sources(rt.config.source_scope);
  SourceFilter in_scope = [&](std::string_view file) { return sources.contains(file); };
  uint64_t t0 = sys::monotonic_ns();
  size_t objects = 0;
  // Said in one line each, not one per library: under -b '*' a program
  // loads dozens, and these lines go to the program's stderr.
  std::vector<std::string> by_function, nothing;
  for (const auto& object : loaded_objects(sources_seen.main_executable)) {
    const std::string& path = object.path;
    if (!binaries.contains(path)) continue;
    bool seen = false;
    for (const auto& m : sources_seen.mapped) seen = seen || m == object;
    if (seen) continue;
    sources_seen.mapped.push_back(object);
    ObjectLines found = rt.lines.add_object(path, object.bias, in_scope, rt.config.debug_root);
    ++objects;
    if (!found.error.empty()) {
      log::warn("{}: {}", path, found.error);
    } else if (found.function_level) {
      by_function.push_back(path);
    } else if (!found.has_debug_info) {
      nothing.push_back(path);
    } else if (found.lines == 0) {
      log::warn("{}: no source line is in scope (check --source-scope)", path);
    }
    if (!found.debug_file.empty()) log::info("{}: debug information from {}", path, found.debug_file);
    if (!found.supplementary_file.empty()) log::info("{}: shared debug information from {}", path, found.supplementary_file);
    log::info("{}: {} lines ({} ranges of inlined library code charged to their callers), {} address ranges", path,
              found.lines, found.inlined_ranges, found.ranges);
  }
  warn_about_objects(by_function, "no debug information: samples there are attributed to functions (-dbgsym "
                     "packages or -g builds give lines)");
  warn_about_objects(nothing, "no debug information and no symbols: nothing there can be profiled");
  rt.lines.finalize();
  if (rt.config.function_granularity()) log::info("function granularity: {} functions", rt.lines.group_by_function());
  log::info("line map: {} objects in scope, {} lines, built in {:.1f} ms", objects, rt.lines.lines().size(),
            (sys::monotonic_ns() - t0) / 1e6);
  // Every object, in scope or not: walks cross the others to reach the line
  // that called them. Not while nothing is in scope: no walk can end at a
  // line then, and a process out of scope (each /bin/true a script runs)
  // paid milliseconds for them.
  if (sources_seen.mapped.empty()) return objects;
  uint64_t t1 = sys::monotonic_ns();
  size_t with_frames = rt.frames.add_loaded(sources_seen.main_executable, rt.config.debug_root);
  if (with_frames > 0) {
    log::info("frame tables: {} objects ({} without call-frame information), built in {:.1f} ms",
              rt.frames.objects(), rt.frames.objects_without_cfi(), (sys::monotonic_ns() - t1) / 1e6);
  }
  return objects;
}

/// "FILE:LINE" (or, under --system, "FILE:LINE [PROGRAM]") -> the line, or an error message.
SourceLine* resolve_fixed_line(Runtime& rt, const std::string& spec, std::string& error) {
  const auto [file_line, program] = split_program(spec);
  auto where = parse_file_line(file_line);
  if (!where) {
    error = "--fixed-line " + spec + ": expected FILE:LINE";
    return nullptr;
  }
  if (!program.empty()) {
    const std::string exe = read_link("/proc/self/exe");
    if (exe.substr(exe.rfind('/') + 1) != program) {
      error = "--fixed-line " + spec + ": another program's line";
      return nullptr;
    }
  }
  SourceLine* found = rt.lines.find_line(where->file, where->line);
  if (!found) error = "--fixed-line " + spec + ": no code at that line in the binaries in scope";
  return found ? found->experiment_unit() : nullptr;  // with function granularity, its function
}

// ---- fork ---------------------------------------------------------------------------
//
// A forked child has only the thread that called fork(). A lock of the
// runtime that another thread held at that moment would stay held in the
// child forever, and the table it guarded half-changed. So the forking
// thread takes every lock of the runtime before fork() (prepare) and
// releases them after it, in the parent and in the child: the child's copy
// of everything is whole, and every lock free.
//
// The order is the one in which they nest everywhere else (outermost
// first), so taking them all cannot deadlock with a thread that holds one
// and waits for another. The runtime never waits for a lock of the program
// while holding one of its own, except the allocator's inside malloc: an
// allocator's own fork handler that takes its locks (jemalloc's) is
// registered at its first allocation, which the runtime's start-up makes,
// so it runs after this prepare handler (prepare handlers run in reverse
// order of registration), once every lock here is taken. The thread's
// asynchronous signals wait meanwhile: a handler of the program that called
// exit() there would wait for these very locks.

constexpr size_t runtime_lock_count = 10;

/// Every lock of the runtime, outermost first (docs/lifecycle.md). Not the
/// profiler's own (Profiler::lock_): a child starts a new profiler.
size_t runtime_locks(Runtime& rt, FutexLock* (&locks)[runtime_lock_count]) {
  size_t n = 0;
  if (g_sources) locks[n++] = &g_sources->lock;  // -> lines_lock (on_library_loaded)
  locks[n++] = &rt.lines_lock;                   // -> stacks (write_new_samples)
  locks[n++] = &thread_list_lock();
  locks[n++] = &rt.points.lock();
  locks[n++] = &rt.stacks.lock();
  locks[n++] = &rt.blocked.lock();
  locks[n++] = &rt.writer.lock();
  locks[n++] = &retired_rings_lock();
  locks[n++] = &epoll_registry_lock();
  locks[n++] = &descriptors::lock();  // innermost: held only to raise the limit and dup (descriptors.cpp)
  return n;
}

// The forking thread's, from prepare to parent or child. Not thread_local:
// glibc takes static TLS from the top of every thread's stack, and these
// 136 bytes cost a program's 16 KiB thread a frame of its recursion
// (ownership_signals_test). Two threads may fork at once, but only the one
// holding every runtime lock (taken last in prepare) writes or reads them.
struct ForkState {
  sigset_t signals;
  bool outer_section = false;
};
ForkState g_fork;

void fork_prepare() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (!rt) return;
  ForkState mine;
  SignalsDeferred::hold(mine.signals);
  mine.outer_section = in_runtime();
  RuntimeSection::enter_for_good();  // until fork_parent / on_fork_child
  FutexLock* locks[runtime_lock_count];
  size_t n = runtime_locks(*rt, locks);
  for (size_t i = 0; i < n; ++i) locks[i]->lock();
  g_fork = mine;
}

void release_fork_locks(Runtime& rt) {
  FutexLock* locks[runtime_lock_count];
  size_t n = runtime_locks(rt, locks);
  while (n > 0) locks[--n]->unlock();
}

void fork_parent() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (!rt) return;
  ForkState mine = g_fork;  // before another forking thread can take the locks
  release_fork_locks(*rt);
  detail::tls_in_runtime = mine.outer_section;
  SignalsDeferred::release(mine.signals);
}

/// `coz run --system`: this process's experiments become the run's
/// (system_shared.h). Before any thread compares itself with the ledger or
/// is handed a counter.
void join_system(Runtime& rt) {
  std::string error;
  SystemShared* shared = map_system_shared(rt.config.system_path.c_str(), error);
  if (!shared) {
    log::warn("{}: this process runs experiments of its own", error);
    return;
  }
  rt.system = shared;
  rt.system_slot = register_process(*shared, sys::getpid());
  if (claim_vacant_lead(*shared, sys::getpid()) == LeadClaim::AlreadyOurs) SystemLink(rt).end_orphaned_experiment();
  if (!rt.system_slot) log::warn("more than {} processes in the run: the leader will not wait for this one's delays",
                                 SystemShared::process_capacity);
  rt.ledger.share_counts(&shared->ledger);
  rt.points.share(&shared->points, std::string(line_program_suffix()));
  // One experiment selects one line everywhere: lines, not functions (docs/system.md).
  rt.config.granularity = Config::Granularity::Line;
  if (SourceLine* fixed = rt.fixed_line.load(std::memory_order_acquire)) SystemLink(rt).publish_fixed_line(fixed->name());
}

/// Where the runtime's descriptors go (descriptors.h). Under a small limit
/// with no number above it, its files go to a table of its own, and threads
/// sample with timers, which take no descriptor (the profiler thread could
/// not reach their samplers from its table). Not with --progress or
/// --latency lines: their counters are each thread's, and the profiler
/// thread reads them.
void choose_descriptor_table(const Runtime& rt) {
  unsigned long limit = 0;
  if (rt.breakpoints.count > 0 || !descriptors::decide_table(limit)) return;
  use_timer_sampling();
  log::warn("descriptor limit {} with no room above it: the runtime keeps its files in a descriptor table of its "
            "own, and threads sample with CPU-time timers, which take no descriptor, {}",
            limit, timer_sampling_caveat());
}

/// Starts this process's profiler thread (g_profiler). Under `coz run
/// --system`, a process without one gives up the lead it may hold: another
/// process runs the experiments.
void start_profiler(Runtime& rt) {
  g_profiler = new Profiler(rt);
  g_profiler->after_signal_shutdown(&summarize_after_exit_signal);
  if (!g_profiler->start()) {
    g_profiler = nullptr;
    if (rt.system) SystemLink(rt).release_lead();
  }
}

/// A forked child is a program of its own: it gets a fresh experiment state,
/// its own sampler for the one thread it has, its own profiler thread, and
/// writes its own records (tagged with its pid) to the same profile. Nothing
/// of the parent's experiment in progress carries over, and the parent's
/// samples stay the parent's. If the child execs at once, it leaves nothing.
void on_fork_child() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (!rt) return;
  ForkState mine = g_fork;
  release_fork_locks(*rt);  // taken in fork_prepare by this thread, which is the child's
  rt->experiment.selected.store(nullptr, std::memory_order_relaxed);
  // Under --system the experiment is the run's, in shared counts: this child follows it.
  if (rt->system) rt->system_slot = register_process(*rt->system, sys::getpid());
  else rt->ledger.end_experiment();
  rt->sample_period_ns.store(rt->config.sample_period_ns, std::memory_order_relaxed);
  for (auto& line : rt->lines.lines()) {
    line.reported_samples.store(line.samples.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  rt->stats.reset();
  rt->start_ns = sys::monotonic_ns();
  rt->start_steal_ns = sys::machine_steal_ns();
  rt->writer.forget_after_fork();
  rt->writer.defer_startup(sys::realtime_ns(), sys::getpid(), getppid(), command_line());
  reset_live_threads_after_fork();
  forget_retired_rings();
  open_process_stat();
  if (ThreadState* t = current_thread()) {
    forget_inherited_sampler(*t);
    forget_thread_breakpoints(*t);
    for (auto& exited : rt->breakpoints.exited) exited.store(0, std::memory_order_relaxed);
    std::string error;
    if (rt->breakpoints.count > 0) open_thread_breakpoints(rt->breakpoints, *t, error);
    t->tid = sys::gettid();
    forget_inherited_process_sampling();
    if (rt->sampling_enabled) start_process_sampling(*rt);
    if (rt->sampling_enabled) start_sampling(*t, rt->config);
  }
  start_profiler(*rt);  // the parent's profiler thread does not exist here
  detail::tls_in_runtime = mine.outer_section;
  SignalsDeferred::release(mine.signals);
}

/// The exit-signal handler's part (exit_signals.h): the profiler thread
/// finishes the profile; a wedged runtime must not keep the process alive.
void finish_profile_for_exit_signal() {
  constexpr uint64_t timeout_ns = 2'000'000'000;
  if (Profiler* profiler = g_profiler) profiler->shutdown_from_signal(timeout_ns);
}

void start() {
  RuntimeSection section;
  real::functions();
  std::vector<std::string> errors;
  auto* rt = new Runtime;  // never deleted: see runtime.h
  rt->config = Config::from_environment(errors);
  rt->sample_period_ns.store(rt->config.sample_period_ns, std::memory_order_relaxed);
  g_points = &rt->points;
  log::set_verbosity(rt->config.verbosity);
  route_messages(rt->config);
  for (const auto& e : errors) log::warn("{}", e);
  rt->start_ns = sys::monotonic_ns();
  rt->start_steal_ns = sys::machine_steal_ns();

  std::string main_executable = read_link("/proc/self/exe");
  if (prepare_for_go(main_executable)) {
    // `coz run` said so already for the program it launched.
    const bool said = rt->config.run_pid == sys::getpid() && rt->config.program == main_executable;
    const std::string why = fmt::format("not profiling {}: a Go program without runtime/cgo sets its signal "
                                        "handlers with raw system calls, and Go's would take the runtime's samples",
                                        main_executable);
    if (said) log::info("{}", why);
    else log::warn("{}", why);
    return;
  }
  // In a program that `coz run` launched, MAIN is that program; in a program
  // it execs (inherited LD_PRELOAD), MAIN still names the launched one, so an
  // unrelated child (a shell from system(), say) is out of scope and quiet.
  // Under `coz run --system`, every program of the run is one of its own (docs/system.md).
  const bool system = !rt->config.system_path.empty();
  bool launched_here = system || rt->config.program.empty() || rt->config.program == main_executable;
  std::string main_program = system || rt->config.program.empty() ? main_executable : rt->config.program;
  if (system) set_line_program(main_executable.substr(main_executable.rfind('/') + 1));
  g_sources = new MapSources{main_executable, main_program, {}, {}};
  size_t objects_in_scope = build_line_map(*rt, *g_sources);
  // With explicit binary globs, the library they name may be loaded later
  // (dlopen): keep going and map it then. Without them, the program itself
  // is the scope, and it is either here or not.
  bool may_load_later = !rt->config.binary_scope.empty();
  if (objects_in_scope == 0 && !may_load_later) {
    // `coz run` refuses a program with nothing to profile; this is a program it execs.
    log::info("{} is out of scope; not profiling it", main_executable);
    return;
  }
  if (const char* why = why_not_profiled()) {
    log::warn("not profiling {}: {}", main_executable, why);
    return;
  }
  // A process started under a seccomp filter (a sandbox that execs its
  // helpers, as man-db does for col and groff) cannot show it: the filter
  // may refuse the sampler, the timers and the profile. With nothing in
  // scope yet, the runtime would only print those refusals on the
  // program's stderr; it stays out.
  if (objects_in_scope == 0 && started_under_seccomp_filter()) {
    log::info("{} started under a seccomp filter with nothing in scope; not profiling it", main_executable);
    return;
  }
  g_warn_if_never_in_scope = launched_here && objects_in_scope == 0;
  bool lines_in_scope = !rt->lines.lines().empty();

  if (!rt->config.fixed_line.empty()) {
    std::string error;
    rt->fixed_line = resolve_fixed_line(*rt, rt->config.fixed_line, error);
    // Under --system, another process of the run may have the code.
    if (!rt->fixed_line && !may_load_later && !system) {
      // The user asked for an experiment that cannot run: say so before the program starts.
      log::error("{}", error);
      _exit(2);
    }
  }

  if (!rt->config.progress_lines.empty() || !rt->config.latency_lines.empty()) {
    std::string error;
    if (!resolve_breakpoints(*rt, error)) {
      log::error("{}", error);  // before the program starts: it has not run at all
      _exit(2);
    }
    ThreadState probe;
    if (!open_thread_breakpoints(rt->breakpoints, probe, error)) {
      log::error("{}", error);
      _exit(2);
    }
    forget_thread_breakpoints(probe);
    if (!install_trap_handler()) log::warn("cannot take SIGTRAP: a breakpoint's stray trap would end the program");
  }

  choose_descriptor_table(*rt);
  rt->writer.set_format(rt->config.profile_format);
  std::string error;
  if (objects_in_scope == 0) {
    rt->writer.open_when_written(rt->config.output_path);  // `coz run` checked it can be created
  } else if (!rt->writer.open(rt->config.output_path, error)) {
    log::error("{}; profiling is off", error);
    return;
  }
  // Until something is in scope (a library loaded later), write nothing.
  if (objects_in_scope > 0) rt->writer.write_startup(sys::realtime_ns(), sys::getpid(), getppid(), command_line());
  else rt->writer.defer_startup(sys::realtime_ns(), sys::getpid(), getppid(), command_line());
  if (!lines_in_scope && !may_load_later) {
    log::warn("no source line in scope in {}: progress points are counted, but no line can be profiled",
              main_executable);
  }
  if (system) join_system(*rt);
  if (!install_sample_handler()) {
    log::warn("cannot install the sample signal handler; no samples will be taken");
    rt->sampling_enabled = false;
  }
  if (!rt->config.sampling) {
    log::info("sampling off (COZ_SAMPLING=0): no thread is sampled, so no experiment runs; the interposed calls do");
    rt->sampling_enabled = false;
  }
  // Not at the shortest periods, whose rings would need draining more often
  // than the profiler thread drains (unsignalled_period_ns). Nor with nothing
  // sampled: no ring to drain, and the profiler thread, believing a quiet
  // run's rings open, woke every 1.5 ms for them (~660 times a second).
  rt->quiet_sampling = rt->sampling_enabled && rt->config.only_baselines() &&
                       unsignalled_period_ns(rt->config) == rt->config.sample_period_ns;
  g_runtime.store(rt, std::memory_order_release);
  open_process_stat();
  if (rt->sampling_enabled) start_process_sampling(*rt);  // before any thread it must cover starts
  register_current_thread(rt->ledger.global());
  // After the runtime's first allocations: see fork_prepare for why.
  pthread_atfork(&fork_prepare, &fork_parent, &on_fork_child);
  start_profiler(*rt);
  install_exit_signal_handlers(&finish_profile_for_exit_signal);
}

/// Without kernel sampling, time in system calls is charged to no line:
/// say how much, so a user knows what the profile cannot see.
void warn_if_kernel_time_unsampled(const Runtime& rt) {
  // CPU-time timers count the time in the kernel too (timer_sampling_caveat).
  if (kernel_sampling() || timer_sampling() || !rt.sampling_enabled) return;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return;
  auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  double kernel = seconds(usage.ru_stime), total = kernel + seconds(usage.ru_utime);
  constexpr double worth_saying = 0.05;  // of the CPU time
  if (total <= 0 || kernel / total < worth_saying) return;
  std::string paranoid = "?";
  char buf[16];
  if (ssize_t n = sys::read_small_file("/proc/sys/kernel/perf_event_paranoid", buf, sizeof buf); n > 0) {
    paranoid = std::string(buf, static_cast<size_t>(n) - (buf[n - 1] == '\n' ? 1 : 0));
  }
  log::warn("{:.2f} s of {:.2f} s CPU time ({:.0f}%) was spent in the kernel and not sampled: kernel sampling needs "
            "perf_event_paranoid <= 1 (it is {}) or CAP_PERFMON",
            kernel, total, 100 * kernel / total, paranoid);
}

/// How much of the process's CPU time became samples attributed to a line:
/// with `-v`, always; a warning when it is under half (the verdicts then
/// speak for a minority of the time).
void report_coverage(const Runtime& rt) {
  // Start-up (the line map, the frame tables) dominates a very short run.
  constexpr uint64_t minimum_cpu_for_coverage_warning_ns = 1'000'000'000;
  uint64_t cpu_ns = sys::process_cpu_ns();
  if (cpu_ns == 0 || !rt.sampling_enabled) return;
  double share = static_cast<double>(rt.stats.in_scope()) * static_cast<double>(rt.config.sample_period_ns) /
                 static_cast<double>(cpu_ns);
  log::info("CPU time attributed to lines: {:.1f}% of {:.2f} s", share * 100.0, cpu_ns / 1e9);
  if (share < 0.5 && cpu_ns >= minimum_cpu_for_coverage_warning_ns) {
    log::warn("only {:.0f}% of the program's CPU time ({:.1f} s) was attributed to a line (time in the kernel "
              "not sampled, code out of scope, or threads not sampled; coz run -v says which)",
              share * 100.0, cpu_ns / 1e9);
  }
}

/// The side file of the run's messages (log::send_to_side_file) that this
/// process shows at its exit: set in the run's first process only. A
/// pointer, set from the runtime's constructor, which may run before this
/// file's dynamic initializers, and never freed: stop() runs after the
/// statics' destructors.
const std::string* g_messages_to_relay = nullptr;

/// Where this process's messages go: to its stderr if that is `coz run`'s
/// (or `coz run` said nothing), else to the run's side file, which the
/// run's first process shows on `coz run`'s stderr at its exit.
/// The file exists only once a process has had something to say in it
/// (log.h): most runs leave none, however they end.
void route_messages(const Config& config) {
  if (config.messages_path.empty() || config.run_stderr.empty()) return;
  if (config.run_pid == sys::getpid()) g_messages_to_relay = new std::string(config.messages_path);
  if (log::file_identity(STDERR_FILENO) != config.run_stderr) {
    log::send_to_side_file(config.messages_path, config.run_pid);
  }
}

/// The other processes' messages, at the end of the run's first one. Not
/// from a thread sealed against its seccomp filter (which may punish the
/// file's open with SIGSYS): the messages then stay in the file.
void relay_messages() {
  if (sealed()) return;
  if (const std::string* path = std::exchange(g_messages_to_relay, nullptr)) log::relay_side_file(*path);
}

/// After a terminating signal's stand-in handler had the profile finished
/// (exit_signals.h), on the profiler thread: the summary stop() would give.
void summarize_after_exit_signal() {
  if (const Runtime* rt = g_runtime.load(std::memory_order_acquire)) summarize_run(*rt);
  relay_messages();
}

/// The last records, at exit: written by this thread, or by the profiler
/// thread where only it can write the profile (descriptors.h) or where this
/// one is sealed against its seccomp filter (which may refuse the files,
/// the locks and the sleeps the last records take).
void finish_profile(Profiler& profiler) {
  constexpr uint64_t timeout_ns = 5'000'000'000;
  if (descriptors::usable_here() && !sealed()) return profiler.shutdown();
  if (!profiler.shutdown_on_profiler_thread(timeout_ns, /*may_sleep=*/!sealed())) {
    log::warn("the profiler thread did not finish the profile within {} s: its last records are lost",
              timeout_ns / 1'000'000'000);
  }
}

void stop() {
  struct RelayLast {
    ~RelayLast() { relay_messages(); }
  } relay_last;
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (!rt) return;
  wake_parent_at_exit();  // `coz run --system`: its parent's waitpid claims the credit
  RuntimeSection section;
  if (g_warn_if_never_in_scope && g_sources && g_sources->mapped.empty()) {
    std::string globs;
    for (const auto& g : rt->config.binary_scope) globs += (globs.empty() ? "" : " ") + g;
    log::warn("no binary matching --binary-scope {} was ever loaded: nothing was profiled, no profile written", globs);
    return;
  }
  // What this thread does from here on is the runtime's (the program's
  // exit handlers have run): sampled, it made the shutdown up to 1 s
  // longer at --period 10us.
  ThreadState* t = current_thread();
  if (t && !sealed()) suspend_sampling(*t);  // a sealed one has none
  if (g_profiler) finish_profile(*g_profiler);
  summarize_run(*rt);
}

/// What the run saw, at its end: `-v`'s counts, and the warnings about what
/// the profile cannot see.
void summarize_run(const Runtime& rt) {
  if (!rt.config.fixed_line.empty() && !rt.fixed_line.load() && !rt.system) {  // --system: another process may have it
    log::warn("--fixed-line {}: no code at that line was loaded in the binaries in scope", rt.config.fixed_line);
  }
  log::info("{} samples, {} outside the scope, {} lost; threads paused {:.1f} ms in all",
            rt.stats.samples.load(), rt.stats.unattributed.load(), rt.stats.lost.load(),
            rt.ledger.total_paused() / 1e6);
  std::string walks;
  for (size_t i = 0; i < std::size(rt.stats.unwind_stops); ++i) {
    uint64_t n = rt.stats.unwind_stops[i].load();
    if (n > 0) walks += fmt::format("{}{} {}", walks.empty() ? "" : ", ", n, unwind_stop_name(static_cast<UnwindStop>(i)));
  }
  if (!walks.empty()) log::info("stack walks: {}", walks);
  if (uint64_t n = rt.stats.threads_on_timers.load()) {
    const uint64_t hardly_waiting = rt.config.timer_switch_rate_outside;
    log::info("{} thread(s) switched more than {} times per second of their CPU time{}: sampled from then on by a "
              "CPU-time timer, which costs nothing at a switch and samples on the scheduler's tick",
              n, rt.config.timer_switch_rate,
              hardly_waiting ? fmt::format(" ({} where they hardly waited)", hardly_waiting) : std::string());
  }
  if (uint64_t n = rt.stats.threads_on_whole_cpu.load()) {
    log::info("{} thread(s) woken mostly from outside the program switched more than {} times per second of their "
              "CPU time: sampled from then on {}",
              n, outside_switch_rate(rt),
              whole_cpu_sampling() ? "by an event on each CPU, which costs nothing at a switch (their CPU-time "
                                     "timers pay their delays)"
                                   : "by a CPU-time timer on the scheduler's tick (whole-CPU events refused)");
  }
  if (kernel_sampling()) {
    log::info("of which in system calls: {} samples, {} outside the scope, {} lost", rt.stats.kernel_samples.load(),
              rt.stats.unattributed_kernel.load(), rt.stats.lost_kernel.load());
  }
  warn_if_kernel_time_unsampled(rt);
  report_coverage(rt);
}

// Runs before the program's own constructors (preloaded libraries are
// initialised first), so the main thread is sampled from the start.
__attribute__((constructor)) void on_load() { start(); }
__attribute__((destructor)) void on_unload() { stop(); }

}  // namespace

void on_library_loaded() {
  Runtime* rt = runtime();
  if (!rt || !g_sources) return;
  RuntimeSection section;
  SignalsDeferred deferred;  // mapping takes milliseconds, holding the line map's lock
  FutexGuard guard(g_sources->lock);
  size_t added;
  {
    FutexGuard lines_guard(rt->lines_lock);
    added = build_line_map(*rt, *g_sources);
  }
  if (added == 0) return;
  if (!rt->config.fixed_line.empty() && !rt->fixed_line.load(std::memory_order_acquire)) {
    std::string error;
    rt->fixed_line.store(resolve_fixed_line(*rt, rt->config.fixed_line, error), std::memory_order_release);
  }
}

}  // namespace coz

// ---- the Coz ABI ------------------------------------------------------------------

extern "C" {

__attribute__((visibility("default"))) coz_counter_t* _coz_get_counter(int type, const char* name) {
  coz::RuntimeSection section;  // the registry allocates
  coz::SignalsDeferred deferred;  // under the lock the last experiment's records take (none when sealed)
  return coz::g_points ? coz::g_points->get_counter(type, name) : nullptr;
}

__attribute__((visibility("default"))) void _coz_pre_block() { coz::thread_pre_block(); }

__attribute__((visibility("default"))) void _coz_post_block(int skip_delays) {
  coz::thread_post_block(skip_delays != 0);
}

/// The program wakes another thread its own way (the Coz ABI): the wrappers' catch-up.
__attribute__((visibility("default"))) void _coz_catch_up() { coz::catch_up(); }

}  // extern "C"
