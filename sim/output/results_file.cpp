// The HDF5 results file: see results_file.hpp for the contract and docs/hdf5-schema.md for the schema.
#include "sim/output/results_file.hpp"

#include "sim/output/atomic_file.hpp"


#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "sim/output/hdf5_util.hpp"

#include <hdf5_hl.h>

namespace clustersim::sim {
namespace {

namespace fs = std::filesystem;
using hdf5::Hid;

/// HDF5 runs its own H5close at exit by default. After a write failed (a full disk, RLIMIT_FSIZE), HDF5 1.10.8
/// cannot close the file (H5Fclose fails, and the file stays half-open in the library), and that H5close then
/// crashes with SIGSEGV (issue 26, defect 4). Every file this program writes is closed explicitly, so the
/// close-at-exit has nothing to do on success; turning it off, before the library's first call, removes the
/// crash after a failure. (Static initialisation: this unit is linked wherever results files are written.)
[[maybe_unused]] const bool kNoHdf5CloseAtExit = H5dont_atexit() >= 0;

/// The system's reason from the innermost HDF5 error ("No space left on device", "File too large"), taken from
/// the sec2 driver's "error message = '...'"; "" when the failure was not a system call's.
std::string system_error_text(const std::string& detail) {
  const std::string marker = "error message = '";
  const std::size_t begin = detail.find(marker);
  if (begin == std::string::npos) return "";
  const std::size_t end = detail.find('\'', begin + marker.size());
  if (end == std::string::npos) return "";
  return detail.substr(begin + marker.size(), end - begin - marker.size());
}

/// Throws std::runtime_error "<context>: <call> failed: <innermost HDF5 message>", or, when a system call
/// failed underneath, "<context>: <the system's reason> (<call> failed)", e.g. "...: No space left on device
/// (H5Dwrite(\"/summary/x\") failed)": the driver's flags and buffer addresses are left out.
[[noreturn]] void throw_hdf5(const std::string& context, const std::string& call) {
  const std::string detail = hdf5::error_detail();
  if (const std::string reason = system_error_text(detail); !reason.empty()) {
    throw std::runtime_error(context + ": " + reason + " (" + call + " failed)");
  }
  std::string msg = context + ": " + call + " failed";
  if (!detail.empty()) msg += ": " + detail;
  throw std::runtime_error(msg);
}

/// After a failed write: closes whatever of `file` is still open (datasets, groups, attributes, named types),
/// then the file, ignoring their errors (the first error is the one reported). The file may stay half-open in
/// HDF5 after a failed write (see kNoHdf5CloseAtExit); its temporary name is removed by the atomic writer.
void close_after_failure(Hid& file) {
  if (!file.valid()) return;
  const unsigned types = H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_DATATYPE | H5F_OBJ_ATTR | H5F_OBJ_LOCAL;
  const ssize_t count = H5Fget_obj_count(file.get(), types);
  if (count > 0) {
    std::vector<hid_t> ids(static_cast<std::size_t>(count));
    const ssize_t got = H5Fget_obj_ids(file.get(), types, ids.size(), ids.data());
    for (ssize_t i = 0; i < got; ++i) {
      if (H5Iget_type(ids[static_cast<std::size_t>(i)]) == H5I_ATTR) {
        H5Aclose(ids[static_cast<std::size_t>(i)]);
      } else {
        H5Oclose(ids[static_cast<std::size_t>(i)]);
      }
    }
  }
  file.close();
}

bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

void check_no_nul(const std::string& s, const std::string& what) {
  if (s.find('\0') != std::string::npos) {
    throw std::invalid_argument("write_results_file: " + what +
                                " contains a NUL character (HDF5 strings are NUL-terminated)");
  }
}

std::size_t column_size(const SummaryColumn& c) {
  return std::visit([](const auto& v) { return v.size(); }, c.values);
}

/// Checks one table of columns; `where` names it in messages ("" for /summary, " in group 'runs/0'").
void validate_columns(const std::vector<SummaryColumn>& columns, const std::string& where) {
  std::set<std::string> seen;
  for (const SummaryColumn& c : columns) {
    if (!valid_name(c.name)) {
      throw std::invalid_argument("write_results_file: column name '" + c.name + "'" + where +
                                  " does not match [a-z0-9_]+");
    }
    if (!seen.insert(c.name).second) {
      throw std::invalid_argument("write_results_file: duplicate column name '" + c.name + "'" + where);
    }
    if (column_size(c) != column_size(columns.front())) {
      throw std::invalid_argument("write_results_file: column '" + c.name + "'" + where + " has " +
                                  std::to_string(column_size(c)) + " rows but column '" +
                                  columns.front().name + "' has " +
                                  std::to_string(column_size(columns.front())));
    }
    check_no_nul(c.units, "units of column '" + c.name + "'" + where);
    check_no_nul(c.description, "description of column '" + c.name + "'" + where);
    if (const auto* s = std::get_if<std::vector<std::string>>(&c.values)) {
      for (const std::string& v : *s) check_no_nul(v, "a value of column '" + c.name + "'" + where);
    }
  }
}

/// The components of a group path "a/b/c"; empty if malformed.
std::vector<std::string> path_components(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t slash = path.find('/', begin);
    std::string part = path.substr(begin, slash == std::string::npos ? std::string::npos : slash - begin);
    if (!valid_name(part)) return {};
    parts.push_back(std::move(part));
    if (slash == std::string::npos) return parts;
    begin = slash + 1;
  }
}

/// True if `ancestor` is `path` or one of its ancestors ("a/b" of "a/b/c", not of "a/bc").
bool is_or_contains(const std::string& ancestor, const std::string& path) {
  return path == ancestor || (path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
                              path[ancestor.size()] == '/');
}

void validate(const RunMetadata& meta, const std::vector<SummaryColumn>& columns,
              const std::vector<ColumnGroup>& groups) {
  check_no_nul(meta.software_version, "software_version");
  check_no_nul(meta.git_sha, "git_sha");
  check_no_nul(meta.command_line, "command_line");
  check_no_nul(meta.scenario_toml, "scenario_toml");
  validate_columns(columns, "");
  std::set<std::string> paths;
  for (const ColumnGroup& g : groups) {
    const std::vector<std::string> parts = path_components(g.path);
    if (parts.empty()) {
      throw std::invalid_argument("write_results_file: group path '" + g.path +
                                  "' is not [a-z0-9_]+ components joined by '/'");
    }
    if (parts.front() == "summary") {
      throw std::invalid_argument("write_results_file: group path '" + g.path + "' lies under /summary");
    }
    if (!paths.insert(g.path).second) {
      throw std::invalid_argument("write_results_file: duplicate group path '" + g.path + "'");
    }
    check_no_nul(g.description, "description of group '" + g.path + "'");
    validate_columns(g.columns, " in group '" + g.path + "'");
  }
  // A dataset cannot also be a group (or hold one).
  for (const ColumnGroup& g : groups) {
    for (const SummaryColumn& c : g.columns) {
      const std::string dataset = g.path + "/" + c.name;
      for (const std::string& p : paths) {
        if (is_or_contains(dataset, p)) {
          throw std::invalid_argument("write_results_file: column '" + dataset + "' is also the group '" + p +
                                      "' or one of its ancestors");
        }
      }
    }
  }
}

void validate_grids(const std::vector<ColumnGroup>& groups, const std::vector<GridGroup>& grids) {
  std::set<std::string> group_paths;
  for (const ColumnGroup& g : groups) group_paths.insert(g.path);
  std::set<std::string> grid_paths;
  for (const GridGroup& g : grids) {
    const std::vector<std::string> parts = path_components(g.path);
    if (parts.empty() || parts.front() == "summary") {
      throw std::invalid_argument("write_results_file: grid path '" + g.path + "' is malformed or under /summary");
    }
    if (!grid_paths.insert(g.path).second) {
      throw std::invalid_argument("write_results_file: duplicate grid path '" + g.path + "'");
    }
    if (g.axes.empty()) throw std::invalid_argument("write_results_file: grid '" + g.path + "' has no axes");
    std::size_t cells = 1;
    for (const SummaryColumn& a : g.axes) {
      if (column_size(a) == 0 || std::holds_alternative<std::vector<int64_t>>(a.values)) {
        throw std::invalid_argument("write_results_file: axis '" + a.name + "' of grid '" + g.path +
                                    "' is empty or int64");
      }
      cells *= column_size(a);
    }
    std::vector<SummaryColumn> all = g.axes;
    all.insert(all.end(), g.datasets.begin(), g.datasets.end());
    std::set<std::string> names;
    for (const SummaryColumn& c : all) {
      if (!valid_name(c.name) || !names.insert(c.name).second) {
        throw std::invalid_argument("write_results_file: grid '" + g.path + "': bad or duplicate name '" +
                                    c.name + "'");
      }
      check_no_nul(c.units, "units of '" + c.name + "'");
      check_no_nul(c.description, "description of '" + c.name + "'");
      if (std::holds_alternative<std::vector<std::string>>(c.values)) {
        for (const std::string& s : std::get<std::vector<std::string>>(c.values)) check_no_nul(s, c.name);
      }
      const std::string dataset = g.path + "/" + c.name;
      for (const std::string& p : group_paths) {
        if (is_or_contains(dataset, p)) {
          throw std::invalid_argument("write_results_file: grid dataset '" + dataset + "' is also the group '" +
                                      p + "' or one of its ancestors");
        }
      }
    }
    for (const SummaryColumn& c : g.datasets) {
      if (!std::holds_alternative<std::vector<double>>(c.values) || column_size(c) != cells) {
        throw std::invalid_argument("write_results_file: grid dataset '" + g.path + "/" + c.name +
                                    "' is not float64 of the grid's size");
      }
    }
  }
}

/// Creates the HDF5 objects and writes them; every step is checked. `ctx` prefixes error messages.
class Writer {
 public:
  explicit Writer(std::string ctx) : ctx_(std::move(ctx)) {}

  void write(const fs::path& tmp, const RunMetadata& meta, const std::vector<SummaryColumn>& columns,
             const std::vector<ColumnGroup>& groups, const std::vector<GridGroup>& grids) {
    // File creation: no object timestamps on the root group (fcpl is a group-creation list).
    Hid fcpl = make(H5Pcreate(H5P_FILE_CREATE), H5Pclose, "H5Pcreate(H5P_FILE_CREATE)");
    check(H5Pset_obj_track_times(fcpl.get(), 0), "H5Pset_obj_track_times(fcpl)");
    // File access: the on-disk format is pinned to the 1.8 object formats (readable by HDF5 >= 1.8, and
    // unchanged when the library is upgraded); closing the file closes anything left open.
    Hid fapl = make(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate(H5P_FILE_ACCESS)");
    check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), "H5Pset_libver_bounds");
    check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "H5Pset_fclose_degree");
    gcpl_ = make(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, "H5Pcreate(H5P_GROUP_CREATE)");
    check(H5Pset_obj_track_times(gcpl_.get(), 0), "H5Pset_obj_track_times(gcpl)");
    dcpl_ = make(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate(H5P_DATASET_CREATE)");
    check(H5Pset_obj_track_times(dcpl_.get(), 0), "H5Pset_obj_track_times(dcpl)");
    str_type_ = make(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy(H5T_C_S1)");
    check(H5Tset_size(str_type_.get(), H5T_VARIABLE), "H5Tset_size(H5T_VARIABLE)");
    check(H5Tset_cset(str_type_.get(), H5T_CSET_UTF8), "H5Tset_cset(H5T_CSET_UTF8)");
    scalar_ = make(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate(H5S_SCALAR)");

    Hid file = make(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose,
                    "H5Fcreate(\"" + tmp.string() + "\")");
    try {
      write_contents(file, meta, columns, groups, grids);
    } catch (...) {
      close_after_failure(file);
      throw;
    }
  }

 private:
  /// Everything in the open `file`, then its flush and close (each checked: a full disk is found here, while
  /// the file can still be closed by close_after_failure).
  void write_contents(Hid& file, const RunMetadata& meta, const std::vector<SummaryColumn>& columns,
                      const std::vector<ColumnGroup>& groups, const std::vector<GridGroup>& grids) {

    string_attr(file.get(), "/", "software_version", meta.software_version);
    string_attr(file.get(), "/", "git_sha", meta.git_sha);
    int64_t schema = meta.schema_version;
    attr(file.get(), "/", "schema_version", H5T_STD_I64LE, H5T_NATIVE_INT64, &schema);
    string_attr(file.get(), "/", "command_line", meta.command_line);
    uint64_t seed = meta.seed;
    attr(file.get(), "/", "seed", H5T_STD_U64LE, H5T_NATIVE_UINT64, &seed);
    string_attr(file.get(), "/", "scenario_toml", meta.scenario_toml);

    Hid summary = make(H5Gcreate2(file.get(), "summary", H5P_DEFAULT, gcpl_.get(), H5P_DEFAULT),
                       H5Gclose, "H5Gcreate2(\"/summary\")");
    for (const SummaryColumn& c : columns) column(summary.get(), "/summary", c);
    check(summary.close(), "H5Gclose(\"/summary\")");

    // Further groups, each created with the timestamp-free gcpl (so are the intermediate ones, which is why
    // they are created here one by one and not with H5Pset_create_intermediate_group).
    std::set<std::string> existing;
    // Opens the group at `path`, creating it and its missing ancestors first; returns the handle and its name.
    auto open_group = [&](const std::string& path) {
      std::string sofar;
      for (const std::string& part : path_components(path)) {
        sofar += "/" + part;
        if (existing.insert(sofar).second) {
          Hid created = make(H5Gcreate2(file.get(), sofar.c_str(), H5P_DEFAULT, gcpl_.get(), H5P_DEFAULT),
                             H5Gclose, "H5Gcreate2(\"" + sofar + "\")");
          check(created.close(), "H5Gclose(\"" + sofar + "\")");
        }
      }
      Hid group = make(H5Gopen2(file.get(), sofar.c_str(), H5P_DEFAULT), H5Gclose, "H5Gopen2(\"" + sofar + "\")");
      return std::pair{std::move(group), sofar};
    };
    for (const ColumnGroup& g : groups) {
      auto [group, name] = open_group(g.path);
      string_attr(group.get(), name, "description", g.description);
      for (const SummaryColumn& c : g.columns) column(group.get(), name, c);
      check(group.close(), "H5Gclose(\"" + name + "\")");
    }
    for (const GridGroup& g : grids) {
      auto [group, name] = open_group(g.path);
      grid(group.get(), name, g);
      check(group.close(), "H5Gclose(\"" + name + "\")");
    }

    check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
    check(file.close(), "H5Fclose");
  }

  Hid make(hid_t id, Hid::Closer closer, const std::string& call) const {
    if (id < 0) throw_hdf5(ctx_, call);
    return Hid(id, closer);
  }
  void check(herr_t rc, const std::string& call) const {
    if (rc < 0) throw_hdf5(ctx_, call);
  }

  void attr(hid_t obj, const std::string& obj_name, const char* name, hid_t file_type, hid_t mem_type,
            const void* value) const {
    const std::string what = "(\"" + obj_name + "\", \"" + name + "\")";
    Hid a = make(H5Acreate2(obj, name, file_type, scalar_.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                 "H5Acreate2" + what);
    check(H5Awrite(a.get(), mem_type, value), "H5Awrite" + what);
    check(a.close(), "H5Aclose" + what);
  }

  void string_attr(hid_t obj, const std::string& obj_name, const char* name,
                   const std::string& value) const {
    const char* p = value.c_str();
    attr(obj, obj_name, name, str_type_.get(), str_type_.get(), &p);
  }

  void column(hid_t group, const std::string& group_name, const SummaryColumn& c) const {
    const std::string obj_name = group_name + "/" + c.name;
    const std::string what = "(\"" + obj_name + "\")";
    const hsize_t dims[1] = {column_size(c)};
    Hid space = make(H5Screate_simple(1, dims, nullptr), H5Sclose, "H5Screate_simple" + what);

    std::visit(
        [&](const auto& values) {
          using T = typename std::decay_t<decltype(values)>::value_type;
          hid_t file_type = H5I_INVALID_HID;
          hid_t mem_type = H5I_INVALID_HID;
          std::vector<const char*> ptrs;
          const void* buf = nullptr;
          if constexpr (std::is_same_v<T, double>) {
            file_type = H5T_IEEE_F64LE;
            mem_type = H5T_NATIVE_DOUBLE;
            buf = values.data();
          } else if constexpr (std::is_same_v<T, int64_t>) {
            file_type = H5T_STD_I64LE;
            mem_type = H5T_NATIVE_INT64;
            buf = values.data();
          } else {
            file_type = str_type_.get();
            mem_type = str_type_.get();
            ptrs.reserve(values.size());
            for (const std::string& s : values) ptrs.push_back(s.c_str());
            buf = ptrs.data();
          }
          Hid ds = make(H5Dcreate2(group, c.name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                   dcpl_.get(), H5P_DEFAULT),
                        H5Dclose, "H5Dcreate2" + what);
          if (!values.empty()) {
            check(H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), "H5Dwrite" + what);
          }
          string_attr(ds.get(), obj_name, "units", c.units);
          string_attr(ds.get(), obj_name, "description", c.description);
          check(ds.close(), "H5Dclose" + what);
        },
        c.values);
  }

  /// The axes (dimension scales) and the N-D datasets of `g` in the open group `group`.
  void grid(hid_t group, const std::string& group_name, const GridGroup& g) const {
    std::string names;
    for (const SummaryColumn& a : g.axes) names += (names.empty() ? "" : " ") + a.name;
    string_attr(group, group_name, "grid_axes", names);
    std::vector<Hid> axes;
    std::vector<hsize_t> dims;
    for (const SummaryColumn& a : g.axes) {
      column(group, group_name, a);
      const std::string what = "(\"" + group_name + "/" + a.name + "\")";
      axes.push_back(make(H5Dopen2(group, a.name.c_str(), H5P_DEFAULT), H5Dclose, "H5Dopen2" + what));
      check(H5DSset_scale(axes.back().get(), a.name.c_str()), "H5DSset_scale" + what);
      dims.push_back(column_size(a));
    }
    Hid space = make(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
                     "H5Screate_simple(\"" + group_name + "\")");
    for (const SummaryColumn& c : g.datasets) {
      const std::string obj_name = group_name + "/" + c.name;
      const std::string what = "(\"" + obj_name + "\")";
      const auto& values = std::get<std::vector<double>>(c.values);
      Hid ds = make(H5Dcreate2(group, c.name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, dcpl_.get(),
                               H5P_DEFAULT),
                    H5Dclose, "H5Dcreate2" + what);
      check(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "H5Dwrite" + what);
      string_attr(ds.get(), obj_name, "units", c.units);
      string_attr(ds.get(), obj_name, "description", c.description);
      for (size_t d = 0; d < axes.size(); ++d) {
        check(H5DSattach_scale(ds.get(), axes[d].get(), static_cast<unsigned>(d)), "H5DSattach_scale" + what);
      }
      check(ds.close(), "H5Dclose" + what);
    }
    for (Hid& a : axes) check(a.close(), "H5Dclose(\"" + group_name + "\" axis)");
  }

  std::string ctx_;
  Hid gcpl_, dcpl_, str_type_, scalar_;
};

}  // namespace

void write_results_file(const std::filesystem::path& path, const RunMetadata& meta,
                        const std::vector<SummaryColumn>& columns) {
  write_results_file(path, meta, columns, {}, {});
}

void write_results_file(const std::filesystem::path& path, const RunMetadata& meta,
                        const std::vector<SummaryColumn>& columns, const std::vector<ColumnGroup>& groups) {
  write_results_file(path, meta, columns, groups, {});
}

void write_results_file(const std::filesystem::path& path, const RunMetadata& meta,
                        const std::vector<SummaryColumn>& columns, const std::vector<ColumnGroup>& groups,
                        const std::vector<GridGroup>& grids) {
  validate(meta, columns, groups);
  validate_grids(groups, grids);

  const std::string ctx = "write_results_file(\"" + path.string() + "\")";
  replace_atomically(path, ctx, [&](const fs::path& tmp) {
    const hdf5::ErrorSilencer silence;
    Writer(ctx).write(tmp, meta, columns, groups, grids);
  });
}

}  // namespace clustersim::sim
