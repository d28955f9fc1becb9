#include "sim/serving/kv_transfer.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "sim/serving/fleet.hpp"

namespace clustersim::sim::serving_engine {

KvTransfers::KvTransfers(Fleet& fleet, const DecodePool& pool, int64_t prefill, int64_t decode)
    : fleet_(fleet), pool_(pool), prefill_(prefill), decode_(decode), incoming_(static_cast<size_t>(decode), 0) {
  const KvTransferNetwork& n = pool.network;
  for (int64_t r = 0; r < prefill + decode; ++r) {
    const bool p = r < prefill;
    const double nic = p ? n.prefill_nic_bytes_per_s : n.decode_nic_bytes_per_s;
    const double nvl = p ? n.prefill_nvlink_bytes_per_s : n.decode_nvlink_bytes_per_s;
    nic_send_.push_back(net_.add_link(units::BytesPerSecond(nic)));
    nic_recv_.push_back(net_.add_link(units::BytesPerSecond(nic)));
    if (!n.domain.empty()) {
      nvl_send_.push_back(net_.add_link(units::BytesPerSecond(nvl)));
      nvl_recv_.push_back(net_.add_link(units::BytesPerSecond(nvl)));
    }
  }
}

void KvTransfers::prefilled(Replica& from, Sequence& s, int64_t blocks) {
  const Held h{&from, &s, blocks, fleet_.now_s()};
  // First come, first served: behind a held transfer, a new one waits too.
  Replica* to = held_.empty() ? reserve(s) : nullptr;
  if (to == nullptr) {
    held_.push_back(h);
    ++fleet_.result().held_transfers;
    return;
  }
  start(h, *to);
}

void KvTransfers::retry() {
  while (!held_.empty()) {
    Replica* to = reserve(*held_.front().s);
    if (to == nullptr) return;
    const Held h = held_.front();
    held_.pop_front();
    start(h, *to);
  }
}

Replica* KvTransfers::reserve(Sequence& s) {
  // What the decode engine's admission will ask for (Replica::schedule): the prompt and its first token, or under
  // guaranteed_no_evict the whole output too.
  const int64_t tokens = pool_.policy.admission == models::CapacityPolicy::guaranteed_no_evict
                             ? s.prompt + s.output
                             : s.prompt + 1;
  const int64_t need = blocks_for(tokens, pool_.policy.block_size);
  Replica* best = nullptr;
  int64_t best_load = std::numeric_limits<int64_t>::max();
  for (int64_t slot = prefill_; slot < prefill_ + decode_; ++slot) {
    Replica& r = fleet_.replica(slot);
    if (r.state() != ReplicaState::serving || r.used_blocks() + need > r.total_blocks()) continue;
    const int64_t load = r.outstanding() + incoming(slot);
    if (load < best_load) {
      best = &r;
      best_load = load;
    }
  }
  if (best != nullptr) best->reserve(s, tokens);
  return best;
}

void KvTransfers::start(const Held& h, Replica& to) {
  const KvTransferNetwork& n = pool_.network;
  const int64_t from = h.from->id(), slot = to.id();
  const bool nvlink = !n.domain.empty() && n.domain[static_cast<size_t>(from)] == n.domain[static_cast<size_t>(slot)];
  ++incoming_[static_cast<size_t>(slot - prefill_)];
  flows_.push_back({h, &to, fleet_.now_s(), static_cast<double>(h.s->prompt) * n.kv_bytes_per_token});
  const double latency_s = nvlink ? n.nvlink_latency_s : n.infiniband_latency_s;
  Sequence* s = h.s;
  // After the path's latency the flow joins the network (its bytes then move at the fair rate).
  fleet_.simulator().schedule_in(Time::from_seconds(units::Seconds(latency_s)), [this, s, nvlink, from, slot] {
    advance();
    for (Flow& f : flows_) {
      if (f.h.s != s) continue;
      const std::array<models::LinkId, 2> path =
          nvlink ? std::array{nvl_send_[static_cast<size_t>(from)], nvl_recv_[static_cast<size_t>(slot)]}
                 : std::array{nic_send_[static_cast<size_t>(from)], nic_recv_[static_cast<size_t>(slot)]};
      f.id = net_.add_flow(path);
      f.on_network = true;
    }
    reschedule();
  });
}

void KvTransfers::advance() {
  const double now = fleet_.now_s();
  for (Flow& f : flows_) {
    if (f.on_network) f.bytes_left -= f.rate * (now - advanced_s_);
  }
  advanced_s_ = now;
}

void KvTransfers::reschedule() {
  net_.solve();
  double next_s = std::numeric_limits<double>::infinity();
  for (Flow& f : flows_) {
    if (!f.on_network) continue;
    f.rate = net_.rate(f.id).value();
    next_s = std::min(next_s, std::max(0.0, f.bytes_left) / f.rate);
  }
  const uint64_t g = ++generation_;
  if (next_s == std::numeric_limits<double>::infinity()) return;
  fleet_.simulator().schedule_in(Time::from_seconds(units::Seconds(next_s)), [this, g] {
    if (g == generation_) complete();
  });
}

void KvTransfers::complete() {
  advance();
  // Flows within one engine tick (1 ns) of their end land now, in start order.
  std::vector<Flow> landed;
  for (auto it = flows_.begin(); it != flows_.end();) {
    if (it->on_network && it->bytes_left <= it->rate * 1e-9) {
      net_.remove_flow(it->id);
      landed.push_back(*it);
      it = flows_.erase(it);
    } else {
      ++it;
    }
  }
  reschedule();
  for (Flow& f : landed) land(f);
}

void KvTransfers::land(Flow& f) {
  --incoming_[static_cast<size_t>(f.to->id() - prefill_)];
  fleet_.result().kv_transfer_s[static_cast<size_t>(f.h.s->index)] = fleet_.now_s() - f.started_s;
  f.h.from->release_blocks(f.h.blocks);
  fleet_.outcome(*f.h.s).replica = f.to->id();
  f.to->enqueue(f.h.s);
}

}  // namespace clustersim::sim::serving_engine
