// Subcommands of the `tq` tool.
#pragma once

#include <cstdint>

namespace tq::cli {

// `tq demo`: a KV cache of the spec's RWKV-X size from synthetic activations:
// bytes, attention fidelity and decode speed for K4/V2, K4/V3, K4/V4, K3/V2
// against FP32; norm vs least-squares scale; then every compiled variant's codec.
int demo(int argc, char** argv);

// `tq list`: every compiled kernel and the ISA picked on this CPU.
int list(int argc, char** argv);
// `tq codebook`: the Lloyd-Max codebook of a (head dim, bits).
int codebook(int argc, char** argv);
// `tq show`: a generated kernel's source.
int show(int argc, char** argv);
// `tq bench`: ns per call of every variant and ISA, with the baselines.
int bench(int argc, char** argv);
// `tq eval`: fidelity on the user's own activations (.npy).
int eval(int argc, char** argv);

// The per-variant codec table: bytes, round-trip MSE vs theory, ns per call.
void print_variant_table(int vectors, std::uint64_t seed);

}  // namespace tq::cli
