// What a serving run adds for split prefill and decode pools (issue 30; docs/serving.md, "Disaggregated prefill
// and decode"): the decode pool and the KV transfer's network from the scenario and the catalog, the prefill pool's
// share of the bill, and the transfer and pool statistics in /summary, /requests and the report. Nothing here runs
// for a co-located fleet (ServingFleetConfig::disaggregated() false): its outputs stay as they were.
#pragma once

#include <string>
#include <vector>

#include "models/hardware/catalog.hpp"
#include "sim/io/scenario.hpp"
#include "sim/output/results_file.hpp"
#include "sim/serving/serving_simulation.hpp"
#include "sim/serving/serving_summary.hpp"

namespace clustersim::sim {

/// The statistics of split pools.
struct SplitPoolsSummary {
  double transfer_mean_s = 0, transfer_p50_s = 0, transfer_p99_s = 0;  ///< over completed requests, s
  double transfer_ttft_share = 0;  ///< mean over completed requests of transfer / TTFT
  double prefill_utilization = 0;  ///< the prefill pool's replica-seconds in iterations / (replicas x makespan)
  double decode_utilization = 0;
  int64_t held_transfers = 0;      ///< transfers that waited for a decode replica's free KV blocks
  int64_t prefill_vms = 0;
  int64_t prefill_kv_cache_tokens = 0;  ///< per prefill replica
};

/// The network a KV cache crosses between the pools: each replica's share of its VM's InfiniBand ports (GPUs /
/// GPUs per VM x ports x port rate, catalog), its GPUs' NVLink (device fabric_bandwidth_per_direction) inside one
/// NVLink domain (ND GB200 v6: 18 VMs; the prefill pool's VMs first, then the decode pool's, packed in order, a
/// domain shared only by VMs of one size), and the latencies of the link classes of models/network/topology.hpp:
/// InfiniBand = 2 x kPcieHopLatency (NIC and PCIe at each end) + 2 x kInfinibandHopLatency (to and from the leaf
/// switch); NVLink = 2 x kNvlinkHopLatency. `kv_bytes_per_token`: the prefill replica's, all its GPUs.
KvTransferNetwork kv_transfer_network(const ServingFleetConfig& f, const models::VmSize& prefill_vm,
                                      const models::VmSize& decode_vm, const models::DeviceSpec& prefill_device,
                                      const models::DeviceSpec& decode_device, double kv_bytes_per_token);

/// Turns `setup` (the decode pool's, as run_serving_scenario builds it from serving.*) into split pools: its
/// model, policy, KV cache and replicas move to setup.decode_pool, with the KV transfer's network, and the setup
/// gets the prefill pool's (serving.prefill_*: VM size, tensor, engine limits; the engine, its host work
/// `overhead`, the precision and the memory fraction shared). Returns a prefill replica's KV-cache tokens.
int64_t configure_split_pools(ServingSetup& setup, const ServingScenario& sc, const models::Catalog& catalog,
                              const models::EngineOverhead& overhead);

/// Split pools' statistics of `result` (kv_transfer_s, decode_busy_s); `summary` gets the prefill pool's GPUs,
/// VM-hours and cost (whole VMs for the makespan at `prefill_price_usd_per_vm_hour`, NaN without one) added, its
/// utilization over both pools and its cost per million tokens recomputed.
SplitPoolsSummary summarize_split_pools(const ServingResult& result, const ServingFleetConfig& f,
                                        const models::VmSize& prefill_vm, ServingSummary& summary);

/// The /summary columns of split pools (after the co-located ones).
std::vector<SummaryColumn> split_pools_columns(const ServingFleetConfig& f, const SplitPoolsSummary& s);
/// The report's lines of split pools.
std::string split_pools_lines(const ServingFleetConfig& f, const SplitPoolsSummary& s);

}  // namespace clustersim::sim
