"""The hardware and model catalog: every number the simulators use, each with its source.

One place, frozen dataclasses, SI units in the field names (`_gb` = 1e9 bytes, `_gb_per_s` =
1e9 bytes/s, `_gbit_per_s` = 1e9 bits/s, `_tflops` = 1e12 FLOP/s). Prices are the lecture's
("not accurate, only a demonstration", as the slides say). Where a lecture figure depends on an
unstated assumption, the assumption is one named constant in `ASSUMPTIONS`, used for every figure.

Look-ups by name raise `UnknownHardware` / `UnknownModel` listing the known names.
"""

from __future__ import annotations

from dataclasses import dataclass


class UnknownHardware(KeyError):
    """A hardware name that is not in the catalog."""


class UnknownModel(KeyError):
    """A model name that is not in the catalog."""


@dataclass(frozen=True)
class Accelerator:
    """A GPU (or a CPU server priced as one box). Dense peak, no sparsity."""

    name: str
    peak_tflops: float  # dense BF16 tensor-core peak, 1e12 FLOP/s
    mem_bandwidth_gb_per_s: float  # HBM / DRAM bandwidth, 1e9 B/s
    mem_capacity_gb: float  # 1e9 B
    price_usd: float | None  # lecture's illustrative price; None where the lecture gives none
    source: str


@dataclass(frozen=True)
class CpuSocket:
    """One CPU socket of a multi-socket server."""

    name: str
    cores: int
    base_ghz: float
    mem_channels: int
    mem_mt_per_s: float  # DDR transfers per second per channel, 1e6 T/s (DDR5-4800 -> 4800)
    avx512_int8_ops_per_cycle_per_core: int  # VNNI: 2 ports x 64 MAC x 2 ops
    amx_tile_m: int  # AMX TMUL INT8 tile product: (m x k) . (k x n)
    amx_tile_k: int
    amx_tile_n: int
    amx_cycles_per_instruction: int
    amx_bf16_measured_tflops: float  # per socket, KTransformers' kernel (lecture §4.5: "> 20 TFLOPS")
    amx_int8_measured_tops: float  # per socket (lecture §4.5: "> 37 TOPS")
    source: str

    @property
    def mem_bandwidth_gb_per_s(self) -> float:
        """Peak DRAM bandwidth of the socket: channels x MT/s x 8 bytes."""
        return self.mem_channels * self.mem_mt_per_s * 1e6 * 8 / 1e9


@dataclass(frozen=True)
class Nic:
    name: str
    line_rate_gbit_per_s: float  # 1e9 bit/s
    source: str


@dataclass(frozen=True)
class Ssd:
    name: str
    capacity_tb: float  # 1e12 B, per drive
    drives_per_node: int
    source: str


@dataclass(frozen=True)
class DenseModel:
    """A decoder-only transformer with grouped-query attention."""

    name: str
    num_params: int
    num_layers: int
    hidden: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    bytes_per_param: float  # 2 for BF16 weights
    kv_bytes_per_elem: float  # 2 for a BF16 KV cache
    source: str

    @property
    def attn_dim(self) -> int:
        """Query width per layer (num_heads x head_dim): the d in the attention FLOP count."""
        return self.num_heads * self.head_dim

    @property
    def weight_bytes(self) -> float:
        return self.num_params * self.bytes_per_param


@dataclass(frozen=True)
class MoEModel:
    """A mixture-of-experts transformer (routed experts with SwiGLU: 3 matrices of hidden x expert_dim)."""

    name: str
    num_params: int  # total, main model (no multi-token-prediction module)
    num_layers: int
    num_moe_layers: int
    hidden: int
    num_routed_experts: int
    num_active_experts: int  # routed experts per token
    num_shared_experts: int
    expert_dim: int  # moe_intermediate_size
    matrices_per_expert: int  # 3 for SwiGLU (gate, up, down)
    kv_elems_per_token_per_layer: int  # MLA: kv_lora_rank + qk_rope_head_dim
    source: str

    @property
    def params_per_expert(self) -> int:
        return self.matrices_per_expert * self.hidden * self.expert_dim


GPUS: dict[str, Accelerator] = {
    g.name: g
    for g in (
        Accelerator(
            "A100-80GB",
            312.0,
            2000.0,
            80.0,
            15_000.0,
            "NVIDIA A100 datasheet (312 TFLOPS BF16 dense, 80 GB); lecture §7 Q1 (2 TB/s, $15,000)",
        ),
        Accelerator(
            "H800",
            989.0,
            3350.0,
            80.0,
            None,
            "NVIDIA H100/H800 SXM datasheet: 989 TFLOPS BF16 dense, 3.35 TB/s, 80 GB; lecture §1.2",
        ),
        Accelerator(
            "H20",
            148.0,
            4000.0,
            96.0,
            None,
            "NVIDIA H20 product brief: 148 TFLOPS BF16 dense, 4.0 TB/s, 96 GB; lecture §1.2",
        ),
        Accelerator(
            "RTX4090",
            165.2,
            1008.0,
            24.0,
            None,
            "NVIDIA Ada (AD102) whitepaper: RTX 4090 165.2 TFLOPS FP16/BF16 dense, 1008 GB/s, 24 GB",
        ),
        Accelerator(
            "CPU-server",
            20.0,
            320.0,
            512.0,
            8_000.0,
            "lecture §1.2/§7 Q1: 512 GB, 320 GB/s, $8,000; 20 TFLOPS = 2.5 TFLOPS per $1000 x 8",
        ),
    )
}

CPU_SOCKETS: dict[str, CpuSocket] = {
    c.name: c
    for c in (
        CpuSocket(
            "Xeon-8480+",
            56,
            2.0,
            8,
            4800.0,
            256,
            16,
            64,
            16,
            16,
            20.0,
            37.0,
            "Intel Xeon Platinum 8480+ (Sapphire Rapids, AMX) ark page: 56 cores, 2.0 GHz, 8 x DDR5-4800; "
            "AMX/AVX-512 ops and measured kernel throughput from lecture §4.5",
        ),
    )
}

NICS: dict[str, Nic] = {
    n.name: n
    for n in (
        Nic("RoCE-200G", 200.0, "ConnectX-6/7 200 Gb/s RoCE; lecture §2.4"),
        Nic("RoCE-400G", 400.0, "ConnectX-7 400 Gb/s; lecture §2.4"),
    )
}

SSDS: dict[str, Ssd] = {
    s.name: s
    for s in (
        Ssd(
            "NVMe-7.68TB",
            7.68,
            8,
            "a common 8 x 7.68 TB NVMe storage node (assumption; lecture §1.2 says only 'hundreds of millions of tokens')",
        ),
    )
}


@dataclass(frozen=True)
class Server:
    """One serving node: its GPUs, host DRAM and local SSDs (the §1.2 KV-capacity comparison)."""

    name: str
    gpu: str  # key into GPUS
    num_gpus: int
    dram_gb: float  # host DRAM, 1e9 B
    ssd: str  # key into SSDS
    source: str


SERVERS: dict[str, Server] = {
    s.name: s
    for s in (
        Server(
            "8xH800",
            "H800",
            8,
            2000.0,
            "NVMe-7.68TB",
            "lecture §1.2: an 8 x H800 server with 2 TB of DRAM; its SSDs are the NVMe node above (assumption)",
        ),
    )
}

MODELS: dict[str, DenseModel | MoEModel] = {
    m.name: m
    for m in (
        DenseModel(
            "LLaMA-3.1-70B",
            70_553_706_496,
            80,
            8192,
            64,
            8,
            128,
            2.0,
            2.0,
            "Meta Llama 3.1 70B config.json (80 layers, 64 heads, 8 KV heads, head_dim 128); "
            "parameter count from the released safetensors",
        ),
        DenseModel(
            "LLaMA-3-70B",
            70_553_706_496,
            80,
            8192,
            64,
            8,
            128,
            2.0,
            2.0,
            "Meta Llama 3 70B config.json (same architecture as 3.1)",
        ),
        MoEModel(
            "DeepSeek-V3",
            671_000_000_000,
            61,
            58,
            7168,
            256,
            8,
            1,
            2048,
            3,
            576,
            "DeepSeek-V3 technical report and config.json: 671B total, 61 layers (first 3 dense), "
            "256 routed experts, 8 active + 1 shared, hidden 7168, moe_intermediate 2048, "
            "MLA kv_lora_rank 512 + rope dim 64",
        ),
    )
}

# One constant per unstated assumption, used by every figure (lecture §1.2, §2.4, §4).
ASSUMPTIONS: dict[str, float] = {
    "compute_efficiency": 0.6,  # fraction of dense peak FLOP/s a GEMM-heavy phase achieves (MFU)
    "memory_efficiency": 0.8,  # fraction of peak bandwidth a weight/KV stream achieves
    "decode_context_tokens": 4096,  # context length of each sequence in the §1.2 decode step
    "hbm_headroom_frac": 0.10,  # HBM kept free for activations (lecture §7 Q2)
    # Average input length of Kimi requests as the lecture gives it (§1.2, §2.2). Neither paper says 8,590:
    # the Mooncake technical report (v3) says 7,590 tokens, FAST'25 Table 2 8,596 for the Tool&Agent trace
    # (docs/figures_transfer.md).
    "kimi_mean_input_tokens": 8590,
}


def _lookup(table: dict, name: str, error: type[KeyError], what: str):
    try:
        return table[name]
    except KeyError:
        raise error(f"unknown {what} {name!r}; known: {', '.join(sorted(table))}") from None


def gpu(name: str) -> Accelerator:
    return _lookup(GPUS, name, UnknownHardware, "accelerator")


def cpu_socket(name: str) -> CpuSocket:
    return _lookup(CPU_SOCKETS, name, UnknownHardware, "CPU socket")


def nic(name: str) -> Nic:
    return _lookup(NICS, name, UnknownHardware, "NIC")


def server(name: str) -> Server:
    return _lookup(SERVERS, name, UnknownHardware, "server")


def ssd(name: str) -> Ssd:
    return _lookup(SSDS, name, UnknownHardware, "SSD")


def model(name: str) -> DenseModel | MoEModel:
    return _lookup(MODELS, name, UnknownModel, "model")


def dense_model(name: str, what: str = "this figure") -> DenseModel:
    """The dense model `name`; ValueError for a mixture of experts (`what` needs a dense KV layout and weights)."""
    m = model(name)
    if not isinstance(m, DenseModel):
        raise ValueError(f"model {name!r} is a mixture of experts; {what} covers dense models only")
    return m
