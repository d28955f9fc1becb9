#include "sim/run/exit_status.hpp"

#include <iostream>
#include <stdexcept>

#include "models/hardware/catalog.hpp"
#include "sim/errors.hpp"
#include "sim/io/scenario.hpp"

namespace clustersim::sim {

ErrorExit exit_for(const std::exception_ptr& error, std::string_view command, std::string_view usage_hint) {
  const std::string cmd(command);
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    return {kExitUsage, "clustersim " + cmd + ": " + e.what() + std::string(usage_hint) + "\n"};
  } catch (const models::CatalogError& e) {
    return {kExitDataError, std::string("clustersim: catalog error: ") + e.what() + "\n"};
  } catch (const ScenarioError& e) {
    return {kExitDataError, std::string("clustersim: error: ") + e.what() + "\n"};
  } catch (const DataError& e) {
    return {kExitDataError, std::string("clustersim: error: ") + e.what() + "\n"};
  } catch (const std::invalid_argument& e) {  // the models reject well-formed values: bad data
    return {kExitDataError, std::string("clustersim: error: ") + e.what() + "\n"};
  } catch (const std::out_of_range& e) {  // e.g. a precision the device lacks
    return {kExitDataError, std::string("clustersim: error: ") + e.what() + "\n"};
  } catch (const IoError& e) {
    return {kExitIoError, std::string("clustersim: error: ") + e.what() + "\n"};
  } catch (const std::exception& e) {
    return {kExitSoftware, std::string("clustersim: internal error: ") + e.what() + "\n"};
  } catch (...) {
    return {kExitSoftware, "clustersim: internal error: an exception of unknown type\n"};
  }
}

void write_error(const std::string& message) { std::cerr << message; }

}  // namespace clustersim::sim
