// Disaggregated prefill and decode (issue 30; docs/serving.md, "Disaggregated prefill and decode"): the hand-off
// of a request from the prefill replica that computed its prompt to a decode replica, its KV cache moving between
// them as a flow on the fabric. Only the engine's own units include this header (fleet.hpp, kv_transfer.cpp).
//
// The hand-off, as NVIDIA Dynamo's disaggregated serving and vLLM's NIXL connector do it:
//   1. the prompt completes on a prefill replica (a prefill-only engine: prompt chunks, no decodes); the replica
//      keeps its KV blocks until the transfer lands;
//   2. the router picks the decode replica with the fewest requests outstanding (queued, running and incoming)
//      among those with free KV blocks for the prompt and its first output token, and reserves them there before
//      the transfer starts; with none, the request waits (first come, first served) until a decode replica frees
//      blocks (Dynamo's "decode-first" reservation; a held transfer blocks the prefill replica's cache);
//   3. the KV cache, prompt tokens x the model's KV bytes per token over the whole replica, moves as one flow:
//      after the path's latency, at its max-min fair rate (models::FairShareSolver, SimGrid's flow-level model)
//      over the sender's links and the receiver's, rates recomputed at every flow's start and end;
//   4. it lands: the prefill replica frees its blocks, the request joins the decode replica's queue with its
//      blocks held and its prompt computed, and its first decode iteration samples its first token.
// Links, per replica slot and direction: its InfiniBand NICs (its GPUs' share of the VM's ports x the port rate)
// or, when sender and receiver share an NVLink domain (KvTransferNetwork::domain), its GPUs' NVLink bandwidth.
// The fabric between the NICs is taken as non-blocking (Azure's ND H100 v5 / ND H200 v5 / ND GB200 v6 clusters
// are non-blocking fat trees: learn.microsoft.com "ND H100 v5 series", "Azure HPC InfiniBand", 2025); a transfer
// therefore contends at NICs only.
// Not modelled: layer-wise streaming (Splitwise's per-layer transfer overlapped with the prompt's compute); the
// transfer starts when the prompt completes.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "models/network/fair_share.hpp"
#include "sim/serving/replica.hpp"

namespace clustersim::sim::serving_engine {

class Fleet;

class KvTransfers {
 public:
  /// `prefill` replica slots 0..prefill-1, decode slots prefill..prefill+decode-1 of the fleet.
  KvTransfers(Fleet& fleet, const DecodePool& pool, int64_t prefill, int64_t decode);
  /// `s`'s prompt completed on `from` (a prefill replica), which still holds its `blocks` KV blocks (no longer
  /// counted on `s`): reserve a decode replica and move the cache, or hold it until one has free blocks.
  void prefilled(Replica& from, Sequence& s, int64_t blocks);
  /// A decode replica freed KV blocks: held transfers start, first come first served, while one fits.
  void retry();
  /// Requests between the prefill and the decode pool (held or in flight).
  [[nodiscard]] int64_t in_between() const { return static_cast<int64_t>(held_.size() + flows_.size()); }
  /// Requests incoming (in flight) to decode replica `slot`.
  [[nodiscard]] int64_t incoming(int64_t slot) const { return incoming_[static_cast<size_t>(slot - prefill_)]; }

 private:
  struct Held {
    Replica* from;
    Sequence* s;
    int64_t blocks;  ///< on `from`
    double since_s;  ///< when its prompt completed
  };
  struct Flow {
    Held h;
    Replica* to;
    double started_s;      ///< blocks reserved, latency starts
    double bytes_left;     ///< B
    double rate = 0.0;     ///< B/s, as of the last solve
    models::FlowId id = 0;
    bool on_network = false;  ///< past its latency
  };
  /// The decode replica for `s` (fewest outstanding + incoming, free blocks for its prompt and one token, lowest
  /// slot among equals), its blocks reserved; nullptr when none has room.
  Replica* reserve(Sequence& s);
  void start(const Held& h, Replica& to);
  /// Moves every flow on the network forward to now at its rate.
  void advance();
  /// Solves the rates and schedules the next completion.
  void reschedule();
  void complete();
  void land(Flow& f);

  Fleet& fleet_;
  const DecodePool& pool_;
  int64_t prefill_, decode_;
  std::deque<Held> held_;
  std::vector<Flow> flows_;  ///< in flight, in start order
  models::FairShareSolver net_;
  std::vector<models::LinkId> nic_send_, nic_recv_, nvl_send_, nvl_recv_;  ///< per replica slot
  std::vector<int64_t> incoming_;  ///< per decode replica
  double advanced_s_ = 0.0;        ///< the flows' bytes_left are as of this time
  uint64_t generation_ = 0;        ///< of the pending completion event (a later reschedule supersedes it)
};

}  // namespace clustersim::sim::serving_engine
