// The framework profiles (framework_profiles.hpp): what each framework's published recipes set.
#include "sim/io/framework_profiles.hpp"

#include <array>
#include <sstream>

namespace clustersim::sim::detail {
namespace {

// Must match models::parse_framework (tests/scenario checks it).
constexpr std::array<std::string_view, 7> kFrameworks{"megatron-core", "nemo",  "megatron-lm-2022", "megatron-lm-2021",
                                                     "fsdp",          "fsdp2", "deepspeed"};

constexpr std::array kDefaults{
    // Megatron-LM with Megatron-Core and Transformer Engine, as its GPT/Llama example scripts run it
    // (NVIDIA/Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh, examples/llama; core_r0.x).
    FrameworkDefault{"megatron-core", "parallelism.zero_stage", "1",
                     "--use-distributed-optimizer (the example scripts; shards optimizer states, ZeRO-1)"},
    FrameworkDefault{"megatron-core", "parallelism.overlap_grad_reduce", "true", "--overlap-grad-reduce"},
    FrameworkDefault{"megatron-core", "parallelism.overlap_param_gather", "true", "--overlap-param-gather"},
    FrameworkDefault{"megatron-core", "training.flash_attention", "true",
                     "Transformer Engine DotProductAttention (cuDNN / FlashAttention backends)"},
    FrameworkDefault{"megatron-core", "training.attention_kernel", "\"cudnn\"",
                     "TE DotProductAttention picks cuDNN fused attention (FusedAttention) on Hopper"},
    FrameworkDefault{"megatron-core", "training.kernel_fusion", "\"fused\"",
                     "TE LayerNormLinear, fused bias-GeLU/SwiGLU, bias-dropout-add and RoPE kernels"},
    FrameworkDefault{"megatron-core", "training.gradient_accumulation_fusion", "true",
                     "--gradient-accumulation-fusion (default on)"},
    FrameworkDefault{"megatron-core", "parallelism.async_tensor_parallel_allreduce", "true",
                     "TE linear layers overlap the input-gradient collective with the wgrad GEMM"},
    FrameworkDefault{"megatron-core", "parallelism.overlap_p2p_comm", "true",
                     "--overlap-p2p-communication defaults on; Megatron applies it to interleaved schedules only"},
    // NeMo 2 / Megatron-Bridge performance recipes: Megatron-Core plus the communication overlaps they switch on.
    FrameworkDefault{"nemo", "parallelism.zero_stage", "1", "MegatronOptimizer use_distributed_optimizer=True"},
    FrameworkDefault{"nemo", "parallelism.overlap_grad_reduce", "true", "DistributedDataParallelConfig"},
    FrameworkDefault{"nemo", "parallelism.overlap_param_gather", "true", "DistributedDataParallelConfig"},
    FrameworkDefault{"nemo", "parallelism.overlap_p2p_comm", "true",
                     "MegatronCommOverlapCallback: overlap_p2p_comm with interleaving (batched p2p without)"},
    FrameworkDefault{"nemo", "parallelism.tp_comm_overlap", "true",
                     "performance recipes: MegatronCommOverlapCallback(tp_comm_overlap=True), userbuffers"},
    FrameworkDefault{"nemo", "training.flash_attention", "true", "TE fused attention"},
    FrameworkDefault{"nemo", "training.attention_kernel", "\"cudnn\"", "TE cuDNN fused attention on Hopper"},
    FrameworkDefault{"nemo", "training.kernel_fusion", "\"fused\"", "Transformer Engine"},
    FrameworkDefault{"nemo", "training.gradient_accumulation_fusion", "true", "gradient_accumulation_fusion=True"},
    FrameworkDefault{"nemo", "parallelism.async_tensor_parallel_allreduce", "true", "Transformer Engine"},
    // Megatron-LM as Korthikanti et al. 2022 ran it (2022 code: gradient-accumulation fusion, async TP all-reduce).
    FrameworkDefault{"megatron-lm-2022", "parallelism.zero_stage", "0", "local DDP, no distributed optimizer"},
    FrameworkDefault{"megatron-lm-2022", "training.flash_attention", "false", "fused scale-mask-softmax"},
    FrameworkDefault{"megatron-lm-2022", "training.gradient_accumulation_fusion", "true",
                     "--gradient-accumulation-fusion (2022)"},
    FrameworkDefault{"megatron-lm-2022", "parallelism.async_tensor_parallel_allreduce", "true",
                     "--async-tensor-model-parallel-allreduce (2022)"},
    // Megatron-LM as SC'21 ran it (examples/sc21, container pytorch:20.12-py3).
    FrameworkDefault{"megatron-lm-2021", "parallelism.zero_stage", "0", "no distributed optimizer in 2021"},
    FrameworkDefault{"megatron-lm-2021", "training.flash_attention", "false", "fused scale-mask-softmax"},
    FrameworkDefault{"megatron-lm-2021", "training.gradient_accumulation_fusion", "false",
                     "arrived in Megatron-LM in 2022"},
    FrameworkDefault{"megatron-lm-2021", "parallelism.async_tensor_parallel_allreduce", "false",
                     "arrived in Megatron-LM in 2022"},
    // PyTorch FSDP1 (FullyShardedDataParallel, FULL_SHARD, transformer-block wrapping) on a PyTorch model.
    FrameworkDefault{"fsdp", "parallelism.zero_stage", "3", "ShardingStrategy.FULL_SHARD (the default)"},
    FrameworkDefault{"fsdp", "training.flash_attention", "true",
                     "torch.nn.functional.scaled_dot_product_attention (FlashAttention-2 backend)"},
    FrameworkDefault{"fsdp", "training.kernel_fusion", "\"eager\"", "PyTorch eager modules"},
    FrameworkDefault{"fsdp", "training.grad_reduce_dtype", "\"bf16\"",
                     "MixedPrecision(param_dtype=bfloat16) reduces in param_dtype when reduce_dtype is unset"},
    // PyTorch FSDP2 (fully_shard) as torchtitan applies it.
    FrameworkDefault{"fsdp2", "parallelism.zero_stage", "3", "fully_shard per transformer block and the root"},
    FrameworkDefault{"fsdp2", "training.flash_attention", "true",
                     "scaled_dot_product_attention (FlashAttention-2 backend)"},
    FrameworkDefault{"fsdp2", "training.kernel_fusion", "\"eager\"", "torchtitan without --compile"},
    FrameworkDefault{"fsdp2", "parallelism.cp_comm_type", "\"all_gather\"",
                     "torchtitan context_parallel_rotate_method = \"allgather\" (its default)"},
    // DeepSpeed ZeRO on a Hugging Face / PyTorch model.
    FrameworkDefault{"deepspeed", "parallelism.zero_stage", "3", "the ZeRO-3 recipes for large models"},
    FrameworkDefault{"deepspeed", "training.flash_attention", "true", "scaled_dot_product_attention"},
    FrameworkDefault{"deepspeed", "training.kernel_fusion", "\"eager\"", "PyTorch eager modules"},
    FrameworkDefault{"deepspeed", "parallelism.overlap_param_gather", "false",
                     "the updated partitions are all-gathered synchronously after step()"},
};

}  // namespace

std::span<const std::string_view> framework_names() { return kFrameworks; }
std::span<const FrameworkDefault> framework_defaults() { return kDefaults; }

const FrameworkDefault* find_framework_default(std::string_view framework, std::string_view key) {
  for (const FrameworkDefault& d : kDefaults) {
    if (d.framework == framework && d.key == key) return &d;
  }
  return nullptr;
}

std::string framework_profiles_markdown() {
  std::ostringstream md;
  md << "| Framework | Key | Default | Why |\n";
  md << "|---|---|---|---|\n";
  for (std::string_view f : kFrameworks) {
    for (const FrameworkDefault& d : kDefaults) {
      if (d.framework != f) continue;
      md << "| `" << d.framework << "` | `" << d.key << "` | `" << d.value << "` | " << d.source << " |\n";
    }
  }
  return md.str();
}

}  // namespace clustersim::sim::detail
