#include "sim/sweep/summary_file.hpp"

#include <stdexcept>

#include "sim/output/hdf5_util.hpp"

namespace clustersim::sim {

namespace {

using hdf5::Hid;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": cannot read " + what);
}

Hid open_file(const std::filesystem::path& path) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) fail(path, "the HDF5 file");
  return Hid(f, H5Fclose);
}

Hid vlen_string_type() {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

std::string string_attribute(const std::filesystem::path& path, hid_t obj, const char* name) {
  Hid a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) fail(path, std::string("attribute ") + name);
  const Hid t = vlen_string_type();
  char* value = nullptr;
  if (H5Aread(a.get(), t.get(), &value) < 0) fail(path, std::string("attribute ") + name);
  std::string s = value == nullptr ? std::string() : std::string(value);
  H5free_memory(value);
  return s;
}

template <typename T>
T scalar_attribute(const std::filesystem::path& path, hid_t obj, const char* name, hid_t mem_type) {
  Hid a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  T v{};
  if (!a.valid() || H5Aread(a.get(), mem_type, &v) < 0) fail(path, std::string("attribute ") + name);
  return v;
}

SummaryColumn read_column(const std::filesystem::path& path, hid_t g, const std::string& group,
                          const std::string& name) {
  const std::string what = "dataset /" + group + "/" + name;
  Hid ds(H5Dopen2(g, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(path, what);
  Hid type(H5Dget_type(ds.get()), H5Tclose);
  Hid space(H5Dget_space(ds.get()), H5Sclose);
  hsize_t n = 0;
  if (H5Sget_simple_extent_ndims(space.get()) != 1 || H5Sget_simple_extent_dims(space.get(), &n, nullptr) < 0) {
    fail(path, what + " (not 1-D)");
  }
  SummaryColumn c;
  c.name = name;
  c.units = string_attribute(path, ds.get(), "units");
  c.description = string_attribute(path, ds.get(), "description");
  switch (H5Tget_class(type.get())) {
    case H5T_FLOAT: {
      std::vector<double> v(n);
      if (n > 0 && H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0) {
        fail(path, what);
      }
      c.values = std::move(v);
      break;
    }
    case H5T_INTEGER: {
      std::vector<int64_t> v(n);
      if (n > 0 && H5Dread(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0) {
        fail(path, what);
      }
      c.values = std::move(v);
      break;
    }
    case H5T_STRING: {
      const Hid t = vlen_string_type();
      std::vector<char*> ptrs(n, nullptr);
      if (n > 0 && H5Dread(ds.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) fail(path, what);
      std::vector<std::string> v;
      v.reserve(n);
      for (char* p : ptrs) {
        v.emplace_back(p == nullptr ? "" : p);
        H5free_memory(p);
      }
      c.values = std::move(v);
      break;
    }
    default: fail(path, what + " (unsupported type)");
  }
  return c;
}

}  // namespace

RunMetadata read_results_metadata(const std::filesystem::path& path) {
  const hdf5::ErrorSilencer quiet;
  const Hid f = open_file(path);
  RunMetadata m;
  m.software_version = string_attribute(path, f.get(), "software_version");
  m.git_sha = string_attribute(path, f.get(), "git_sha");
  m.schema_version = scalar_attribute<int64_t>(path, f.get(), "schema_version", H5T_NATIVE_INT64);
  m.command_line = string_attribute(path, f.get(), "command_line");
  m.seed = scalar_attribute<uint64_t>(path, f.get(), "seed", H5T_NATIVE_UINT64);
  m.scenario_toml = string_attribute(path, f.get(), "scenario_toml");
  return m;
}

std::vector<SummaryColumn> read_results_columns(const std::filesystem::path& path, const std::string& group) {
  const hdf5::ErrorSilencer quiet;
  const Hid f = open_file(path);
  Hid g(H5Gopen2(f.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail(path, "group /" + group);
  H5G_info_t info{};
  if (H5Gget_info(g.get(), &info) < 0) fail(path, "group /" + group);
  std::vector<SummaryColumn> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail(path, "group /" + group);
    std::string name(static_cast<size_t>(len), '\0');
    H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT);
    out.push_back(read_column(path, g.get(), group, name));
  }
  return out;
}

std::vector<SummaryColumn> read_grid_axes(const std::filesystem::path& path, const std::string& group) {
  const hdf5::ErrorSilencer quiet;
  const Hid f = open_file(path);
  if (H5Lexists(f.get(), group.c_str(), H5P_DEFAULT) <= 0) return {};
  Hid g(H5Gopen2(f.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) return {};
  if (H5Aexists(g.get(), "grid_axes") <= 0) return {};
  const std::string names = string_attribute(path, g.get(), "grid_axes");
  std::vector<SummaryColumn> axes;
  size_t start = 0;
  while (start < names.size()) {
    size_t end = names.find(' ', start);
    if (end == std::string::npos) end = names.size();
    axes.push_back(read_column(path, g.get(), group, names.substr(start, end - start)));
    start = end + 1;
  }
  return axes;
}

}  // namespace clustersim::sim
