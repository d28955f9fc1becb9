// The Chrome trace of a step: see chrome_trace.hpp for the format.
#include "sim/output/chrome_trace.hpp"

#include "sim/output/atomic_file.hpp"
#include "sim/output/json.hpp"


#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;


/// Nanoseconds of a time from the step's start (the engine's resolution).
int64_t to_ns(units::Seconds t) { return static_cast<int64_t>(std::llround(t.value() * 1e9)); }

/// A non-negative count of nanoseconds as a decimal number of `unit_ns` units, exactly: 1234567 ns with
/// unit 1000 is "1234.567". unit_ns is 1000 (µs) or 1000000000 (s).
std::string fixed_decimal(int64_t ns, int64_t unit_ns) {
  const int digits = unit_ns == 1000 ? 3 : 9;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%0*lld", static_cast<long long>(ns / unit_ns), digits,
                static_cast<long long>(ns % unit_ns));
  return buf;
}

// ---- events -----------------------------------------------------------------------------------------------

/// The streams of one GPU, in track order (index + 1 is the stream number of the header).
constexpr std::array<const char*, 7> kStreamNames = {"compute", "tp comm", "cp comm", "ep comm",
                                                     "p2p",     "dp sync", "optimizer"};
enum Stream : std::size_t { kCompute = 0, kTpComm = 1, kCpComm = 2, kEpComm = 3, kP2p = 4, kDpSync = 5, kOptimizer = 6 };

/// One complete event before track lanes are assigned.
struct Span {
  int64_t stage = 0;
  std::size_t stream = kCompute;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  std::string name;
  const char* cat = "";
  std::string args;  ///< JSON object text
};

std::string mb_args(const TraceSpan& s, const std::string& extra = "") {
  std::string a = "{";
  if (s.microbatch >= 0) {
    a += "\"microbatch\": " + std::to_string(s.microbatch) + ", \"chunk\": " + std::to_string(s.chunk);
  }
  if (!extra.empty()) a += (a.size() > 1 ? ", " : "") + extra;
  return a + "}";
}

void check_span(const TraceSpan& s, std::size_t stages) {
  auto fail = [&](const std::string& why) {
    throw std::logic_error("chrome trace: span of stage " + std::to_string(s.stage) + ", microbatch " +
                           std::to_string(s.microbatch) + ": " + why);
  };
  if (s.stage < 0 || static_cast<std::size_t>(s.stage) >= stages) {
    fail("stage outside [0, " + std::to_string(stages) + ")");
  }
  if (!std::isfinite(s.start.value()) || !std::isfinite(s.end.value()) || !std::isfinite(s.tp_comm.value())) {
    fail("a time is not finite");
  }
  if (s.start.value() < 0.0) fail("starts before the step");
  if (s.end < s.start) fail("ends before it starts");
  if (s.tp_comm.value() < 0.0) fail("negative tp_comm");
  if (!std::isfinite(s.cp_comm.value()) || s.cp_comm.value() < 0.0) fail("negative or non-finite cp_comm");
  if (!std::isfinite(s.ep_comm.value()) || s.ep_comm.value() < 0.0) fail("negative or non-finite ep_comm");
}

std::vector<Span> spans_of(const PipelineResult& pipeline) {
  const std::size_t stages = pipeline.stages.size();
  bool interleaved = false;
  // Start of each forward pass, by (stage, microbatch, chunk): tells activations from gradients.
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> forward_start;
  // End of each stage's optimizer step: a gradient-sync span after it is ZeRO's parameter all-gather.
  std::map<int64_t, int64_t> optimizer_end;
  for (const TraceSpan& s : pipeline.spans) {
    check_span(s, stages);
    interleaved = interleaved || s.chunk > 0;
    if (s.kind == SpanKind::optimizer) {
      const auto it = optimizer_end.find(s.stage);
      if (it == optimizer_end.end() || to_ns(s.end) < it->second) optimizer_end[s.stage] = to_ns(s.end);
    }
    if (s.kind == SpanKind::forward) {
      const auto key = std::make_tuple(s.stage, s.microbatch, s.chunk);
      const int64_t ts = to_ns(s.start);
      const auto it = forward_start.find(key);
      if (it == forward_start.end() || ts < it->second) forward_start[key] = ts;
    }
  }

  std::vector<Span> out;
  out.reserve(pipeline.spans.size() * 2);
  for (const TraceSpan& s : pipeline.spans) {
    const std::string mb = "mb " + std::to_string(s.microbatch);
    const std::string suffix = interleaved ? " chunk " + std::to_string(s.chunk) : "";
    const int64_t ts = to_ns(s.start);
    const int64_t dur = std::max<int64_t>(0, to_ns(s.end) - ts);
    Span e{s.stage, kCompute, ts, dur, "", "", ""};
    switch (s.kind) {
      case SpanKind::forward:
      case SpanKind::backward: {
        const char* pass = s.kind == SpanKind::forward ? "F" : "B";
        const int64_t tp = std::min(dur, to_ns(s.tp_comm));
        e.name = std::string(pass) + " " + mb + suffix;
        e.cat = "compute";
        e.args = mb_args(s, "\"tp_comm_us\": " + fixed_decimal(tp, 1000));
        if (tp > 0) {
          out.push_back({s.stage, kTpComm, ts + dur - tp, tp, "tp comm " + e.name, "tp_comm", mb_args(s)});
        }
        // The exposed K/V exchange, drawn just before the tensor-parallel communication at the pass's end.
        const int64_t cp = std::min(dur - tp, to_ns(s.cp_comm));
        if (cp > 0) {
          e.args.pop_back();
          e.args += ", \"cp_comm_us\": " + fixed_decimal(cp, 1000) + "}";
          out.push_back({s.stage, kCpComm, ts + dur - tp - cp, cp, "cp comm " + e.name, "cp_comm", mb_args(s)});
        }
        // The exposed MoE dispatch and combine, drawn before those.
        const int64_t ep = std::min(dur - tp - std::max<int64_t>(cp, 0), to_ns(s.ep_comm));
        if (ep > 0) {
          e.args.pop_back();
          e.args += ", \"ep_comm_us\": " + fixed_decimal(ep, 1000) + "}";
          out.push_back({s.stage, kEpComm, ts + dur - tp - std::max<int64_t>(cp, 0) - ep, ep, "ep comm " + e.name,
                         "ep_comm", mb_args(s)});
        }
        break;
      }
      case SpanKind::p2p: {
        const auto it = forward_start.find(std::make_tuple(s.stage, s.microbatch, s.chunk));
        const int64_t end = ts + dur;
        const char* what = it == forward_start.end() ? "recv " : end <= it->second ? "recv act " : "recv grad ";
        e.stream = kP2p;
        e.name = what + mb + suffix;
        e.cat = "p2p";
        e.args = mb_args(s);
        break;
      }
      case SpanKind::grad_sync: {
        const auto it = optimizer_end.find(s.stage);
        e.stream = kDpSync;
        e.name = it != optimizer_end.end() && ts >= it->second ? "param all-gather" : "grad sync";
        e.cat = "dp_sync";
        e.args = mb_args(s);
        break;
      }
      case SpanKind::optimizer:
        e.stream = kOptimizer;
        e.name = "adam";
        e.cat = "optimizer";
        e.args = mb_args(s);
        break;
    }
    out.push_back(std::move(e));
  }
  return out;
}

/// A track: one lane of one stream of one stage.
struct Track {
  int64_t stage = 0;
  std::size_t stream = 0;
  std::size_t lane = 0;
  auto operator<=>(const Track&) const = default;
};

std::string gpu_range(int64_t stage, const ChromeTraceInfo& info) {
  const int64_t per_stage = std::max<int64_t>(1, info.tensor_parallel) * std::max<int64_t>(1, info.context_parallel) *
                            std::max<int64_t>(1, info.data_parallel);
  const int64_t first = stage * per_stage;
  const int64_t last = first + per_stage - 1;
  return first == last ? "GPU " + std::to_string(first)
                       : "GPUs " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

std::string chrome_trace_json(const PipelineResult& pipeline, const ChromeTraceInfo& info) {
  static const std::set<std::string> reserved = {"scenario",    "tensor_parallel", "pipeline_parallel",
                                                 "data_parallel", "microbatches",  "step_time_s",
                                                 "critical_stage", "fidelity",     "time_unit", "context_parallel"};
  std::set<std::string> keys;
  for (const auto& [key, value] : info.other_data) {
    if (reserved.count(key) != 0) throw std::invalid_argument("chrome trace: other_data key '" + key + "' is reserved");
    if (!keys.insert(key).second) throw std::invalid_argument("chrome trace: duplicate other_data key '" + key + "'");
  }

  std::vector<Span> spans = spans_of(pipeline);
  // Lanes: per (stage, stream), spans by start (longest first) go to the first lane that is free by then.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.stage, a.stream, a.ts_ns, b.dur_ns, a.name) <
           std::tie(b.stage, b.stream, b.ts_ns, a.dur_ns, b.name);
  });
  std::vector<Track> span_track(spans.size());
  std::set<Track> tracks;
  {
    std::map<std::pair<int64_t, std::size_t>, std::vector<int64_t>> lane_end;  // (stage, stream) -> end per lane
    for (std::size_t i = 0; i < spans.size(); ++i) {
      std::vector<int64_t>& ends = lane_end[{spans[i].stage, spans[i].stream}];
      std::size_t lane = 0;
      while (lane < ends.size() && ends[lane] > spans[i].ts_ns) ++lane;
      if (lane == ends.size()) ends.push_back(0);
      ends[lane] = spans[i].ts_ns + spans[i].dur_ns;
      span_track[i] = {spans[i].stage, spans[i].stream, lane};
      tracks.insert(span_track[i]);
    }
  }
  // Thread ids: unique over the whole trace (Perfetto keys thread names by tid alone) and above every pid.
  const auto stages = static_cast<int64_t>(pipeline.stages.size());
  std::map<Track, int64_t> tid;
  for (const Track& t : tracks) tid.emplace(t, stages + 1 + static_cast<int64_t>(tid.size()));

  std::string out;
  out.reserve(256 + 200 * (spans.size() + tracks.size() + pipeline.stages.size()));
  out += "{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {";
  out += "\"scenario\": " + json_string(info.scenario);
  out += ", \"tensor_parallel\": " + std::to_string(info.tensor_parallel);
  out += ", \"pipeline_parallel\": " + std::to_string(stages);
  out += ", \"data_parallel\": " + std::to_string(info.data_parallel);
  if (info.context_parallel > 1) out += ", \"context_parallel\": " + std::to_string(info.context_parallel);
  out += ", \"microbatches\": " + std::to_string(info.microbatches);
  out += ", \"step_time_s\": " + fixed_decimal(std::max<int64_t>(0, to_ns(pipeline.step_time)), 1000000000);
  out += ", \"critical_stage\": " + std::to_string(pipeline.critical_stage);
  out += info.full_fidelity
             ? ", \"fidelity\": \"full: every data-parallel replica of a stage simulated (" +
                   std::to_string(pipeline.replicas) +
                   "); each stage's tracks are replica 0's representative GPU (its first rank)\""
             : ", \"fidelity\": \"replica: each stage's tracks are one representative GPU (its first rank)\"";
  out += ", \"time_unit\": \"us\"";
  for (const auto& [key, value] : info.other_data) out += ", " + json_string(key) + ": " + json_string(value);
  out += "},\n\"traceEvents\": [\n";

  bool first = true;
  auto event = [&](const std::string& text) {
    if (!first) out += ",\n";
    first = false;
    out += text;
  };
  // Metadata: process names and order, then thread names and order.
  for (int64_t k = 0; k < stages; ++k) {
    const std::string pid = std::to_string(k + 1);
    event("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"args\": {\"name\": " +
          json_string("stage " + std::to_string(k) + " (" + gpu_range(k, info) + ")") + "}}");
    event("{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " + pid + ", \"args\": {\"sort_index\": " +
          std::to_string(k) + "}}");
  }
  for (const auto& [t, id] : tid) {
    std::string name = kStreamNames[t.stream];
    if (t.lane > 0) name += " #" + std::to_string(t.lane + 1);
    const std::string head = "\", \"ph\": \"M\", \"pid\": " + std::to_string(t.stage + 1) +
                             ", \"tid\": " + std::to_string(id) + ", \"args\": {";
    event("{\"name\": \"thread_name" + head + "\"name\": " + json_string(name) + "}}");
    event("{\"name\": \"thread_sort_index" + head + "\"sort_index\": " + std::to_string(id) + "}}");
  }
  // Complete events, by track, then time (spans is in that order already: tracks sort like (stage, stream, lane)).
  std::vector<std::size_t> order(spans.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return span_track[a] < span_track[b];
  });
  for (const std::size_t i : order) {
    const Span& s = spans[i];
    event("{\"name\": " + json_string(s.name) + ", \"cat\": \"" + s.cat + "\", \"ph\": \"X\", \"ts\": " +
          fixed_decimal(s.ts_ns, 1000) + ", \"dur\": " + fixed_decimal(s.dur_ns, 1000) +
          ", \"pid\": " + std::to_string(s.stage + 1) + ", \"tid\": " + std::to_string(tid.at(span_track[i])) +
          ", \"args\": " + s.args + "}");
  }
  out += "\n]\n}\n";
  return out;
}

void write_chrome_trace(const std::filesystem::path& path, const PipelineResult& pipeline,
                        const ChromeTraceInfo& info) {
  write_text_atomically(path, chrome_trace_json(pipeline, info), "write_chrome_trace(\"" + path.string() + "\")");
}

}  // namespace clustersim::sim
