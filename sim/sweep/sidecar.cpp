#include "sim/sweep/sidecar.hpp"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <variant>

#include "sim/errors.hpp"
#include "sim/input_file.hpp"

namespace clustersim::sim {

namespace fs = std::filesystem;

std::string number_text(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::optional<double> parse_number(std::string_view t) {
  if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (t == "-nan") return -std::numeric_limits<double>::quiet_NaN();
  if (t == "inf") return std::numeric_limits<double>::infinity();
  if (t == "-inf") return -std::numeric_limits<double>::infinity();
  double v = 0.0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char n = s[++i];
    out += n == 't' ? '\t' : n == 'n' ? '\n' : n == 'r' ? '\r' : n;
  }
  return out;
}

}  // namespace

std::vector<std::string> split_tabs(std::string_view line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    out.push_back(unescape(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start)));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return out;
}

std::string RowEncoder::encode(const SweepRow& r) {
  std::string text;
  int64_t id = -1;
  if (r.meta) {
    const auto it = ids_.find(r.meta.get());
    if (it != ids_.end()) {
      id = it->second;
    } else {
      id = next_++;
      ids_[r.meta.get()] = id;
      keep_.push_back(r.meta);
      text += "M\t" + std::to_string(id);
      for (const SweepColumnMeta& m : *r.meta) {
        text += "\t" + escape(m.name) + (m.is_string ? "\ts\t" : "\td\t") + escape(m.units) + "\t" +
                escape(m.description);
      }
      text += "\n";
    }
  }
  text += "R\t" + std::to_string(r.index) + "\t" + std::to_string(r.seed) + "\t" + escape(r.status) + "\t" +
          escape(r.reason) + "\t" + std::to_string(id);
  for (const SweepValue& v : r.values) {
    text += "\t";
    text += std::holds_alternative<std::string>(v) ? escape(std::get<std::string>(v))
                                                    : number_text(std::get<double>(v));
  }
  text += "\n";
  return text;
}

void RowEncoder::known(const std::shared_ptr<const SweepMetaList>& meta, int64_t id) {
  ids_[meta.get()] = id;
  keep_.push_back(meta);
  next_ = std::max(next_, id + 1);
}

namespace {
/// `t` as a decimal integer of type T; throws DataError (naming `where`) when it is not one.
template <typename T = int64_t>
T integer(std::string_view t, const std::string& where) {
  T v = 0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || res.ec != std::errc() || res.ptr != t.data() + t.size()) {
    throw DataError(where + ": malformed line: '" + escape(t) + "' is not an integer");
  }
  return v;
}
}  // namespace

namespace {
bool is_column_name(std::string_view n) {
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}
}  // namespace

std::optional<SweepRow> RowDecoder::decode(std::string_view line, int64_t line_number) {
  const std::string where = line_number > 0 ? where_ + ":" + std::to_string(line_number) : where_;
  const auto fail = [&where](const std::string& why) { throw DataError(where + ": " + why); };
  const auto f = split_tabs(line);
  if (f[0] == "M") {
    if (f.size() < 2 || (f.size() - 2) % 4 != 0) fail("malformed column list (M line)");
    auto meta = std::make_shared<SweepMetaList>();
    for (size_t i = 2; i + 3 < f.size(); i += 4) {
      if (!is_column_name(f[i])) fail("column name '" + escape(f[i]) + "' is not [a-z0-9_]+");
      if (f[i + 1] != "s" && f[i + 1] != "d") fail("column type '" + escape(f[i + 1]) + "' is not d or s");
      meta->push_back({f[i], f[i + 2], f[i + 3], f[i + 1] == "s"});
    }
    metas_[integer(f[1], where)] = std::move(meta);
    return std::nullopt;
  }
  if (f[0] != "R" || f.size() < 6) fail("malformed line (neither a column list nor a row)");
  SweepRow r;
  r.index = integer(f[1], where);
  if (r.index < 0) fail("negative point index " + f[1]);
  r.seed = integer<uint64_t>(f[2], where);
  r.status = f[3];
  if (r.status != "ok" && r.status != "invalid" && r.status != "out_of_memory") {
    fail("status '" + escape(r.status) + "' of point " + f[1] + " is not ok, invalid or out_of_memory");
  }
  r.reason = f[4];
  const int64_t id = integer(f[5], where);
  if (id < 0 && r.status != "invalid") fail("point " + f[1] + " is " + r.status + " and has no columns");
  if (id < 0 && f.size() != 6) fail("malformed row for point " + f[1]);
  if (id >= 0) {
    const auto it = metas_.find(id);
    if (it == metas_.end() || it->second->size() != f.size() - 6) fail("malformed row for point " + f[1]);
    r.meta = it->second;
    for (size_t i = 0; i < r.meta->size(); ++i) {
      if ((*r.meta)[i].is_string) {
        r.values.emplace_back(f[6 + i]);
      } else {
        const auto v = parse_number(f[6 + i]);
        if (!v) fail("malformed number in the row of point " + f[1]);
        r.values.emplace_back(*v);
      }
    }
  }
  return r;
}

constexpr std::string_view kSidecarMagic = "clustersim-sweep-partial";

Sidecar::Sidecar(fs::path path, const std::vector<FingerprintPart>& fingerprint, bool resume,
                 std::map<int64_t, SweepRow>& done, const RowCheck& check)
    : path_(std::move(path)) {
  bool fresh = true;
  std::error_code exists_error;
  if (resume && fs::exists(path_, exists_error)) {
    std::string all;
    try {
      all = read_input_file(path_, kMaxTraceInputBytes);
    } catch (const InputFileError& e) {
      throw DataError(path_.string() + ": " + e.what());
    }
    const size_t complete = all.rfind('\n');
    all.resize(complete == std::string::npos ? 0 : complete + 1);
    std::istringstream lines(all);
    std::string line;
    bool header = false;
    int64_t number = 0;
    RowDecoder decoder(path_.string());
    while (std::getline(lines, line)) {
      ++number;
      if (!header) {
        const auto f = split_tabs(line);
        if (f.size() < 2 || f[0] != kSidecarMagic) throw DataError(path_.string() + ":1: not a sweep sidecar file");
        if (f[1] != "2") {
          throw DataError(path_.string() + ":1: written by an older clustersim (format " + escape(f[1]) +
                          ", whose fingerprint does not cover the inputs' content); delete it or run without --resume");
        }
        if (f.size() % 2 != 0) throw DataError(path_.string() + ":1: malformed sidecar header");
        std::vector<FingerprintPart> was;
        for (size_t i = 2; i + 1 < f.size(); i += 2) was.push_back({f[i], f[i + 1]});
        if (was != fingerprint) {
          std::string what = describe_fingerprint_change(was, fingerprint, "since the sidecar was written");
          if (what.empty()) what = "its fingerprint differs";
          throw DataError(path_.string() + ":1: " + what +
                          "; it belongs to another sweep: delete it or run without --resume");
        }
        header = true;
        continue;
      }
      if (std::optional<SweepRow> r = decoder.decode(line, number)) {
        if (check) {
          if (const std::string why = check(*r); !why.empty()) {
            throw DataError(path_.string() + ":" + std::to_string(number) + ": " + why);
          }
        }
        done[r->index] = std::move(*r);
      }
    }
    for (const auto& [id, meta] : decoder.metas()) encoder_.known(meta, id);
    if (header) {
      std::error_code ec;
      fs::resize_file(path_, all.size(), ec);
      if (ec) throw IoError("cannot write " + path_.string() + ": " + ec.message());
      fresh = false;
    }
  }
  file_ = std::fopen(path_.c_str(), fresh ? "wb" : "ab");
  if (file_ == nullptr) throw IoError("cannot write " + path_.string() + ": " + std::strerror(errno));
  if (fresh) {
    std::string header = std::string(kSidecarMagic) + "\t2";
    for (const FingerprintPart& p : fingerprint) header += "\t" + escape(p.name) + "\t" + escape(p.hash);
    write(header + "\n");
  }
}

Sidecar::~Sidecar() {
  if (file_ != nullptr) std::fclose(file_);
}

void Sidecar::append(const SweepRow& r) {
  std::lock_guard lock(mutex_);
  write(encoder_.encode(r));
}

void Sidecar::remove() {
  std::lock_guard lock(mutex_);
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  fs::remove(path_, ec);
}

void Sidecar::write(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    throw IoError("cannot write " + path_.string() + ": " + std::strerror(errno));
  }
}

uint64_t fnv1a(std::string_view s, uint64_t h) {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}


}  // namespace clustersim::sim
