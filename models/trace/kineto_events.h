// The PyTorch profiler (Kineto) Chrome-trace JSON, parsed once into the events the importers
// and the calibration use. Field names are Kineto's (PyTorch 2.x):
//   cpu_op / user_annotation  "X" events with args "External id", "Record function id" (the
//                             RecordFunction handle, equal to the execution trace's rf_id),
//                             "Input Dims", "Input type", "Concrete Inputs" (record_shapes)
//   cuda_runtime / cuda_driver host API calls, args "correlation" and "External id" (the
//                             innermost cpu_op running on that thread when the call was made)
//   kernel / gpu_memset / gpu_memcpy  GPU events, args "device", "stream", "correlation"
//   gpu_user_annotation       GPU-side ranges of user annotations (Optimizer.step#...)
//   overhead                  the profiler's own work ("Activity Buffer Request": CUPTI)
// A GPU event is linked to its launch by correlation, the launch to its operator by External
// id. Times stay in the trace's microseconds. Errors are TraceErrors "<key>: <path>: ...".
// Older dialects are read as these: the capitalised categories of PyTorch 1.8-1.10 (Kernel,
// Memcpy, Memset, Runtime, Driver, Operator; canonical_category) and ProfilerStep#N as a cpu_op.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace ct::trace::kineto {

struct CpuOp {
  std::string name;
  double ts = 0, dur = 0;  // us
  int64_t tid = -1;
  int64_t external_id = -1;
  int64_t rf_id = -1;                    // "Record function id", -1 when absent
  bool annotation = false;               // user_annotation rather than cpu_op
  const nlohmann::json* args = nullptr;  // into KinetoTrace::doc
};

struct Launch {  // a cuda_runtime / cuda_driver call
  std::string name;
  double ts = 0, dur = 0;
  int64_t tid = -1;
  int64_t external_id = -1;
};

struct GpuEvent {
  double ts = 0, dur = 0;
  std::string cat, name;  // cat: kernel, gpu_memset or gpu_memcpy
  int64_t device = 0, stream = 0, correlation = -1, external_id = -1;
  const nlohmann::json* args = nullptr;  // into KinetoTrace::doc (NCCL kernels: record_param_comms)
};

struct Interval {
  double begin = 0, end = 0;
};

struct ProfilerStep {
  int64_t number = -1;  // N of ProfilerStep#N
  Interval window;      // CPU-side annotation
};

struct KinetoTrace {
  nlohmann::json doc;
  std::string device_name;                       // deviceProperties[0].name, "" when absent
  int sm_count = 0;                              // deviceProperties[0].numSms, 0 when absent
  std::vector<CpuOp> ops;                        // cpu_op and user_annotation events, in file order
  std::unordered_map<int64_t, Launch> launches;  // by correlation
  std::vector<Launch> syncs;                     // cuda*Synchronize calls: the CPU waits for the GPU there
  std::vector<GpuEvent> gpu;                     // every device
  std::vector<Interval> overhead;                // profiler overhead events
  std::vector<Interval> optimizer_windows;       // gpu_user_annotation Optimizer.step*
  std::vector<ProfilerStep> profiler_steps;      // ProfilerStep#N annotations, by start time
  std::map<std::string, int64_t> categories;     // complete events per category as written (all kept or not)
  int64_t rank = -1, world_size = -1;            // distributedInfo (torch.distributed), -1 when absent
};

// Reads and parses the file (gzip or plain). `key` names the scenario key in errors.
KinetoTrace read_kineto(const std::string& path, const std::string& key);

// The GPU events of one device: `device` >= 0, or the only one present (-1). Throws when the
// trace has none, several (device = -1) or not that one.
std::vector<GpuEvent> device_events(const KinetoTrace& trace, int device, const std::string& path,
                                    const std::string& key);

// Category as this reader names it: the 2021 dialect's Kernel, Memcpy, Memset, Runtime, Driver
// and Operator become kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver and cpu_op.
std::string canonical_category(const std::string& cat);

// Which step was replayed, and how it was chosen.
struct StepWindow {
  std::vector<GpuEvent> events;  // the step's GPU events, sorted by start
  int64_t profiler_step = -1;    // N of the ProfilerStep#N replayed, -1 when the trace has none
  int profiler_steps = 0;        // ProfilerStep annotations in the trace
  int empty_steps = 0;           // of them, without GPU events on the device (skipped)
  // The previous step's last GPU end (-inf without one): the step's period starts there when
  // its first events (a prefetch copy launched early) ran beside the previous step's work.
  double previous_end = -1e300;
};

// The step's GPU events on `device` (as device_events): those launched inside ProfilerStep#`step`
// (step >= 0), or else inside the last ProfilerStep annotation that launched any GPU work (a
// trailing empty one is skipped); every event when the trace has no ProfilerStep. Throws when
// there are none, or the asked step is not in the trace (naming the ones there).
StepWindow step_window(const KinetoTrace& trace, int device, int64_t step, const std::string& path,
                       const std::string& key);

// Kernel name of an NCCL kernel ("nccl" in any case).
bool is_nccl(const std::string& kernel_name);

// Training phase of a GPU event: optimizer when it starts inside an Optimizer.step GPU
// annotation, backward when launched from a thread that ran autograd::engine::evaluate_function
// operators, forward otherwise.
enum class Phase { forward, backward, optimizer };
class PhaseOf {
 public:
  explicit PhaseOf(const KinetoTrace& trace);
  Phase operator()(const GpuEvent& event) const;

 private:
  const KinetoTrace& trace_;
  std::set<int64_t> autograd_threads_;
};

// Parses JSON text; a syntax error names the byte offset. Shared with the execution trace.
nlohmann::json parse_json_text(const std::string& text, const std::string& path, const std::string& key);

}  // namespace ct::trace::kineto
