// An NVTX injection library that writes down the ranges a process starts and ends: the same
// door Nsight Systems comes in by (NVTX_INJECTION64_PATH names the library; NVTX loads it at
// the process's first NVTX call and routes the calls it registers for into it), so a test can
// see what a profile would show without a profiler.
//
//   NVTX_INJECTION64_PATH=libswp-nvtx-recorder.so SWP_NVTX_RECORD=ranges.txt swp run ... --nvtx
//
// writes one line per call to the file SWP_NVTX_RECORD names, when the process exits:
//   start <id> <thread> <name>
//   end <id> <thread>
// ids count from 1 in the order the ranges started; <thread> numbers the calling threads from
// 1 in the order they first called. Only nvtxRangeStartA and nvtxRangeEnd are recorded (what
// swp calls: a task's range may end on another thread than it started on).

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Call {
  bool start;
  std::uint64_t id;
  int thread;
  std::string name;
};

class Record {
 public:
  void add(Call call) {
    const std::lock_guard lock(mutex_);
    calls_.push_back(std::move(call));
  }
  // Written at exit (the static's destructor): the calls of a whole run, whichever threads
  // made them.
  ~Record() {
    const char* path = std::getenv("SWP_NVTX_RECORD");
    if (path == nullptr) return;
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) return;
    for (const Call& c : calls_) {
      if (c.start)
        std::fprintf(out, "start %llu %d %s\n", static_cast<unsigned long long>(c.id), c.thread,
                     c.name.c_str());
      else
        std::fprintf(out, "end %llu %d\n", static_cast<unsigned long long>(c.id), c.thread);
    }
    std::fclose(out);
  }

 private:
  std::mutex mutex_;
  std::vector<Call> calls_;
};

Record record;
std::atomic<std::uint64_t> next_id{1};
std::atomic<int> next_thread{1};

int this_thread() {
  thread_local const int number = next_thread.fetch_add(1);
  return number;
}

nvtxRangeId_t NVTX_API range_start(const char* message) {
  const std::uint64_t id = next_id.fetch_add(1);
  record.add({true, id, this_thread(), message != nullptr ? message : "(null)"});
  return id;
}

void NVTX_API range_end(nvtxRangeId_t id) { record.add({false, id, this_thread(), {}}); }

}  // namespace

// NVTX's entry point into an injection library: register the two calls; 0 tells NVTX that
// this library could not attach (its calls then stay no-ops).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0) return 0;
  if (table == nullptr || size <= NVTX_CBID_CORE_RangeEnd) return 0;
  *table[NVTX_CBID_CORE_RangeStartA] = reinterpret_cast<NvtxFunctionPointer>(&range_start);
  *table[NVTX_CBID_CORE_RangeEnd] = reinterpret_cast<NvtxFunctionPointer>(&range_end);
  return 1;
}
