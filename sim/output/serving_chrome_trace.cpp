// The Chrome trace of a serving run: see serving_chrome_trace.hpp for the format.
#include "sim/output/serving_chrome_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <stdexcept>

#include "sim/output/atomic_file.hpp"
#include "sim/output/json.hpp"

namespace clustersim::sim {
namespace {

/// A non-negative count of nanoseconds in microseconds with exactly three decimals: 1234567 ns is "1234.567".
std::string microseconds(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

void check(const IterationRecord& r) {
  const bool times = std::isfinite(r.start_s) && std::isfinite(r.duration_s) && r.start_s >= 0 && r.duration_s >= 0;
  const bool counts = r.index >= 0 && r.engine >= 0 && r.sequences >= 0 && r.prefill_tokens >= 0 &&
                      r.decode_tokens >= 0 && r.kv_blocks_used >= 0;
  if (!times || !counts) {
    throw std::logic_error("serving chrome trace: iteration " + std::to_string(r.index) + " of engine " +
                           std::to_string(r.engine) + " has a negative or non-finite time or count");
  }
}

std::string track_name(int64_t engine, int64_t pipeline) {
  if (pipeline <= 1) return "replica " + std::to_string(engine);
  return "replica " + std::to_string(engine / pipeline) + " engine " + std::to_string(engine % pipeline);
}

}  // namespace

void write_serving_chrome_trace(std::ostream& out, const std::vector<IterationRecord>& records,
                                const ServingTraceInfo& info) {
  std::set<int64_t> engines;
  for (const IterationRecord& r : records) {
    check(r);
    engines.insert(r.engine);
  }
  const int64_t pipeline = std::max<int64_t>(1, info.pipeline_parallel);
  const IterationSampling& s = info.sampling;
  out << "{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"scenario\": " << json_string(info.scenario)
      << ", \"iterations\": " << info.iterations << ", \"recorded\": " << records.size() << ", \"every\": " << s.every
      << ", \"from_s\": " << json_number(s.from_s) << ", \"to_s\": " << json_number(s.to_s)
      << ", \"dropped\": " << info.dropped << ", \"time_unit\": \"us\"";
  for (const auto& [key, value] : info.other_data) out << ", " << json_string(key) << ": " << json_string(value);
  out << "},\n\"traceEvents\": [\n";
  std::string fleet = std::to_string(info.replicas) + (info.replicas == 1 ? " replica" : " replicas") + " x TP " +
                      std::to_string(info.tensor_parallel);
  if (pipeline > 1) fleet += " x PP " + std::to_string(pipeline);
  out << R"({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": )" << json_string("fleet: " + fleet)
      << "}}";
  for (const int64_t e : engines) {
    const std::string head = R"(", "ph": "M", "pid": 1, "tid": )" + std::to_string(e + 2) + R"(, "args": {)";
    out << ",\n{\"name\": \"thread_name" << head << "\"name\": " << json_string(track_name(e, pipeline)) << "}}";
    out << ",\n{\"name\": \"thread_sort_index" << head << "\"sort_index\": " << e << "}}";
  }
  for (const IterationRecord& r : records) {
    const int64_t ts = std::llround(r.start_s * 1e9), dur = std::llround(r.duration_s * 1e9);
    const char* name = r.prefill_tokens > 0 ? (r.decode_tokens > 0 ? "mixed" : "prefill") : "decode";
    out << ",\n{\"name\": \"" << name << R"(", "cat": "iteration", "ph": "X", "ts": )" << microseconds(ts)
        << ", \"dur\": " << microseconds(dur) << ", \"pid\": 1, \"tid\": " << r.engine + 2
        << ", \"args\": {\"iteration\": " << r.index << ", \"replica\": " << r.engine / pipeline
        << ", \"sequences\": " << r.sequences << ", \"prefill_tokens\": " << r.prefill_tokens
        << ", \"decode_tokens\": " << r.decode_tokens << ", \"kv_blocks_used\": " << r.kv_blocks_used
        << ", \"duration_ms\": " << json_number(r.duration_s * 1e3) << "}}";
  }
  out << "\n]\n}\n";
}

void write_serving_chrome_trace(const std::filesystem::path& path, const std::vector<IterationRecord>& records,
                                const ServingTraceInfo& info) {
  const std::string context = "write_serving_chrome_trace(\"" + path.string() + "\")";
  for (const IterationRecord& r : records) check(r);  // before touching the file system
  replace_atomically(path, context, [&](const std::filesystem::path& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error(context + ": cannot open " + tmp.string());
    write_serving_chrome_trace(out, records, info);
    out.flush();
    if (!out) throw std::runtime_error(context + ": write to " + tmp.string() + " failed");
  });
}

}  // namespace clustersim::sim
