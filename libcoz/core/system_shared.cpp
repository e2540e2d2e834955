#include "system_shared.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <new>

#include <fmt/format.h>

namespace coz {

SharedLine* SharedLines::find_or_claim(std::string_view name) {
  if (name.size() >= SharedLine::name_size) return nullptr;
  for (size_t i = 0; i < size(); ++i) {
    SharedLine& entry = entries[i];
    if (entry.state.load(std::memory_order_acquire) == SharedLine::Ready && name == entry.name) return &entry;
  }
  uint32_t index = used.fetch_add(1, std::memory_order_acq_rel);
  if (index >= capacity) return nullptr;
  SharedLine& entry = entries[index];
  entry.state.store(SharedLine::Claiming, std::memory_order_relaxed);
  name.copy(entry.name, name.size());
  entry.name[name.size()] = '\0';
  entry.state.store(SharedLine::Ready, std::memory_order_release);
  return &entry;
}

namespace {

std::string shm_dir() {
  const char* dir = std::getenv("COZ_SHM_DIR");
  return dir && *dir ? dir : "/dev/shm";
}

}  // namespace

std::string system_shared_path(const std::string& name) {
  constexpr size_t longest_name = 64;
  if (name.empty() || name.size() > longest_name || name[0] == '.') return "";
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return "";
  }
  return shm_dir() + "/coz-system-" + name;
}

std::string create_system_shared(const std::string& name, const std::string& output_path, std::string& error) {
  std::string path;
  int fd = -1;
  if (name.empty()) {
    path = shm_dir() + "/coz-system-XXXXXX";
    fd = mkostemp(path.data(), O_CLOEXEC);  // O_EXCL, mode 0600: a planted name or link is refused
  } else {
    path = system_shared_path(name);
    if (path.empty()) {
      error = fmt::format("--system {}: expected a name of letters, digits, '-', '_' and '.'", name);
      return "";
    }
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  }
  if (fd < 0) {
    error = fmt::format("cannot create the shared file {}: {}", path, std::strerror(errno));
    return "";
  }
  void* memory = MAP_FAILED;
  if (ftruncate(fd, sizeof(SystemShared)) == 0) {
    memory = mmap(nullptr, sizeof(SystemShared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  int saved = errno;
  close(fd);
  if (memory == MAP_FAILED) {
    error = fmt::format("cannot size the shared file {}: {}", path, std::strerror(saved));
    unlink(path.c_str());
    return "";
  }
  auto* shared = new (memory) SystemShared;
  size_t n = std::min(output_path.size(), sizeof shared->output_path - 1);
  std::memcpy(shared->output_path, output_path.data(), n);
  munmap(memory, sizeof(SystemShared));
  return path;
}

SystemShared* map_system_shared(const char* path, std::string& error) {
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("cannot open the run's shared file {}: {}", path, std::strerror(errno));
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != sizeof(SystemShared)) {
    close(fd);
    error = fmt::format("{} is not this version's shared file", path);
    return nullptr;
  }
  void* memory = mmap(nullptr, sizeof(SystemShared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (memory == MAP_FAILED) {
    error = fmt::format("cannot map {}: {}", path, std::strerror(errno));
    return nullptr;
  }
  auto* shared = static_cast<SystemShared*>(memory);
  if (shared->magic != SystemShared::magic_value || shared->version != SystemShared::version_value ||
      shared->size != sizeof(SystemShared)) {
    munmap(memory, sizeof(SystemShared));
    error = fmt::format("{} is not this version's shared file", path);
    return nullptr;
  }
  return shared;
}

void unmap_system_shared(SystemShared* shared) {
  if (shared) munmap(shared, sizeof(SystemShared));
}

ProcessSlot* register_process(SystemShared& shared, int pid) {
  // The same pid still Live: the image this process exec'd from. It takes part no more.
  size_t n = std::min<size_t>(shared.process_count.load(std::memory_order_acquire), SystemShared::process_capacity);
  for (size_t i = 0; i < n; ++i) {
    ProcessSlot& old = shared.processes[i];
    if (old.pid.load(std::memory_order_relaxed) == pid && old.state.load(std::memory_order_acquire) == ProcessSlot::Live) {
      old.state.store(ProcessSlot::Exited, std::memory_order_release);
    }
  }
  uint32_t index = shared.process_count.fetch_add(1, std::memory_order_acq_rel);
  if (index >= SystemShared::process_capacity) return nullptr;
  ProcessSlot& slot = shared.processes[index];
  slot.settled_seq.store(shared.experiment_seq.load(std::memory_order_acquire) & ~1u, std::memory_order_relaxed);
  slot.pid.store(pid, std::memory_order_relaxed);
  slot.state.store(ProcessSlot::Live, std::memory_order_release);
  return &slot;
}

LeadClaim claim_vacant_lead(SystemShared& shared, int pid) {
  int32_t vacant = 0;
  if (shared.leader.compare_exchange_strong(vacant, pid, std::memory_order_acq_rel)) return LeadClaim::Claimed;
  return vacant == pid ? LeadClaim::AlreadyOurs : LeadClaim::Taken;
}

ProcessFate process_fate(int pid) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ProcessFate::Killed;
  char text[1024];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return ProcessFate::Killed;
  text[n] = '\0';
  // "pid (comm) S ...": fields counted from the last ')' (a name may hold
  // one); 3 is the state, 52 the exit code in waitpid's form (Linux 3.5+).
  const char* p = std::strrchr(text, ')');
  if (!p) return ProcessFate::Running;
  char state = 0;
  long status = -1;
  for (int field = 2; *p; ++p) {
    if (*p != ' ') continue;
    ++field;
    if (field == 3) state = p[1];
    if (field == 52) status = std::strtol(p + 1, nullptr, 10);
  }
  if (state != 'Z' && state != 'X' && state != 'x') return ProcessFate::Running;
  return status >= 0 && WIFEXITED(status) ? ProcessFate::Exited : ProcessFate::Killed;
}

void shared_futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns) {
  timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000u), static_cast<long>(timeout_ns % 1'000'000'000u)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void shared_futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace coz
