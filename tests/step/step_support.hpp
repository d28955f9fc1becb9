// Helpers shared by the tests of tests/step: the shipped catalog and a network whose every collective takes a
// fixed time per byte, so that a step program's arithmetic can be checked by hand.
#pragma once

#include "models/hardware/catalog.hpp"
#include "models/network/collective_model.hpp"
#include "models/network/communication_model.hpp"

namespace clustersim::models::test {

/// The catalog under models/hardware/catalog, loaded once.
inline const Catalog& catalog() {
  static const Catalog c = Catalog::load(Catalog::default_directory());
  return c;
}

/// Every collective takes `seconds_per_byte` x bytes, whatever its pattern and algorithm.
class LinearNetwork final : public CommunicationModel {
 public:
  explicit LinearNetwork(double seconds_per_byte) : k_(seconds_per_byte) {}
  CollectiveTiming collective_time(CollectiveOp, const CommPattern&, units::Bytes bytes) const override {
    CollectiveTiming t;
    t.time = units::Seconds(k_ * bytes.value());
    t.bandwidth_time = t.time;
    return t;
  }

 private:
  double k_;
};

}  // namespace clustersim::models::test
