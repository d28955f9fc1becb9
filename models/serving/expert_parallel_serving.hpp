// Expert parallelism for MoE serving (issue 30): a replica of `ranks` GPUs (possibly over several VMs) whose
// MoE layers hold num_experts (+ redundant) / ranks whole experts per GPU, instead of every expert split over the
// tensor-parallel GPUs (InferenceModel's default, vLLM's and TensorRT-LLM's without --enable-expert-parallel).
// Two layouts:
//   EP with tensor-parallel attention (vLLM --tensor-parallel-size N --enable-expert-parallel): tensor = ranks;
//     every rank holds the whole batch after attention's all-reduce, runs the copies routed to its experts, and
//     the MLP's all-reduce combines them (the communication of the tensor-parallel layer, unchanged);
//   EP with data-parallel attention (SGLang --enable-dp-attention --tp N --dp N --enable-deepep-moe; vLLM
//     --data-parallel-size N --enable-expert-parallel): tensor = 1, each rank runs attention, the dense layers
//     (SGLang --moe-dense-tp-size 1), the shared expert and the LM head on its own share of the engine's batch
//     (the batch split evenly over the ranks, the busiest rank ceil(x / ranks) of each count), holds its own
//     sequences' KV cache, and each MoE layer's dispatch and combine are DeepEP all-to-alls (models/serving/
//     deepep.hpp: normal kernels when the batch has prompt tokens, low-latency kernels for decode-only batches),
//     not overlapped with compute (SGLang's two-batch overlap is not modelled: an upper bound on the time).
// Load balance: routing is taken as uniform (every expert receives topk x tokens / experts copies), which is
// what EPLB's redundant experts (DeepSeek's expert-parallel load balancer; SGLang --ep-num-redundant-experts)
// approach by replicating hot experts; real routing is skewed per batch (DeepSeek-V3's MaxVio, Wang et al.
// 2024), so small decode batches and prompts of one domain are the weak spot: the busiest rank waits longer
// than this model says.
#pragma once

#include <cstdint>
#include <optional>

#include "models/compute/compute_model.hpp"
#include "models/serving/deepep.hpp"
#include "models/units.hpp"
#include "models/workload/model_config.hpp"

namespace clustersim::models {

struct IterationBatch;

/// A replica's expert-parallel layout. ranks = 1: none (experts tensor-parallel).
struct ExpertParallelServing {
  int64_t ranks = 1;
  bool data_parallel_attention = false;
  int64_t redundant_experts = 0;  ///< EPLB's replicas of hot experts, spread over the ranks
  /// The group's links for DeepEP's dispatch and combine (data-parallel attention); absent: free (a memory check).
  std::optional<DeepEpLinks> links;
  [[nodiscard]] bool enabled() const { return ranks > 1; }
};

/// Expert slots per GPU: (num_experts + redundant) / ranks.
int64_t local_experts(const ModelConfig& m, const ExpertParallelServing& ep);

/// The busiest data-parallel attention rank's share of an iteration's batch: ceil(count / ranks) of each
/// count (prefill tokens, decodes, cached keys, sampled sequences) and pairs / ranks; at least one token.
IterationBatch dp_rank_share(const IterationBatch& batch, int64_t ranks);

/// One MoE layer's weight elements on one GPU: the local experts' whole MLPs (gated: 3 h f_e each) and the
/// shared expert split `tensor` ways (tensor = ranks with tensor-parallel attention, 1 with data-parallel).
double ep_moe_weight_elements(const ModelConfig& m, const ExpertParallelServing& ep, int64_t tensor);

/// One MoE layer's time on the busiest GPU, s.
struct EpMoeLayerTime {
  units::Seconds gemm{0.0};
  units::Seconds memory_bound{0.0};
  units::Seconds communication{0.0};  ///< DeepEP dispatch + combine (data-parallel attention only)
};
/// The layer on one GPU that holds `local_tokens` tokens (its router and shared expert's input) while the
/// replica routes `routed_tokens` tokens: the GPU receives topk x routed / ranks copies spread evenly over its
/// local experts that receive any (moe_experts_touched's expectation, scaled to the local slots), run as one
/// grouped GEMM; the router [T_l, E, h] at 16 bits; the shared expert [T_l, f_s / tensor]; the permutation and
/// activation memory-bound as InferenceModel's tensor-parallel layer; with data-parallel attention,
/// deepep_dispatch_combine_time of the local tokens (normal kernels when `prefill`, else low-latency).
EpMoeLayerTime ep_moe_layer_time(const ModelConfig& m, const ExpertParallelServing& ep, int64_t tensor,
                                 const ComputeModel& compute, Precision math, Precision activations,
                                 double weight_bytes, int64_t local_tokens, int64_t routed_tokens, bool prefill);

}  // namespace clustersim::models
